import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** This Go module's folder (`test/controlplane`). */
export const moduleDir = dirname(fileURLToPath(import.meta.url));

/** The repository root. */
export const repoRoot = resolve(moduleDir, '..', '..');

/** Per-checkout state of the running control plane: kubeconfig, certificates, data, logs (git-ignored). */
export const clusterDir = join(repoRoot, '.cluster');

/** Where the kubeconfig of the running control plane is written. */
export const kubeconfigFile = join(clusterDir, 'kubeconfig');

/**
 * The machine-wide cache of built and unpacked binaries, shared by every checkout so only the
 * first run on a machine pays for the build: `$XDG_CACHE_HOME/agentcard-operator`, else
 * `~/.cache/agentcard-operator`.
 */
export function cacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME || join(homedir(), '.cache');
  return join(base, 'agentcard-operator');
}
