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
import { DATA_KEYS } from '../../../api/names.ts';

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
  /** The signed v0.3-shaped card. */
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

/** The key the published v0.3 card of an audience is read back from. */
export function publishedLegacyCardKey(hosts: readonly string[]): string {
  return hosts.length === 0 ? DATA_KEYS.legacyCard : `${hostKeyPrefix(hosts[0]!)}${DATA_KEYS.legacyCard}`;
}
