/**
 * How the sidecar's Node.js runtime is kept small. The settings reach Node through environment
 * variables that the injected container sets, because the command starts through
 * bin/agentcard.js rather than as `node FLAGS file`. The image runs the bundle (plain JavaScript,
 * build/bundle.ts), so Node never loads its TypeScript stripper.
 *
 * NODE_OPTIONS (both flags are on Node's NODE_OPTIONS allow-list):
 * - `--max-semi-space-size=1`: young-generation semi-spaces of 1 MiB instead of up to 16 MiB;
 *   a request allocates little and dies young, so scavenges stay cheap and the resident young
 *   generation stays small.
 * - `--max-old-space-size=32`: a hard cap far above the few MiB the sidecar keeps (prepared card
 *   bytes, module code), so a leak ends in a restart rather than in unbounded growth.
 */
export const SIDECAR_NODE_OPTIONS = '--max-semi-space-size=1 --max-old-space-size=32';
/** The unprivileged user and group the sidecar runs as (the distroless `nonroot` ids). */
export const SIDECAR_UID = 65532;

export function sidecarEnv(): { name: string; value: string }[] {
  return [{ name: 'NODE_OPTIONS', value: SIDECAR_NODE_OPTIONS }];
}
