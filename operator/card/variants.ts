/**
 * The cards one AgentCard publishes: the default audience (spec.card) and one per
 * spec.audiences entry (audience.ts builds each).
 */
import { audienceCard, DEFAULT_AUDIENCE, normalizeHost } from './audience.ts';
import type { AgentCardSpec } from './resource.ts';
import type { AgentCard } from './schema.ts';

/** One card to publish: the default audience (spec.card) or one of spec.audiences. */
export interface AudienceVariant {
  name: string;
  /** Lowercase hosts (`*.suffix` for a wildcard); empty for the default audience. */
  hosts: string[];
  card: AgentCard;
  /** Whether its interfaces are probed (spec.probe.enabled and the audience's probe). */
  probed: boolean;
}

/** The default audience, then each of spec.audiences in order. */
export function audienceVariants(spec: AgentCardSpec, card: AgentCard): AudienceVariant[] {
  const probing = spec.probe?.enabled !== false;
  const variants: AudienceVariant[] = [{ name: DEFAULT_AUDIENCE, hosts: [], card, probed: probing }];
  for (const a of spec.audiences ?? []) {
    variants.push({
      name: a.name,
      hosts: a.hosts.map(normalizeHost),
      card: audienceCard(card, a),
      probed: probing && a.probe !== 'Disabled',
    });
  }
  return variants;
}

/** The variant named `name`, or undefined. */
export function findVariant(spec: AgentCardSpec, card: AgentCard, name: string): AudienceVariant | undefined {
  return audienceVariants(spec, card).find((v) => v.name === name);
}
