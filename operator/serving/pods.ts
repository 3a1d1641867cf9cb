/**
 * What the AgentCard's status.serving reports: how many Pods ask for this card and which of
 * them run without the sidecar (the webhook's failurePolicy is Ignore, so a Pod created while it
 * was down starts without one). Pure: the controller passes the Pods of the card's namespace.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { INJECT_ANNOTATION, requestedCardName, SIDECAR_CONTAINER } from '../api/names.ts';

export interface ServingSummary {
  podsRequesting: number;
  podsMissingSidecar: number;
  /**
   * Names of Pods without the sidecar, sorted, at most MAX_MISSING; absent when there are none
   * (an empty list would show as an empty `Missing:` line in `kubectl describe`).
   */
  missing?: string[];
}

export const MAX_MISSING = 20;

/** The AgentCard name a Pod asks for in `namespace`, or undefined (same rule as the webhook). */
export function requestedCard(pod: V1Pod, namespace: string): string | undefined {
  return requestedCardName(pod.metadata?.annotations?.[INJECT_ANNOTATION], namespace);
}

export function hasSidecar(pod: V1Pod): boolean {
  const spec = pod.spec;
  return [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])].some(
    (c) => c.name === SIDECAR_CONTAINER,
  );
}

export function summarizeServing(
  card: { name: string; namespace: string },
  pods: readonly V1Pod[],
): ServingSummary {
  const requesting = pods.filter(
    (p) =>
      (p.metadata?.namespace ?? card.namespace) === card.namespace &&
      requestedCard(p, card.namespace) === card.name &&
      // Pods on their way out no longer count.
      !p.metadata?.deletionTimestamp &&
      p.status?.phase !== 'Succeeded' &&
      p.status?.phase !== 'Failed',
  );
  const missing = requesting
    .filter((p) => !hasSidecar(p))
    .map((p) => p.metadata?.name ?? '')
    .sort();
  return {
    podsRequesting: requesting.length,
    podsMissingSidecar: missing.length,
    ...(missing.length > 0 ? { missing: missing.slice(0, MAX_MISSING) } : {}),
  };
}

/** A one-line message for the Published condition and the event, naming the Pods. */
export function servingMessage(summary: ServingSummary): string | undefined {
  if (summary.podsMissingSidecar === 0) return undefined;
  const listed = summary.missing ?? [];
  const more = summary.podsMissingSidecar - listed.length;
  const names = listed.join(', ') + (more > 0 ? ` and ${more} more` : '');
  return `${summary.podsMissingSidecar} of ${summary.podsRequesting} Pods requesting this card run without the sidecar (created while the webhook was unavailable?): ${names}`;
}
