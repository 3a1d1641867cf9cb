/**
 * The spec an adopting AgentCard publishes, given the card its agent serves (pure): the served
 * card converted to the 1.0 shape (convert.ts), spec.remove applied, spec.card on top
 * (overlay.ts), and the result put in place of spec.card with spec.source and spec.remove gone.
 * The controller's tracker composes the same functions on the card it fetched; the CLI composes
 * them here on a card read from a file or fetched on request, so that `agentcard render` shows
 * what the operator would publish.
 */
import { toV1, type ConvertedCard } from './convert.ts';
import { adoptedCard, effectiveSpec, type AdoptedSpecInput } from './overlay.ts';

type Json = Record<string, unknown>;

export interface ResolvedSpec {
  /** The spec to validate, sign and publish as a written card. */
  spec: Json;
  /** The served card in the 1.0 shape, with the shape it was served in. */
  converted: ConvertedCard;
  /** spec.remove pointers that matched nothing (not an error: docs/adopt.md, merge rules). */
  unmatched: string[];
}

export function resolveSourceSpec(rawSpec: Json, served: Json): ResolvedSpec {
  const converted = toV1(served);
  const { card, unmatched } = adoptedCard(converted.card, rawSpec as AdoptedSpecInput);
  return { spec: effectiveSpec(rawSpec, card), converted, unmatched };
}
