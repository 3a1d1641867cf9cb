// A manual clock for the code that takes a Clock (operator/kube/clock.ts): time moves only when a
// test calls advance(), so "nothing happened before T" is proved without sleeping.
import type { Clock } from '../../operator/kube/clock.ts';

interface Timer {
  at: number;
  fire: () => void;
}

export class ManualClock implements Clock {
  private current: number;
  private timers: Timer[] = [];

  constructor(start = 1_000_000) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const timer: Timer = { at: this.current + Math.max(0, ms), fire: resolve };
      this.timers.push(timer);
      signal?.addEventListener(
        'abort',
        () => {
          this.timers = this.timers.filter((t) => t !== timer);
          resolve();
        },
        { once: true },
      );
    });
  }

  timeout(ms: number): AbortSignal {
    const controller = new AbortController();
    this.timers.push({
      at: this.current + Math.max(0, ms),
      fire: () => controller.abort(new DOMException('the deadline passed', 'TimeoutError')),
    });
    return controller.signal;
  }

  setTimer(ms: number, fn: () => void): () => void {
    const timer: Timer = { at: this.current + Math.max(0, ms), fire: fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  /** Timers still pending. */
  get pending(): number {
    return this.timers.length;
  }

  /**
   * Moves time forward by `ms`, firing every timer due on the way in order, and lets the promise
   * chains each one starts run before moving on.
   */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    await settle();
    for (;;) {
      const due = this.timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.current = Math.max(this.current, due.at);
      due.fire();
      await settle();
    }
    this.current = target;
    await settle();
  }
}

/** Lets pending promise callbacks (and the ones they queue) run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
}
