/**
 * Exponential backoff with a cap: base, 2*base, 4*base, ... never above max. Pure, so the work
 * queue, the informer restarts and the leader elector all share one tested rule.
 */
export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
}

/** Delay before retry number `failures` (1 = first retry). */
export function backoffDelay(failures: number, opts: BackoffOptions): number {
  if (failures <= 0) return 0;
  // 2 ** 40 already exceeds any sane cap; clamping the exponent avoids Infinity.
  const exp = Math.min(failures - 1, 40);
  return Math.min(opts.baseMs * 2 ** exp, opts.maxMs);
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
