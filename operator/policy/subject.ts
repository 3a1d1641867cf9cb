/**
 * The engine's view of an AgentCard (evaluate.ts Subject) from what the CLI and the controller
 * hold: a validated spec and card, or a bare card. Each audience's card is judged too (its
 * interfaces may differ), and a finding is reported at the field the user wrote: a re-based
 * interface URL at the audience's baseURL, a field the audience does not override at spec.card.
 */
import { DEFAULT_AUDIENCE } from '../card/audience.ts';
import { audienceVariants } from '../card/variants.ts';
import { formatPath, type PathSegment } from '../card/problem.ts';
import { renderV1 } from '../card/render.ts';
import type { AgentCardSpec } from '../card/resource.ts';
import type { AgentCard } from '../card/schema.ts';
import { bareCardPath, type CardView, type Facts, type Subject } from './evaluate.ts';

/** The fields an audience replaces (card/audience.ts audienceCard). */
const OVERRIDDEN = ['supportedInterfaces', 'securitySchemes', 'securityRequirements'] as const;

/** The card views of a written AgentCard spec: spec.card, then each of spec.audiences. */
export function specCardViews(spec: AgentCardSpec, card: AgentCard): CardView[] {
  const inCard = (segments: readonly PathSegment[]) => formatPath(['spec', 'card', ...segments]);
  return audienceVariants(spec, card).map((variant, index) => {
    if (variant.name === DEFAULT_AUDIENCE)
      return { audience: variant.name, card: renderV1(variant.card), path: inCard };
    const i = index - 1;
    const audience = spec.audiences![i]!;
    const path = (segments: readonly PathSegment[]): string => {
      if (segments.length === 0) return formatPath(['spec', 'audiences', i]);
      const field = segments[0] as (typeof OVERRIDDEN)[number];
      if (field === 'supportedInterfaces' && audience.supportedInterfaces === undefined)
        // A re-based URL comes from the baseURL; the rest of the interface from spec.card.
        return audience.baseURL !== undefined && segments[2] === 'url'
          ? formatPath(['spec', 'audiences', i, 'baseURL'])
          : inCard(segments);
      if (OVERRIDDEN.includes(field) && audience[field] !== undefined)
        return formatPath(['spec', 'audiences', i, ...segments]);
      return inCard(segments);
    };
    return { audience: variant.name, card: renderV1(variant.card), path };
  });
}

/** A bare card as served: one view, paths from the card's root. */
export const bareCardViews = (card: Record<string, unknown>): CardView[] => [
  { audience: DEFAULT_AUDIENCE, card, path: bareCardPath },
];

/** What can be known of a manifest offline, without the cluster (the CLI's facts). */
export function offlineFacts(
  spec: { signing?: unknown } | undefined,
  bareCard?: Record<string, unknown>,
): Facts {
  if (bareCard) {
    // A bare card's signatures are there or not; whose they are needs the keys (agentcard verify).
    const signatures = bareCard.signatures;
    return Array.isArray(signatures) && signatures.length > 0 ? {} : { signed: false };
  }
  // Without spec.signing the operator never signs the card: that much is known offline.
  return spec?.signing === undefined ? { signed: false } : {};
}

export type { Subject };
