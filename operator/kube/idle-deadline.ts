/**
 * A deadline that moves forward on every sign of life: it aborts its signal once `ms` pass on
 * `clock` without a `touch()`. The informer gives one to each watch, so that a stream that stays
 * open but delivers nothing (a partition that drops packets without closing the connection) is
 * given up after a bounded time instead of when the request's body timeout ends it.
 *
 * One timer at a time: a touch only records the time, and the timer, when it fires early, re-arms
 * itself for what remains (a watch can deliver thousands of events a second).
 */
import type { Clock } from './clock.ts';

export class IdleDeadline {
  private readonly clock: Clock;
  private readonly ms: number;
  private readonly controller = new AbortController();
  private last: number;
  private cancel: (() => void) | undefined;

  constructor(clock: Clock, ms: number) {
    this.clock = clock;
    this.ms = ms;
    this.last = clock.now();
    this.arm(ms);
  }

  /** Aborts once the deadline passes. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Whether the deadline passed. */
  get expired(): boolean {
    return this.controller.signal.aborted;
  }

  /** Something arrived: the deadline starts again from now. */
  touch(): void {
    this.last = this.clock.now();
  }

  /** Cancels the timer (the watch ended for another reason). */
  dispose(): void {
    this.cancel?.();
    this.cancel = undefined;
  }

  private arm(ms: number): void {
    this.cancel = this.clock.setTimer(ms, () => {
      this.cancel = undefined;
      const left = this.last + this.ms - this.clock.now();
      if (left > 0) this.arm(left);
      else this.controller.abort(new DOMException('the watch was silent past its deadline', 'TimeoutError'));
    });
  }
}
