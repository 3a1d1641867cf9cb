/**
 * How the audiences' cards are laid out in the published ConfigMap (cross-team contract with the
 * sidecar, which serves them in both its Node and nginx modes):
 * - `agent-card.json`, `agent.json`: the default audience (spec.card), served when no host matches;
 * - `host.<host>.agent-card.json`, `host.<host>.agent.json`: the card for one exact host name
 *   (lowercase, no port, no trailing dot), one pair per host of an audience;
 * - `wildcard.<suffix>.agent-card.json`, `wildcard.<suffix>.agent.json`: the card for
 *   `*.<suffix>` (exactly one more leading label);
 * - `jwks.json` and `cache-max-age-seconds`, shared by every variant.
 * The servers look up the exact host, then the wildcard of its parent suffix, then the default.
 * A card is duplicated for each of its hosts, and the size check counts every copy.
 */
import { DATA_KEYS } from '../configmap.ts';

/** What the API server accepts in one ConfigMap: keys and values of data together, 1 MiB. */
export const MAX_CONFIGMAP_DATA_BYTES = 1024 * 1024;

/** The ConfigMap key prefix of a host pattern of spec.audiences[].hosts (already lowercase). */
export function hostKeyPrefix(host: string): string {
  return host.startsWith('*.') ? `wildcard.${host.slice(2)}.` : `host.${host}.`;
}

/** One audience's published documents. */
export interface VariantFiles {
  name: string;
  /** Lowercase hosts; empty for the default audience. */
  hosts: readonly string[];
  /** The signed v1.0 card, the exact served bytes. */
  card: string;
  /** The v0.3-shaped card. */
  legacyCard: string;
}

/** The ConfigMap entries of the audiences that have hosts: card and legacy card per host. */
export function variantData(variants: readonly VariantFiles[]): Record<string, string> {
  const data: Record<string, string> = {};
  for (const v of variants) {
    for (const h of v.hosts) {
      data[`${hostKeyPrefix(h)}${DATA_KEYS.card}`] = v.card;
      data[`${hostKeyPrefix(h)}${DATA_KEYS.legacyCard}`] = v.legacyCard;
    }
  }
  return data;
}

/** The key the published card of an audience is read back from (its first host's). */
export function publishedCardKey(hosts: readonly string[]): string {
  return hosts.length === 0 ? DATA_KEYS.card : `${hostKeyPrefix(hosts[0]!)}${DATA_KEYS.card}`;
}

/** Bytes of a ConfigMap's data as the API server counts them (each key plus its value). */
export function dataBytes(data: Readonly<Record<string, string>>): number {
  let total = 0;
  for (const [k, v] of Object.entries(data)) total += Buffer.byteLength(k) + Buffer.byteLength(v);
  return total;
}

/**
 * Why these data cannot be published in one ConfigMap, naming what takes the room, or undefined
 * when they fit.
 */
export function sizeProblem(
  data: Readonly<Record<string, string>>,
  variants: readonly VariantFiles[],
  limit = MAX_CONFIGMAP_DATA_BYTES,
): string | undefined {
  const total = dataBytes(data);
  if (total <= limit) return undefined;
  const parts = variants.map((v) => {
    const copies = Math.max(1, v.hosts.length);
    const each = Buffer.byteLength(v.card) + Buffer.byteLength(v.legacyCard);
    return `${v.name} ${each * copies} bytes${copies > 1 ? ` (${copies} hosts x ${each})` : ''}`;
  });
  return `the cards of all audiences take ${total} bytes, over the ConfigMap limit of ${limit} bytes (${parts.join(', ')}); shorten the card, or use fewer hosts or audiences (a wildcard host counts once)`;
}
