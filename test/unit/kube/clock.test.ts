// The production clock's own edges (the manual clock stands in for it elsewhere).
import { describe, expect, it } from 'vitest';
import { boundedSignal, systemClock } from '../../../operator/kube/clock.ts';

describe('systemClock', () => {
  it('takes a deadline with a fraction of a millisecond (as computed from its monotonic now)', async () => {
    const start = systemClock.now();
    expect(Number.isInteger(start)).toBe(false); // performance.now has fractions, so differences do
    const signal = systemClock.timeout(20.4);
    expect(signal.aborted).toBe(false);
    await new Promise((r) => signal.addEventListener('abort', r, { once: true }));
    expect((signal.reason as DOMException).name).toBe('TimeoutError');
    expect(systemClock.now() - start).toBeGreaterThanOrEqual(20);
    // A renew deadline's remainder, as the leader computes it.
    expect(() => boundedSignal(systemClock, 7_868.153, new AbortController().signal)).not.toThrow();
  });
});
