/**
 * What an AgentCard shows the start-up rule (runtime/startup.ts): a card whose spec changed since
 * its last reconcile, or whose published ConfigMap is gone or serves other bytes than
 * `status.card.digest` names, is queued `high` when this replica starts reconciling, before the
 * re-plan of every other card.
 */
import { DATA_KEYS } from '../../api/names.ts';
import type { CachedConfigMap } from './configmap-cache.ts';
import type { AgentCardObject } from '../../api/objects.ts';
import { ownedStatus } from './status.ts';
import type { StartupView } from '../../runtime/startup.ts';

/** `configMap`: the card's ConfigMap from the cache (the signed card is cached verbatim). */
export function cardStartupView(card: AgentCardObject, configMap: CachedConfigMap | undefined): StartupView {
  const status = ownedStatus(card.status);
  return {
    generation: card.metadata.generation,
    observedGeneration: status.observedGeneration,
    deleting: !!card.metadata.deletionTimestamp,
    publishedDigest: status.card?.digest,
    served: configMap?.data?.[DATA_KEYS.card],
  };
}
