/**
 * Which public hosts the served-card check asks (pure): every exact host of each audience that
 * opts in (`spec.audiences[].verifyServed`). A wildcard host names no one host to ask and is
 * skipped. The URL is the well-known card path at the host (A2A 1.0 specification, section
 * 8.2); scheme and port come from the audience's `baseURL` when it names the same host (a public
 * origin on plain HTTP or another port), https on its default port otherwise.
 */
import type { AgentCardSpec } from '../card/resource.ts';

export const WELL_KNOWN_CARD_PATH = '/.well-known/agent-card.json';

/** The hosts one card's check asks at most, per round (8 audiences x 16 hosts would be 128). */
export const MAX_SERVED_TARGETS = 16;

export interface ServedTarget {
  audience: string;
  /** Lowercase, as the sidecar matches it. */
  host: string;
  url: string;
}

export interface ServedTargets {
  targets: ServedTarget[];
  /** Opted-in hosts that are not asked: wildcards, and those over MAX_SERVED_TARGETS. */
  skipped: string[];
}

export function servedTargets(spec: Pick<AgentCardSpec, 'audiences'>): ServedTargets {
  const targets: ServedTarget[] = [];
  const skipped: string[] = [];
  for (const audience of spec.audiences ?? []) {
    if (audience.verifyServed !== true) continue;
    const base = audience.baseURL !== undefined ? new URL(audience.baseURL) : undefined;
    for (const written of audience.hosts) {
      const host = written.toLowerCase();
      if (host.startsWith('*.') || targets.length >= MAX_SERVED_TARGETS) {
        skipped.push(host);
        continue;
      }
      const origin = base && base.hostname.toLowerCase() === host ? base.origin : `https://${host}`;
      targets.push({ audience: audience.name, host, url: `${origin}${WELL_KNOWN_CARD_PATH}` });
    }
  }
  return { targets, skipped };
}
