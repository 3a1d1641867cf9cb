/**
 * A reconciler and the two runnables every controller is made of (manager.ts):
 * - its caches (`always`): the access check (access.ts), then the informers, on every replica;
 * - its reconcile loop (`leader`): waits for the caches, queues every key once, starts the
 *   periodic resync, and runs `reconcile(key, signal)` from the work queue. `signal` aborts when
 *   the loop is cancelled (lost leadership, or shutdown past its budget): every API call the
 *   reconcile makes takes it, so cancelled work ends at once instead of racing a timer.
 */
import type { HandlerResult } from '../controller/workqueue.ts';
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
        await Promise.race([
          started,
          new Promise((r) => signal.addEventListener('abort', r, { once: true })),
        ]);
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
