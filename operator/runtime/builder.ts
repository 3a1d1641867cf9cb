/**
 * The builder every controller is made with, as controller-runtime's `builder.ControllerManagedBy`:
 * a reconciler and what it watches become a work queue, the handlers on the shared cache
 * (cache.ts) and the two runnables of reconciler.ts. No controller creates an informer, a handler
 * or a queue itself.
 *
 * ```ts
 * const built = new ControllerBuilder(runtime, { name: 'adoption', ... })
 *   .watches(workloads, (w) => [keyOf(w)])            // each event → the keys to reconcile
 *   .owns(cards, { kinds: ['Deployment'], key: ... }) // objects it owns, through ownerReferences
 *   .wakes(channel)                                   // another controller asks (channel.ts)
 *   .complete(reconciler);
 * ```
 *
 * - A map function turns an event (the object, and for an update the object it replaces) into
 *   requests: a key, its lane (`high` by default; `low` for background work) and an optional
 *   delay (coalescing). Events before the reconcile loop started are dropped: the start queues
 *   every key anyway (`Reconciler.keys`), each in the lane the start-up rule gives it
 *   (startup.ts), then the periodic resync queues them `low`.
 * - The loop waits until every collection the controller reads has synced; a collection that
 *   becomes available later (a CRD installed after the start) queues every key again `low`.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { BackoffOptions } from '../kube/backoff.ts';
import type { Clock } from '../kube/clock.ts';
import type { Logger } from '../log.ts';
import type { SharedInformer } from './cache.ts';
import type { Channel } from './channel.ts';
import type { Runnable } from './manager.ts';
import type { RuntimeMetrics } from './metrics.ts';
import { reconcileQueue, WorkSignal, type Reconciler } from './reconciler.ts';
import { queueAtStart } from './startup.ts';
import type { Priority, QueueGate, WorkQueue } from './workqueue.ts';

/** What every controller of a process shares: the cache, the API server's health, time, metrics. */
export interface Runtime {
  log: Logger;
  /** Holds every work queue while the API server is away (kube/health.ts). */
  gate?: QueueGate;
  clock?: Clock;
  metrics?: RuntimeMetrics;
}

/** One key to reconcile, in a lane, optionally after a delay. */
export interface Request {
  key: string;
  /** Default `high`: a change someone made. `low`: background work behind it. */
  priority?: Priority;
  /** Wait this long first (the queue keeps one delayed add per key). */
  afterMs?: number;
}

export type EventType = 'add' | 'update' | 'delete';

/** An event of a watched collection → the requests it causes (none: nothing to do). */
export type MapFunc<T> = (obj: T, event: { type: EventType; old?: T }) => Iterable<string | Request> | void;

export interface ControllerSettings {
  /** The controller label of its metrics and the runnables' names: "agentcard", "catalog". */
  name: string;
  concurrency: number;
  resyncMs: number;
  /** The warning a failed run logs: "reconcile failed; retrying". */
  failure: string;
  /** The log fields that name a key. */
  fields: (key: string) => Record<string, unknown>;
  backoff?: BackoffOptions;
  /** Called with the queue's depth whenever it changes. */
  onDepth?: (depth: number) => void;
}

/** A built controller: its queue (for requests from outside the cache) and its runnables. */
export interface BuiltController {
  readonly queue: WorkQueue;
  /** Queues a key if the loop runs (before: the start queues every key). */
  enqueue(request: string | Request): void;
  runnables(): Runnable[];
  /** Its collections' informers not loaded yet. */
  unsynced(): string[];
}

export class ControllerBuilder {
  private readonly runtime: Runtime;
  private readonly settings: ControllerSettings;
  private readonly collections: Array<SharedInformer<KubernetesObject>> = [];
  private readonly wiring: Array<(enqueue: (r: string | Request) => void) => void> = [];

  constructor(runtime: Runtime, settings: ControllerSettings) {
    this.runtime = runtime;
    this.settings = settings;
  }

  /** Reads a collection without reacting to it: the loop waits for its sync all the same. */
  reads<T extends KubernetesObject>(informer: SharedInformer<T>): this {
    this.read(informer);
    return this;
  }

  /** Reacts to every event of a collection through `map`. */
  watches<T extends KubernetesObject>(informer: SharedInformer<T>, map: MapFunc<T>): this {
    this.read(informer);
    this.wiring.push((enqueue) =>
      informer.addEventHandler({
        add: (obj) => emit(map(obj, { type: 'add' }), enqueue),
        update: (old, obj) => emit(map(obj, { type: 'update', old }), enqueue),
        delete: (obj) => emit(map(obj, { type: 'delete' }), enqueue),
      }),
    );
    return this;
  }

  /**
   * Reacts to the objects this controller owns: an event of an object whose controller
   * ownerReference has one of `kinds` queues `key(owner name, object)` (none: skipped).
   */
  owns<T extends KubernetesObject>(
    informer: SharedInformer<T>,
    opts: {
      kinds: readonly string[];
      key: (owner: string, obj: T, event: { type: EventType; old?: T }) => string | Request | undefined;
    },
  ): this {
    return this.watches(informer, (obj, event) => {
      const owner = obj.metadata?.ownerReferences?.find((r) => r.controller && opts.kinds.includes(r.kind));
      const request = owner ? opts.key(owner.name, obj, event) : undefined;
      return request === undefined ? [] : [request];
    });
  }

  /** Reacts to requests another controller sends on `channel` (channel.ts). */
  wakes(channel: Channel, priority: Priority = 'low'): this {
    this.wiring.push((enqueue) => channel.subscribe((key) => enqueue({ key, priority })));
    return this;
  }

  complete(reconciler: Reconciler): BuiltController {
    const { runtime, settings } = this;
    const work = new WorkSignal();
    const queue = reconcileQueue({
      reconcile: (key, signal) => reconciler.reconcile(key, signal),
      work,
      concurrency: settings.concurrency,
      ...(settings.backoff ? { backoff: settings.backoff } : {}),
      gate: runtime.gate,
      clock: runtime.clock,
      observer: runtime.metrics?.controller(settings.name),
      onDepth: settings.onDepth,
      log: runtime.log,
      failure: settings.failure,
      fields: settings.fields,
    });
    let looping = false;
    const enqueue = (request: string | Request) => {
      if (!looping) return;
      const r = typeof request === 'string' ? { key: request } : request;
      if (r.afterMs !== undefined && r.afterMs > 0) queue.addAfter(r.key, r.afterMs, r.priority ?? 'high');
      else queue.add(r.key, r.priority ?? 'high');
    };
    for (const wire of this.wiring) wire(enqueue);
    const reads = [...this.collections];
    // A collection served only later (its CRD installed after the start): every key again.
    for (const informer of reads)
      informer.whenAvailable(() => {
        void Promise.all(reads.map((i) => i.waitForSync(work.signal)))
          .then(() => {
            for (const { key } of reconciler.keys()) enqueue({ key, priority: 'low' });
          })
          .catch(() => {});
      });
    // The leader's loop (the caches are the manager's, cache.ts, and run on every replica): waits
    // for every collection it reads (an informer not started yet is waited for, not failed),
    // queues every key, starts the resync.
    const loop: Runnable = {
      name: `${settings.name}-reconciler`,
      mode: 'leader',
      start: async (signal) => {
        await Promise.all(reads.map((i) => i.waitForSync(signal)));
        if (queue.shuttingDown || signal.aborted) return;
        looping = true;
        const counts = queueAtStart(queue, reconciler.keys());
        reconciler.started?.(counts);
        queue.startResync(settings.resyncMs, () => [...reconciler.keys()].map((k) => k.key));
      },
      stop: () => queue.shutdown(),
      cancel: () => {
        work.cancel();
        void queue.shutdown();
      },
    };
    return {
      queue,
      enqueue,
      runnables: () => [loop],
      unsynced: () => reads.flatMap((i) => i.unsynced()),
    };
  }

  private read<T extends KubernetesObject>(informer: SharedInformer<T>): void {
    const shared = informer as unknown as SharedInformer<KubernetesObject>;
    if (!this.collections.includes(shared)) this.collections.push(shared);
  }
}

function emit(requests: Iterable<string | Request> | void, enqueue: (r: string | Request) => void): void {
  if (!requests) return;
  for (const r of requests) enqueue(r);
}
