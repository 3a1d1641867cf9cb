/**
 * The controller's work queue, keyed by "namespace/name" (the client-go workqueue semantics):
 * - a key queued several times is processed once (dedupe while queued);
 * - a key is never processed by two workers at once; a key added while it is being processed is
 *   processed once more after the current run ends;
 * - at most `concurrency` keys are processed at the same time;
 * - a failed key is retried after a per-key exponential backoff (capped); success forgets it;
 * - shutdown stops taking work and waits for the runs in flight;
 * - an optional gate (kube/health.ts's circuit breaker) holds every key while the API server is
 *   away, then lets one through as a probe, so an outage costs a few failed writes rather than
 *   one per key and retry.
 */
import { backoffDelay, type BackoffOptions } from '../kube/backoff.ts';
import { systemClock, type Clock } from '../kube/clock.ts';

/** What a handler may ask for: run this key again after a delay even though it succeeded. */
export type HandlerResult = void | { requeueAfterMs?: number };
export type Handler = (key: string) => Promise<HandlerResult>;

/** What the queue asks before starting work (kube/health.ts's ApiHealth is one). */
export interface QueueGate {
  /** How many runs may be in flight now, given the configured concurrency. */
  limit(concurrency: number): number;
  /** Milliseconds until the limit may rise again (0: it rises when a run ends or on recovery). */
  waitMs(): number;
  /** Calls `listener` when the gate opens fully. */
  onRecover(listener: () => void): void;
}

export interface WorkQueueOptions {
  concurrency: number;
  gate?: QueueGate;
  backoff?: BackoffOptions;
  /** Called with the number of queued (not yet started) keys whenever it changes. */
  onDepth?: (depth: number) => void;
  /** Called when a handler throws, with the delay before its retry. */
  onError?: (key: string, err: unknown, retryInMs: number) => void;
  /** Time for delayed adds and the resync (a manual clock in tests). */
  clock?: Clock;
}

export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 1_000, maxMs: 5 * 60_000 };

export class WorkQueue {
  private readonly handler: Handler;
  private readonly concurrency: number;
  private readonly backoff: BackoffOptions;
  private readonly onDepth: (depth: number) => void;
  private readonly onError: (key: string, err: unknown, retryInMs: number) => void;

  /** Keys waiting for a worker, in arrival order (a Set keeps insertion order and dedupes). */
  private readonly queued = new Set<string>();
  /** Keys a worker is running now. */
  private readonly processing = new Set<string>();
  /** Keys added while they were being processed: queued again when their run ends. */
  private readonly dirty = new Set<string>();
  /** Delayed adds (backoff retries, requeue-after, resync are not delayed). */
  private readonly delayed = new Map<string, { at: number; cancel: () => void }>();
  /** Consecutive failures per key, for the backoff. */
  private readonly failures = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();
  private idleWaiters: Array<() => void> = [];
  private readonly clock: Clock;
  private cancelResync: (() => void) | undefined;
  private readonly gate: QueueGate | undefined;
  /** Cancels the pump scheduled for when the gate's wait ends. */
  private cancelGateTimer: (() => void) | undefined;
  private stopping = false;
  private lastDepth = 0;

  constructor(handler: Handler, opts: WorkQueueOptions) {
    if (!Number.isInteger(opts.concurrency) || opts.concurrency < 1) {
      throw new RangeError(`work queue concurrency must be a positive integer, got ${opts.concurrency}`);
    }
    this.handler = handler;
    this.concurrency = opts.concurrency;
    this.backoff = opts.backoff ?? DEFAULT_BACKOFF;
    this.onDepth = opts.onDepth ?? (() => {});
    this.onError = opts.onError ?? (() => {});
    this.clock = opts.clock ?? systemClock;
    this.gate = opts.gate;
    this.gate?.onRecover(() => this.pump());
  }

  /** Queues a key now. Ignored after shutdown started. */
  add(key: string): void {
    if (this.stopping) return;
    if (this.processing.has(key)) this.dirty.add(key);
    else this.queued.add(key);
    this.pump();
  }

  /** Queues a key after `ms`; an earlier pending delayed add of the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.stopping) return;
    if (ms <= 0) return this.add(key);
    const at = this.clock.now() + ms;
    const existing = this.delayed.get(key);
    if (existing && existing.at <= at) return;
    existing?.cancel();
    const cancel = this.clock.setTimer(ms, () => {
      this.delayed.delete(key);
      this.add(key);
    });
    this.delayed.set(key, { at, cancel });
  }

  /** Forgets a key's failure history (its next failure starts the backoff from the base). */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** Number of consecutive failures recorded for a key. */
  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }

  /** Keys waiting for a worker (the `workqueue_depth` metric). */
  get depth(): number {
    return this.queued.size;
  }

  /** Keys being processed now. */
  get active(): number {
    return this.processing.size;
  }

  /** Adds every key that `listKeys` returns, every `intervalMs`. */
  startResync(intervalMs: number, listKeys: () => Iterable<string>): void {
    this.stopResync();
    if (intervalMs <= 0) return;
    const tick = () => {
      for (const key of listKeys()) this.add(key);
      this.cancelResync = this.clock.setTimer(intervalMs, tick);
    };
    this.cancelResync = this.clock.setTimer(intervalMs, tick);
  }

  private stopResync(): void {
    this.cancelResync?.();
    this.cancelResync = undefined;
  }

  /** Resolves when nothing is queued or running (delayed adds do not count). */
  idle(): Promise<void> {
    if (this.queued.size === 0 && this.processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stops taking work: queued and delayed keys are dropped, the resync stops, and the returned
   * promise resolves when the runs in flight have finished (their errors are not retried).
   */
  async shutdown(): Promise<void> {
    this.stopping = true;
    this.stopResync();
    this.cancelGateTimer?.();
    this.cancelGateTimer = undefined;
    for (const { cancel } of this.delayed.values()) cancel();
    this.delayed.clear();
    this.queued.clear();
    this.dirty.clear();
    this.reportDepth();
    await Promise.allSettled([...this.inFlight]);
  }

  get shuttingDown(): boolean {
    return this.stopping;
  }

  private pump(): void {
    const limit = this.gate ? this.gate.limit(this.concurrency) : this.concurrency;
    while (!this.stopping && this.processing.size < limit && this.queued.size > 0) {
      const key = this.queued.values().next().value as string;
      this.queued.delete(key);
      this.start(key);
    }
    if (limit === 0 && this.queued.size > 0 && !this.stopping) this.pumpAfterGate();
    this.reportDepth();
    this.notifyIdle();
  }

  private start(key: string): void {
    this.processing.add(key);
    // This run covers any delayed re-add of the key that was still pending.
    const pending = this.delayed.get(key);
    if (pending) {
      pending.cancel();
      this.delayed.delete(key);
    }
    const run = this.run(key).finally(() => {
      this.inFlight.delete(run);
      this.processing.delete(key);
      if (this.dirty.delete(key) && !this.stopping) this.queued.add(key);
      this.pump();
    });
    this.inFlight.add(run);
  }

  private async run(key: string): Promise<void> {
    try {
      const result = await this.handler(key);
      this.failures.delete(key);
      if (result && result.requeueAfterMs !== undefined) this.addAfter(key, result.requeueAfterMs);
    } catch (err) {
      const failures = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, failures);
      const delay = backoffDelay(failures, this.backoff);
      this.onError(key, err, delay);
      this.addAfter(key, delay);
    }
  }

  /** Pumps again when the gate's wait is over (one timer at a time). */
  private pumpAfterGate(): void {
    if (this.cancelGateTimer) return;
    this.cancelGateTimer = this.clock.setTimer(Math.max(1, this.gate!.waitMs()), () => {
      this.cancelGateTimer = undefined;
      this.pump();
    });
  }

  private reportDepth(): void {
    if (this.queued.size !== this.lastDepth) {
      this.lastDepth = this.queued.size;
      this.onDepth(this.lastDepth);
    }
  }

  private notifyIdle(): void {
    if (this.queued.size > 0 || this.processing.size > 0 || this.idleWaiters.length === 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
