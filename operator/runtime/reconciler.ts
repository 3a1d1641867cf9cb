/**
 * A reconciler, and what the builder (builder.ts) makes of it:
 * - its reconcile loop (`leader`, manager.ts): waits for the caches (cache.ts), queues every key
 *   once, starts the periodic resync, and runs `reconcile(key, signal)` from the work queue.
 *   `signal` aborts when the loop is cancelled (lost leadership, or shutdown past its budget):
 *   every API call the reconcile makes takes it, so cancelled work ends at once instead of racing
 *   a timer.
 * - its work queue (`reconcileQueue`): the reconcile with the loop's signal, the outage gate, the
 *   metrics (workqueue_*, controller_runtime_reconcile_*, labelled by the controller's name) and
 *   one warning per failed run with the backoff before its retry.
 */
import { WorkQueue, type HandlerResult, type QueueGate, type QueueObserver } from './workqueue.ts';
import type { BackoffOptions } from '../kube/backoff.ts';
import type { Clock } from '../kube/clock.ts';
import { describeApiError } from '../kube/errors.ts';
import type { Logger } from '../log.ts';
import type { StartupView } from './startup.ts';

/**
 * What a controller adds to the runtime (builder.ts builds the rest): the reconcile of one key,
 * and every key it has, at start and for the periodic resync.
 */
export interface Reconciler {
  reconcile(key: string, signal: AbortSignal): Promise<HandlerResult>;
  /** Every key; `view` puts it in the start-up lane (startup.ts), none: `low`. */
  keys(): Iterable<{ key: string; view?: StartupView }>;
  /** Called once the loop has queued every key (for one log line). */
  started?(counts: { high: number; low: number }): void;
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

export interface ReconcileQueueOptions {
  reconcile: (key: string, signal: AbortSignal) => Promise<HandlerResult>;
  /** The loop's signal, handed to every reconcile (cancelled on lost leadership or shutdown). */
  work: WorkSignal;
  concurrency: number;
  /** The retry backoff; default the queue's (1 s doubling to 5 min). */
  backoff?: BackoffOptions;
  /** The API server's health (kube/health.ts): holds the queue during an outage. */
  gate?: QueueGate;
  /** The controller's metrics: `metrics.runtime.controller(<name>)` (runtime/metrics.ts). */
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
