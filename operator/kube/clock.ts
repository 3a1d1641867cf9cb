/**
 * Time as a dependency. Where timing is logic (the leader's renew deadline, backoff, requeues),
 * the code asks a Clock instead of Date.now and the global timers, so a unit test can drive it
 * with a manual clock and prove both "this happened at exactly T" and "nothing happened before
 * T" without sleeping.
 */
import { setTimeout as sleepFor } from 'node:timers/promises';

export interface Clock {
  /** Milliseconds on a monotonic-enough scale (only differences are used). */
  now(): number;
  /** Resolves after `ms`, or as soon as `signal` aborts (never rejects). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** A signal that aborts after `ms` with a TimeoutError. */
  timeout(ms: number): AbortSignal;
  /** Calls `fn` once after `ms` (never keeping the process alive); returns the cancel. */
  setTimer(ms: number, fn: () => void): () => void;
}

export const systemClock: Clock = {
  // Monotonic (performance.now on the epoch's scale), like the monotonic reading of Go's
  // time.Now that client-go's deadlines use: a wall-clock step (NTP, a VM resumed) neither
  // stretches nor cuts a lease deadline, a backoff or a dedupe window.
  now: () => performance.timeOrigin + performance.now(),
  sleep: (ms, signal) => sleepFor(Math.max(0, ms), undefined, { signal }).catch(() => {}),
  // AbortSignal.timeout takes whole milliseconds only (it throws ERR_OUT_OF_RANGE otherwise), and
  // deadlines computed from the monotonic now() have fractions: round up, never cut early.
  timeout: (ms) => AbortSignal.timeout(Math.max(0, Math.ceil(ms))),
  setTimer: (ms, fn) => {
    const timer = setTimeout(fn, Math.max(0, ms));
    timer.unref();
    return () => clearTimeout(timer);
  },
};

/** A signal that aborts when `outer` aborts or when `ms` have passed on `clock`. */
export function boundedSignal(clock: Clock, ms: number, outer?: AbortSignal): AbortSignal {
  const deadline = clock.timeout(ms);
  return outer ? AbortSignal.any([outer, deadline]) : deadline;
}
