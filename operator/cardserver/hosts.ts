/**
 * Which card the central card server answers a Host with (pure). Every card served centrally
 * claims hosts in two ways, both from its published ConfigMap:
 * - its default audience's hosts (`spec.serving.hosts`, the `serving-hosts` key): the request
 *   gets the default documents (`agent-card.json`, `agent.json`);
 * - its other audiences' hosts, the variant keys `host.<h>.<file>` and `wildcard.<s>.<file>`
 *   (controllers/agentcard/audiences/publish.ts): the request gets that audience's card, looked up by
 *   respond.ts exactly as the sidecar does.
 *
 * Precedence, the sidecar's: an exact host before the wildcard `*.<parent suffix>`, and a
 * wildcard matches exactly one more leading label. Two cards claiming the same exact host, or
 * the same wildcard, is a conflict: that host is served by neither (404), never by whichever
 * ConfigMap arrived last, and the conflict is reported (log, metric; the controller sets the
 * cards' Serving condition,
 * serving/central-hosts.ts). A host no card claims gets 404: the server never falls back to
 * some default card.
 */
import { isVariantFile } from '../sidecar/audience.ts';

/** One served card, as the index needs it. */
export interface CardHosts {
  /** `namespace/name` of the ConfigMap. */
  key: string;
  /** Default-audience hosts (lowercase, may be `*.suffix`). */
  defaultHosts: readonly string[];
  /** The ConfigMap's data keys (variant keys name the other audiences' hosts). */
  dataKeys: readonly string[];
}

/** What a host pattern (`a.example.com`, `*.example.com`) resolves to. */
export interface Claim {
  key: string;
  /** True: the default documents; false: the audience variant respond.ts looks up by host. */
  isDefault: boolean;
}

export interface HostIndex {
  /** Host pattern → the one card claiming it. */
  claims: ReadonlyMap<string, Claim>;
  /** Host pattern → the cards that claim it (two or more), sorted. */
  conflicts: ReadonlyMap<string, readonly string[]>;
}

/** The host patterns a card's variant keys name: `host.<h>.x` → h, `wildcard.<s>.x` → `*.s`. */
export function variantHosts(dataKeys: readonly string[]): string[] {
  const out = new Set<string>();
  for (const key of dataKeys) {
    if (!isVariantFile(key)) continue;
    const kind = key.startsWith('host.') ? 'host' : 'wildcard';
    // The key is `<kind>.<host>.<file>`; the file names are agent-card.json and agent.json.
    const rest = key.slice(kind.length + 1).replace(/\.(agent-card|agent)\.json$/, '');
    out.add(kind === 'host' ? rest : `*.${rest}`);
  }
  return [...out];
}

/** Parses the `serving-hosts` value: one host per line, blank lines ignored, lowercase. */
export function parseServingHosts(text: string | undefined): string[] {
  if (text === undefined) return [];
  return text
    .split('\n')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '');
}

export function buildHostIndex(cards: Iterable<CardHosts>): HostIndex {
  const claimants = new Map<string, Map<string, boolean>>();
  const claim = (host: string, key: string, isDefault: boolean) => {
    let byKey = claimants.get(host);
    if (!byKey) claimants.set(host, (byKey = new Map()));
    // A card that names one host both ways (not possible through the CRD) keeps the audience.
    byKey.set(key, (byKey.get(key) ?? true) && isDefault);
  };
  for (const card of cards) {
    for (const h of card.defaultHosts) claim(h, card.key, true);
    for (const h of variantHosts(card.dataKeys)) claim(h, card.key, false);
  }
  const claims = new Map<string, Claim>();
  const conflicts = new Map<string, string[]>();
  for (const [host, byKey] of claimants) {
    if (byKey.size === 1) {
      const [[key, isDefault]] = [...byKey] as [[string, boolean]];
      claims.set(host, { key, isDefault });
    } else conflicts.set(host, [...byKey.keys()].sort());
  }
  return { claims, conflicts };
}

export type Resolution =
  | { kind: 'card'; key: string; isDefault: boolean }
  | { kind: 'conflict'; pattern: string }
  | { kind: 'unknown' };

/**
 * The card for a request's host (audience.ts normalizeHost: lowercase, no port), exact host
 * first, then the wildcard of its parent suffix. A conflicted pattern stops the search: a host
 * two cards claim exactly is not handed to a third card's wildcard.
 */
export function resolveHost(index: HostIndex, host: string | undefined): Resolution {
  if (host === undefined) return { kind: 'unknown' };
  const patterns = [host];
  const dot = host.indexOf('.');
  if (dot > 0) patterns.push(`*.${host.slice(dot + 1)}`);
  for (const pattern of patterns) {
    if (index.conflicts.has(pattern)) return { kind: 'conflict', pattern };
    const claim = index.claims.get(pattern);
    if (claim) return { kind: 'card', ...claim };
  }
  return { kind: 'unknown' };
}
