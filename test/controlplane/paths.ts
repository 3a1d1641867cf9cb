import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** This Go module's folder (`test/controlplane`). */
export const moduleDir = dirname(fileURLToPath(import.meta.url));

/** The repository root. */
export const repoRoot = resolve(moduleDir, '..', '..');

/**
 * Per-checkout state of the running control plane: kubeconfig, certificates, data, logs
 * (git-ignored). `AGENTCARD_CLUSTER_DIR` (relative to the repository root) names another folder,
 * for a second control plane beside the first: `npm test` runs the serial integration files on
 * one of their own in `.cluster-serial/` (test/run-suite.ts).
 */
export const clusterDir = resolve(repoRoot, process.env.AGENTCARD_CLUSTER_DIR || '.cluster');

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
