/**
 * The build step: bundles the `agentcard` command (the CLI, `agentcard operator` and
 * `agentcard sidecar`) into plain JavaScript under dist/, with every runtime dependency inside.
 * Production (the container image and the npm package) runs this bundle: no TypeScript stripping
 * at run time, no node_modules. So do the tests' `agentcard` processes (test/support/test-package.ts
 * stages it once per state of the sources). `npx agentcard` in a checkout runs the TypeScript
 * sources (bin/agentcard.js chooses).
 *
 * Each subcommand stays in its own chunk, loaded only when used (operator/cli/main.ts), so that
 * `agentcard sidecar` or `agentcard validate` does not load the Kubernetes client.
 *
 * `npm run build` (node build/bundle.ts [--outdir DIR]).
 */
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { build, type BuildOptions, type Metafile } from 'esbuild';
import { clientNodeAlias } from './client-node-alias.ts';

export const repoRoot = resolve(import.meta.dirname, '..');
export const DEFAULT_OUTDIR = join(repoRoot, 'dist');
/** The bundle's entry module, relative to the output directory; bin/agentcard.js imports it. */
export const ENTRY = 'agentcard.js';

/**
 * The oldest Node.js the bundle runs on: the CLI is supported on Node.js 22 and 24 (the image
 * runs 24). esbuild lowers nothing for these; the target only refuses syntax they lack.
 */
export const NODE_TARGET = 'node22';

export function bundleOptions(outdir: string, extraEntries: Record<string, string> = {}): BuildOptions {
  return {
    absWorkingDir: repoRoot,
    entryPoints: { agentcard: 'operator/cli/main.ts', ...extraEntries },
    outdir,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: NODE_TARGET,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    // Bundled CommonJS dependencies call require() for Node's built-in modules; an ES module has
    // no require of its own.
    banner: {
      js: "import { createRequire as __agentcardCreateRequire } from 'node:module'; const require = __agentcardCreateRequire(import.meta.url);",
    },
    // Not minified: stack traces (AGENTCARD_DEBUG=1) keep readable names. Licence comments of the
    // bundled packages stay in the output.
    legalComments: 'inline',
    plugins: [clientNodeAlias()],
    metafile: true,
    logLevel: 'warning',
  };
}

/** Builds the bundle into `outdir` (emptied first); returns esbuild's metafile. */
export async function bundle(
  outdir: string = DEFAULT_OUTDIR,
  extraEntries: Record<string, string> = {},
): Promise<Metafile> {
  rmSync(outdir, { recursive: true, force: true });
  const result = await build(bundleOptions(outdir, extraEntries));
  return result.metafile!;
}

/**
 * Lays out in `dir` what the npm package and the image hold, and nothing else: package.json,
 * bin/agentcard.js and a freshly built dist/. `node DIR/bin/agentcard.js` then runs the bundle, as
 * production does. Returns `dir`. For tests and benchmarks.
 */
export async function stagePackage(dir: string, extraEntries: Record<string, string> = {}): Promise<string> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'bin'), { recursive: true });
  copyFileSync(join(repoRoot, 'package.json'), join(dir, 'package.json'));
  copyFileSync(join(repoRoot, 'bin', 'agentcard.js'), join(dir, 'bin', 'agentcard.js'));
  await bundle(join(dir, 'dist'), extraEntries);
  return dir;
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { outdir: { type: 'string' } } });
  const outdir = values.outdir ? resolve(values.outdir) : DEFAULT_OUTDIR;
  const started = performance.now();
  const metafile = await bundle(outdir);
  const bytes = Object.values(metafile.outputs).reduce((sum, o) => sum + o.bytes, 0);
  process.stdout.write(
    `bundled into ${outdir}: ${Object.keys(metafile.outputs).length} files, ${(bytes / 2 ** 20).toFixed(1)} MiB, ${Math.round(performance.now() - started)} ms\n`,
  );
}
