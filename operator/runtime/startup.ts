/**
 * Where an object goes in its controller's work queue when this replica starts reconciling (at
 * start, or when it wins the election): one rule for every controller. An object that needs a
 * write goes into the `high` lane, ahead of the re-plan of every other object (`low`), so that
 * what changed while no leader ran (a failover, an upgrade) is published first rather than
 * after all the others in list order. At 10,000 objects the re-plan takes tens of seconds.
 *
 * Decided from the caches alone, without planning (that is the re-plan's work):
 * - the spec changed since the last reconcile: `metadata.generation` is not
 *   `status.observedGeneration` (never reconciled: no observedGeneration at all);
 * - the object was published (its status names the digest of what it published) and the
 *   published document is gone (its ConfigMap, or the key in it), or the bytes there are not
 *   the ones the status names (someone edited or deleted it).
 * Anything else a reconcile would still change (a Secret that changed meanwhile, a Pod, a card
 * a catalog lists) is found by the re-plan, at low priority.
 *
 * Each controller says what its objects show (controllers/agentcard/startup-priority.ts for AgentCards,
 * controllers/catalogs/startup-priority.ts for catalogs); the rule and the queueing are here.
 */
import { digestOf } from './configmaps.ts';
import type { Priority, WorkQueue } from './workqueue.ts';

/** What the caches show of one object at start. */
export interface StartupView {
  generation: number | undefined;
  /** `status.observedGeneration`; undefined: never reconciled. */
  observedGeneration: number | undefined;
  /** Being deleted: nothing to write, garbage collection's turn. */
  deleting: boolean;
  /** `sha256:<hex>` of the document the status says is published; undefined: nothing published. */
  publishedDigest: string | undefined;
  /**
   * The document as its ConfigMap holds it now: its text, `undefined` when the ConfigMap or the
   * key is gone, or `'unknown'` when the caches cannot tell (a ConfigMap in a namespace that is
   * not watched: the re-plan reads it).
   */
  served: string | undefined | 'unknown';
}

/** The rule: `high` when a reconcile will have to write (see above), else `low`. */
export function startupPriority(view: StartupView): Priority {
  if (view.deleting) return 'low';
  if (view.observedGeneration !== (view.generation ?? 0)) return 'high';
  if (view.publishedDigest === undefined || view.served === 'unknown') return 'low';
  return view.served === undefined || digestOf(view.served) !== view.publishedDigest ? 'high' : 'low';
}

/**
 * Queues every key of a controller at start (builder.ts): those the rule puts `high` first, then the rest
 * `low`, each lane in the order given. Returns how many went into each lane (for the log line).
 */
export function queueAtStart(
  queue: Pick<WorkQueue, 'add'>,
  objects: Iterable<{ key: string; view?: StartupView }>,
): { high: number; low: number } {
  const lanes = { high: [] as string[], low: [] as string[] };
  // A controller whose objects publish nothing (adoption, issuer) gives no view: all `low`.
  for (const { key, view } of objects) lanes[view ? startupPriority(view) : 'low'].push(key);
  for (const key of lanes.high) queue.add(key, 'high');
  for (const key of lanes.low) queue.add(key, 'low');
  return { high: lanes.high.length, low: lanes.low.length };
}
