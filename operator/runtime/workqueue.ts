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
 *   one per key and retry;
 * - two priorities, as controller-runtime's priority queue (pkg/controller/priorityqueue) has:
 *   background work (the initial list, the periodic resync, probe verdicts) is queued `low`,
 *   and a key queued `high` (a change someone made) starts before every `low` key. A key queued
 *   at both is queued once, at the higher. At 10,000 AgentCards a resync is ~90 s of reconciles;
 *   a spec change must not wait behind them.
 *
 * - it lets the event loop take a turn (setImmediate) once its runs have kept it for a slice
 *   (10 ms): a reconcile that finds everything in order reads only caches and resolves in
 *   microtasks, so without it a backlog of such keys runs as one unbroken chain; a new leader's
 *   re-plan of 1,000 cards held every socket for 2.5 to 6 s, the first write's request and
 *   response and the Lease renewal with them (docs/scaling.md, "Failover").
 *
 * What it does is reported to an optional QueueObserver (operator/runtime/metrics.ts turns it into
 * client-go's workqueue_* and controller-runtime's controller_runtime_reconcile_* metrics): keys
 * added per lane, how long each waited in its lane and how long its run took, the run's outcome,
 * retries, and, read at scrape time, the depth per lane and the age of the runs in flight. Times
 * come from the queue's clock, so a test measures them exactly.
 */
import { backoffDelay, type BackoffOptions } from '../kube/backoff.ts';
import { systemClock, type Clock } from '../kube/clock.ts';

/** What a handler may ask for: run this key again after a delay even though it succeeded. */
export type HandlerResult = void | { requeueAfterMs?: number };
export type Handler = (key: string) => Promise<HandlerResult>;

/** `high`: a change to act on now; `low`: background work (initial list, resync, probe verdicts). */
export type Priority = 'high' | 'low';

/** How a run ended, as controller-runtime's reconcile_total labels it. */
export type RunOutcome = 'success' | 'error' | 'requeue' | 'requeue_after';

/** The queue's state, read when metrics are scraped. */
export interface QueueStats {
  readonly concurrency: number;
  /** Keys running now. */
  readonly active: number;
  /** Keys waiting in one lane. */
  depthOf(priority: Priority): number;
  /** Total and longest time (ms) the runs in flight have been running, at `now` on the queue's clock. */
  runningMs(): { totalMs: number; longestMs: number };
}

/** What the queue reports as it works (for metrics); every time is in ms on the queue's clock. */
export interface QueueObserver {
  /** The queue exists: its state can be read from now on. */
  bind?(stats: QueueStats): void;
  /** A key entered a lane, or was marked to run again while running (not a key already waiting). */
  added(priority: Priority): void;
  /** A key left its lane for a worker after waiting `waitedMs` since it was added. */
  started(priority: Priority, waitedMs: number): void;
  /** A run ended after `ms`. */
  finished(outcome: RunOutcome, ms: number): void;
  /** A failed key was scheduled again after its backoff. */
  retried(): void;
}

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
  /** Time for delayed adds, the resync and the metrics' durations (a manual clock in tests). */
  clock?: Clock;
  /** Told what the queue does (metrics). */
  observer?: QueueObserver;
}

/**
 * How long the queue's runs may keep the event loop before they let it take a turn. Small enough
 * that a write's response or a Lease renewal waits at most this long behind a backlog; large
 * enough that the turns cost nothing measurable (one setImmediate per slice).
 */
export const EVENT_LOOP_SLICE_MS = 10;

/**
 * Tells the queue when to let the event loop take a turn: a slice starts at the first run since
 * the loop's last turn (a setImmediate marks the turn), and is due once it has lasted `budgetMs`
 * (real time: it is the event loop that is starved, whatever clock the queue runs on).
 */
export class EventLoopSlice {
  private startedAt: number | undefined;
  private readonly budgetMs: number;
  private readonly now: () => number;

  constructor(budgetMs = EVENT_LOOP_SLICE_MS, now: () => number = () => performance.now()) {
    this.budgetMs = budgetMs;
    this.now = now;
  }

  /** Whether the caller should yield (setImmediate) before its next piece of work. */
  due(): boolean {
    const now = this.now();
    if (this.startedAt === undefined) {
      this.startedAt = now;
      setImmediate(() => (this.startedAt = undefined));
      return false;
    }
    return now - this.startedAt >= this.budgetMs;
  }
}

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

const NO_OBSERVER: QueueObserver = { added() {}, started() {}, finished() {}, retried() {} };

export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 1_000, maxMs: 5 * 60_000 };

export class WorkQueue implements QueueStats {
  private readonly handler: Handler;
  readonly concurrency: number;
  private readonly backoff: BackoffOptions;
  private readonly onDepth: (depth: number) => void;
  private readonly onError: (key: string, err: unknown, retryInMs: number) => void;

  /**
   * Keys waiting for a worker, in arrival order per priority (a Map keeps insertion order and
   * dedupes), each with the time it was added. A key is in at most one of the two.
   */
  private readonly queued = { high: new Map<string, number>(), low: new Map<string, number>() };
  /** Keys a worker is running now, with the time each run started. */
  private readonly processing = new Map<string, number>();
  /**
   * Keys added while they were being processed (at the highest priority asked, and when first
   * added): queued again when their run ends.
   */
  private readonly dirty = new Map<string, { priority: Priority; at: number }>();
  private readonly observer: QueueObserver;
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
  private readonly slice = new EventLoopSlice();

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
    this.observer = opts.observer ?? NO_OBSERVER;
    this.observer.bind?.(this);
  }

  /** Queues a key now (default `high`). Ignored after shutdown started. */
  add(key: string, priority: Priority = 'high'): void {
    if (this.stopping) return;
    if (this.processing.has(key)) {
      const dirty = this.dirty.get(key);
      if (!dirty) {
        this.dirty.set(key, { priority, at: this.clock.now() });
        this.observer.added(priority);
      } else if (priority === 'high') dirty.priority = 'high';
    } else this.enqueue(key, priority, this.clock.now());
    this.pump();
  }

  /**
   * Puts a key that is not running in its lane; a `high` add moves a `low` key up (keeping the
   * time it was first added), never down.
   */
  private enqueue(key: string, priority: Priority, at: number): void {
    const waiting = this.queued.high.get(key) ?? this.queued.low.get(key);
    if (waiting === undefined) this.observer.added(priority);
    if (priority === 'high') {
      this.queued.low.delete(key);
      if (!this.queued.high.has(key)) this.queued.high.set(key, waiting ?? at);
    } else if (waiting === undefined) this.queued.low.set(key, at);
  }

  /** Keys waiting in one lane. */
  depthOf(priority: Priority): number {
    return this.queued[priority].size;
  }

  /** Total and longest time the runs in flight have been running, now. */
  runningMs(): { totalMs: number; longestMs: number } {
    const now = this.clock.now();
    let totalMs = 0;
    let longestMs = 0;
    for (const started of this.processing.values()) {
      totalMs += now - started;
      longestMs = Math.max(longestMs, now - started);
    }
    return { totalMs, longestMs };
  }

  /** Queues a key after `ms`; an earlier pending delayed add of the same key wins. */
  addAfter(key: string, ms: number, priority: Priority = 'high'): void {
    if (this.stopping) return;
    if (ms <= 0) return this.add(key, priority);
    const at = this.clock.now() + ms;
    const existing = this.delayed.get(key);
    if (existing && existing.at <= at) return;
    existing?.cancel();
    const cancel = this.clock.setTimer(ms, () => {
      this.delayed.delete(key);
      this.add(key, priority);
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
    return this.queued.high.size + this.queued.low.size;
  }

  /** Keys being processed now. */
  get active(): number {
    return this.processing.size;
  }

  /** Adds every key that `listKeys` returns, every `intervalMs`, at `low` priority. */
  startResync(intervalMs: number, listKeys: () => Iterable<string>): void {
    this.stopResync();
    if (intervalMs <= 0) return;
    const tick = () => {
      for (const key of listKeys()) this.add(key, 'low');
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
    if (this.depth === 0 && this.processing.size === 0) return Promise.resolve();
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
    this.queued.high.clear();
    this.queued.low.clear();
    this.dirty.clear();
    this.reportDepth();
    await Promise.allSettled([...this.inFlight]);
  }

  get shuttingDown(): boolean {
    return this.stopping;
  }

  private pump(): void {
    const limit = this.gate ? this.gate.limit(this.concurrency) : this.concurrency;
    while (!this.stopping && this.processing.size < limit && this.depth > 0) {
      const priority: Priority = this.queued.high.size > 0 ? 'high' : 'low';
      const lane = this.queued[priority];
      const [key, addedAt] = lane.entries().next().value as [string, number];
      lane.delete(key);
      this.start(key, priority, addedAt);
    }
    if (limit === 0 && this.depth > 0 && !this.stopping) this.pumpAfterGate();
    this.reportDepth();
    this.notifyIdle();
  }

  private start(key: string, priority: Priority, addedAt: number): void {
    const now = this.clock.now();
    this.observer.started(priority, now - addedAt);
    this.processing.set(key, now);
    // This run covers any delayed re-add of the key that was still pending.
    const pending = this.delayed.get(key);
    if (pending) {
      pending.cancel();
      this.delayed.delete(key);
    }
    const run = this.run(key, priority).finally(() => {
      this.inFlight.delete(run);
      this.processing.delete(key);
      const again = this.dirty.get(key);
      this.dirty.delete(key);
      if (again && !this.stopping) this.requeueDirty(key, again.priority, again.at);
      this.pump();
    });
    this.inFlight.add(run);
  }

  /** A key added during its run goes to its lane (counted as added then, not again now). */
  private requeueDirty(key: string, priority: Priority, at: number): void {
    if (priority === 'high') this.queued.high.set(key, at);
    else this.queued.low.set(key, at);
  }

  /** Runs the handler; a retry or requeue-after keeps the priority the run had. */
  private async run(key: string, priority: Priority): Promise<void> {
    // Checked before the run, not after: the common case (no backlog) starts it synchronously.
    if (this.slice.due()) {
      await yieldToEventLoop();
      if (this.stopping) return; // shut down during the turn: dropped like the queued keys
    }
    const started = this.clock.now();
    let outcome: RunOutcome = 'success';
    try {
      const result = await this.handler(key);
      this.failures.delete(key);
      if (result && result.requeueAfterMs !== undefined) {
        outcome = result.requeueAfterMs > 0 ? 'requeue_after' : 'requeue';
        this.addAfter(key, result.requeueAfterMs, priority);
      }
    } catch (err) {
      outcome = 'error';
      const failures = (this.failures.get(key) ?? 0) + 1;
      this.failures.set(key, failures);
      const delay = backoffDelay(failures, this.backoff);
      this.onError(key, err, delay);
      if (!this.stopping) this.observer.retried();
      this.addAfter(key, delay, priority);
    } finally {
      this.observer.finished(outcome, this.clock.now() - started);
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
    if (this.depth !== this.lastDepth) {
      this.lastDepth = this.depth;
      this.onDepth(this.lastDepth);
    }
  }

  private notifyIdle(): void {
    if (this.depth > 0 || this.processing.size > 0 || this.idleWaiters.length === 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
