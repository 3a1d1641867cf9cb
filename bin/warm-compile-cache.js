#!/usr/bin/env node
// Fills Node.js's on-disk compile cache (the directory in NODE_COMPILE_CACHE) with every module
// that `agentcard operator` and `agentcard sidecar` run, so that at run time Node neither strips
// the TypeScript nor compiles the modules again, and does not load its TypeScript stripper at all
// (about 15 MiB of resident memory per process). Run once when the image is built, by the same
// Node.js binary and as the same user as the containers (Node keys the cache by both); the
// directory is only read afterwards, so a read-only root file system is fine.
import { flushCompileCache, getCompileCacheDir } from 'node:module';

if (!process.env.NODE_COMPILE_CACHE || !getCompileCacheDir()) {
  process.stderr.write('warm-compile-cache: set NODE_COMPILE_CACHE to the cache directory\n');
  process.exit(2);
}
// The operator loads client-node's KubeConfig without its generated API clients, through a
// resolve hook; warming takes the same path so the same modules are cached.
const { loadKubeConfigWithoutGeneratedApis } = await import('../operator/kube/slim-load.ts');
loadKubeConfigWithoutGeneratedApis();
for (const module of [
  '../operator/cli/main.ts',
  '../operator/cli/commands/operator.ts',
  '../operator/manager/manager.ts',
  '../operator/cli/commands/sidecar.ts',
]) {
  await import(module);
}
flushCompileCache();
process.stdout.write(`compile cache written to ${getCompileCacheDir()}\n`);
