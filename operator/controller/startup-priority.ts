/**
 * Where a card goes in the work queue when this replica starts reconciling (at start, or when it
 * wins the election): a card that needs a write goes into the `high` lane, ahead of the re-plan
 * of every other card (`low`), so that a card changed while no leader ran (a failover, an
 * upgrade) is published first rather than after all the others in list order. At 10,000 cards
 * the re-plan takes tens of seconds.
 *
 * Decided from the caches alone, without planning (that is the re-plan's work):
 * - the spec changed since the last reconcile: `metadata.generation` is not
 *   `status.observedGeneration` (never reconciled: no observedGeneration at all);
 * - the card was published (`status.card`) and its ConfigMap is gone, or serves other bytes than
 *   `status.card.digest` names (someone edited or deleted it).
 * Anything else a reconcile would still change (a Secret that changed during the failover, a
 * Pod) is found by the re-plan, at low priority.
 */
import { DATA_KEYS, digestOf } from './configmap.ts';
import type { CachedConfigMap } from './configmap-cache.ts';
import type { AgentCardObject } from './plan.ts';
import { ownedStatus } from './status.ts';
import type { Priority } from './workqueue.ts';

export function startupPriority(card: AgentCardObject, configMap: CachedConfigMap | undefined): Priority {
  if (card.metadata.deletionTimestamp) return 'low'; // nothing to write: garbage collection's turn
  const status = ownedStatus(card.status);
  if (status.observedGeneration !== (card.metadata.generation ?? 0)) return 'high';
  const published = status.card?.digest;
  if (published === undefined) return 'low';
  const served = configMap?.data?.[DATA_KEYS.card];
  return served === undefined || digestOf(served) !== published ? 'high' : 'low';
}
