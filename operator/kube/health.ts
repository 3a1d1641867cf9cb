/**
 * Whether the API server is reachable, as a circuit breaker fed by the outcome of every request
 * the client makes. When the API server goes away (connection refused or reset, no answer in
 * time) or says it cannot serve (429, 500, 502, 503, 504), there is no point in every worker
 * trying its own write and failing: the breaker opens, the work queue starts nothing for a
 * backoff delay, then lets one reconcile through as a probe (recovery-probe.ts asks /readyz once
 * a second meanwhile). The first answer that is not an outage closes it again (that may be any
 * request: an informer's relist counts too).
 *
 * Without it, a 10 s outage during a burst of 200 AgentCards cost 184 ConfigMap write attempts
 * that could not succeed, each key failing on its own backoff schedule (docs/RELIABILITY.md).
 * client-go has the same two layers: a per-item backoff in the work queue and, for a server
 * that pushes back, the client's own rate limit and Retry-After handling.
 *
 * The clock is injected (`now`), so the state machine is tested without waiting.
 */
import { Backoff, type BackoffOptions } from './backoff.ts';
import { ApiError } from './client.ts';

/** HTTP statuses that mean "the API server cannot serve now", not "this request is wrong". */
const OUTAGE_STATUSES = new Set([429, 500, 502, 503, 504]);

/**
 * Whether an error means the API server is unavailable: a status above, or no HTTP answer at all
 * (a connection error or a timeout). An abort by the caller is not an outage.
 */
export function isOutage(err: unknown): boolean {
  if (err instanceof ApiError) return OUTAGE_STATUSES.has(err.statusCode);
  if (err instanceof Error && (err.name === 'AbortError' || err.name === 'RequestAbortedError')) return false;
  // Errors from our own code (a parse failure, a bug) are not the server's fault.
  return err instanceof Error && isNetworkError(err);
}

function isNetworkError(err: Error): boolean {
  const code = (err as { code?: unknown }).code ?? (err.cause as { code?: unknown } | undefined)?.code;
  // System errors (ECONNREFUSED, ECONNRESET, ETIMEDOUT, EAI_AGAIN, ...) and undici's socket and
  // timeout errors; not Node's own ERR_* codes, which are bugs or bad settings, not an outage.
  if (typeof code === 'string' && /^(E(?!RR_)[A-Z_]+|UND_ERR_\w+)$/.test(code)) return true;
  return /socket|ECONNRE|EPIPE|ETIMEDOUT|other side closed|terminated/i.test(err.message);
}

export type CircuitState = 'closed' | 'open' | 'probing';

export interface ApiHealthOptions {
  backoff?: BackoffOptions;
  now?: () => number;
}

export class ApiHealth {
  private readonly backoff: Backoff;
  private readonly now: () => number;
  private openUntil = 0;
  private tripped = false;
  private readonly listeners: Array<() => void> = [];
  private readonly tripListeners: Array<() => void> = [];
  private lastThrottled = false;
  /** Times the breaker opened (after being closed), for the metric. */
  opened = 0;

  constructor(opts: ApiHealthOptions = {}) {
    this.backoff = new Backoff(opts.backoff ?? { baseMs: 1_000, maxMs: 30_000 });
    this.now = opts.now ?? Date.now;
  }

  get state(): CircuitState {
    if (!this.tripped) return 'closed';
    return this.now() < this.openUntil ? 'open' : 'probing';
  }

  /** Milliseconds until work may start again (0 unless open). */
  waitMs(): number {
    return this.state === 'open' ? this.openUntil - this.now() : 0;
  }

  /** How many runs may be in flight: all while closed, one probe while probing, none while open. */
  limit(concurrency: number): number {
    const state = this.state;
    return state === 'closed' ? concurrency : state === 'probing' ? 1 : 0;
  }

  /** Called when the breaker closes (the API server answers again). */
  onRecover(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Called when the breaker opens after being closed (recovery-probe.ts starts asking then). */
  onTrip(listener: () => void): void {
    this.tripListeners.push(listener);
  }

  /**
   * Whether the last outage was the API server pushing back (429) rather than being away: its
   * health endpoints answer then (API Priority and Fairness exempts them), so they say nothing
   * about whether a write would be taken.
   */
  get throttled(): boolean {
    return this.tripped && this.lastThrottled;
  }

  /** Records the outcome of one request: an error (or undefined for an answer that is fine). */
  observe(err?: unknown): void {
    if (err === undefined || !isOutage(err)) this.success();
    else this.failure(err);
  }

  /** A request got an answer that is not an outage. */
  success(): void {
    if (!this.tripped) return;
    this.tripped = false;
    this.openUntil = 0;
    this.backoff.reset();
    for (const listener of this.listeners) listener();
  }

  /**
   * A request met an outage. Closed: open for the first delay. Probing: the probe failed, open
   * for a doubled delay. Open: a request that was already in flight; nothing changes.
   */
  failure(err?: unknown): void {
    const state = this.state;
    if (state === 'open') return;
    this.lastThrottled = err instanceof ApiError && err.statusCode === 429;
    this.tripped = true;
    this.openUntil = this.now() + this.backoff.next();
    if (state === 'closed') {
      this.opened += 1;
      for (const listener of this.tripListeners) listener();
    }
  }
}
