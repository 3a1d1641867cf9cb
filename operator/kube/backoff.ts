/**
 * Exponential backoff with a cap: base, 2*base, 4*base, ... never above max. Pure, so the work
 * queue, the informer restarts and the leader elector all share one tested rule.
 *
 * Optional jitter spreads the retries of many clients that failed at the same moment (every
 * informer of the process when the API server went away), so that a recovered API server is not
 * asked by all of them in the same instant (AWS Architecture Blog, "Exponential Backoff And
 * Jitter"): `full` waits a random time in [0, delay), `equal` in [delay/2, delay). The random
 * source is injected, so a test fixes it.
 */
export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  /** Default `none`: the exact delays (the work queue's per-key retries, as client-go's). */
  jitter?: 'none' | 'full' | 'equal';
  /** A number in [0, 1); default Math.random. */
  random?: () => number;
}

/** Delay before retry number `failures` (1 = first retry), jittered as `opts.jitter` says. */
export function backoffDelay(failures: number, opts: BackoffOptions): number {
  if (failures <= 0) return 0;
  // 2 ** 40 already exceeds any sane cap; clamping the exponent avoids Infinity.
  const exp = Math.min(failures - 1, 40);
  const delay = Math.min(opts.baseMs * 2 ** exp, opts.maxMs);
  return jittered(delay, opts);
}

/** `delay` spread as `opts.jitter` says (never negative, never above `delay`). */
export function jittered(delay: number, opts: Pick<BackoffOptions, 'jitter' | 'random'>): number {
  const jitter = opts.jitter ?? 'none';
  if (jitter === 'none') return delay;
  // Clamped: a random source outside [0, 1) must not make a negative or longer wait.
  const raw = (opts.random ?? Math.random)();
  const r = Number.isFinite(raw) ? Math.min(Math.max(raw, 0), 1) : 0;
  return Math.floor(jitter === 'full' ? delay * r : delay / 2 + (delay / 2) * r);
}

/** A counter of consecutive failures that yields the next delay. */
export class Backoff {
  private failures = 0;
  private readonly opts: BackoffOptions;
  constructor(opts: BackoffOptions) {
    this.opts = opts;
  }
  /** Records a failure and returns how long to wait before the next attempt. */
  next(): number {
    this.failures += 1;
    return backoffDelay(this.failures, this.opts);
  }
  reset(): void {
    this.failures = 0;
  }
  get attempts(): number {
    return this.failures;
  }
}
