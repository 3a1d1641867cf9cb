/**
 * A reconciler and the two runnables every controller is made of (manager.ts):
 * - its caches (`always`): the access check (access.ts), then the informers, on every replica;
 * - its reconcile loop (`leader`): waits for the caches, queues every key once, starts the
 *   periodic resync, and runs `reconcile(key, signal)` from the work queue. `signal` aborts when
 *   the loop is cancelled (lost leadership, or shutdown past its budget): every API call the
 *   reconcile makes takes it, so cancelled work ends at once instead of racing a timer.
 * - its work queue (`reconcileQueue`): the reconcile with the loop's signal, the outage gate, the
 *   metrics (workqueue_*, controller_runtime_reconcile_*, labelled by the controller's name) and
 *   one warning per failed run with the backoff before its retry.
 */
import { WorkQueue, type HandlerResult, type QueueGate, type QueueObserver } from './workqueue.ts';
import type { BackoffOptions } from '../kube/backoff.ts';
import type { Clock } from '../kube/clock.ts';
import { describeApiError } from '../kube/errors.ts';
import type { Logger } from '../log.ts';
import { whenAborted } from './abort.ts';
import type { Runnable } from './manager.ts';

/** One function of (key, signal) → result: what a controller adds to the runtime. */
export interface Reconciler {
  reconcile(key: string, signal: AbortSignal): Promise<HandlerResult>;
}

/**
 * A signal for a reconcile loop's work in flight; `cancel` aborts it for good. A cancelled loop is
 * never started again in the same process (lost leadership and shutdown both end it: manager.ts),
 * so there is no fresh signal to hand out afterwards.
 */
export class WorkSignal {
  private controller = new AbortController();

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  cancel(): void {
    this.controller.abort(new DOMException('the reconcile loop stopped', 'AbortError'));
  }
}

export interface ControllerParts {
  name: string;
  /** Access check and informer start (resolves once started, not synced). */
  startCaches(signal: AbortSignal): Promise<void>;
  stopCaches(): Promise<void>;
  /** Waits for the caches, then queues and reconciles. */
  startReconciling(signal: AbortSignal): Promise<void>;
  /** Stops taking work, waits for the reconciles in flight. */
  stopReconciling(): Promise<void>;
  /** Aborts the reconciles in flight. */
  cancel(): void;
}

/** The runnables of a controller: caches on every replica, reconciles on the leader. */
export function controllerRunnables(parts: ControllerParts): [Runnable, Runnable] {
  // The reconciler waits for its caches to have started (an informer not started yet cannot be
  // waited for): without leader election both runnables start at the same moment.
  let cachesStarted: () => void = () => {};
  const started = new Promise<void>((resolve) => (cachesStarted = resolve));
  return [
    {
      name: `${parts.name}-caches`,
      mode: 'always',
      start: async (signal) => {
        await parts.startCaches(signal);
        cachesStarted();
      },
      stop: () => parts.stopCaches(),
    },
    {
      name: `${parts.name}-reconciler`,
      mode: 'leader',
      start: async (signal) => {
        await Promise.race([started, whenAborted(signal)]);
        if (signal.aborted) return;
        await parts.startReconciling(signal);
      },
      stop: () => parts.stopReconciling(),
      cancel: () => {
        parts.cancel();
        void parts.stopReconciling();
      },
    },
  ];
}

export interface ReconcileQueueOptions {
  reconcile: (key: string, signal: AbortSignal) => Promise<HandlerResult>;
  /** The loop's signal, handed to every reconcile (cancelled on lost leadership or shutdown). */
  work: WorkSignal;
  concurrency: number;
  /** The retry backoff; default the queue's (1 s doubling to 5 min). */
  backoff?: BackoffOptions;
  /** The API server's health (kube/health.ts): holds the queue during an outage. */
  gate?: QueueGate;
  /** The controller's metrics: `metrics.runtime.controller(<name>)` (metrics/runtime.ts). */
  observer?: QueueObserver;
  /** Called with the number of queued keys whenever it changes. */
  onDepth?: (depth: number) => void;
  clock?: Clock;
  log: Logger;
  /** The warning a failed run logs, e.g. "reconcile failed; retrying". */
  failure: string;
  /** The log fields that name a key (e.g. `{ namespace, name }`). */
  fields: (key: string) => Record<string, unknown>;
}

/**
 * A controller's work queue: runs `reconcile(key, work.signal)`, retries a failure with the
 * queue's backoff and logs it once per failed run (`failure`, the key's fields, the error as
 * describeApiError puts it, `retryInMs`). After shutdown or cancellation nothing is retried, and
 * nothing is logged: the failure is the cancellation itself.
 */
export function reconcileQueue(opts: ReconcileQueueOptions): WorkQueue {
  const queue: WorkQueue = new WorkQueue((key) => opts.reconcile(key, opts.work.signal), {
    concurrency: opts.concurrency,
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.backoff ? { backoff: opts.backoff } : {}),
    ...(opts.gate ? { gate: opts.gate } : {}),
    ...(opts.observer ? { observer: opts.observer } : {}),
    ...(opts.onDepth ? { onDepth: opts.onDepth } : {}),
    onError: (key, err, retryInMs) => {
      if (queue.shuttingDown) return; // cancelled: nothing is retried
      opts.log.warn(opts.failure, { ...opts.fields(key), error: describeApiError(err), retryInMs });
    },
  });
  return queue;
}
