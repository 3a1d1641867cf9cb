// The shared backoff rule with jitter, on a fixed random source: the spread is exactly where the
// rule puts it, and a source outside [0, 1) cannot make a negative or longer wait.
import { describe, expect, it } from 'vitest';
import { Backoff, backoffDelay, jittered } from '../../../operator/kube/backoff.ts';

/** A random source that returns the given values in turn. */
const sequence = (...values: number[]) => {
  let i = 0;
  return () => values[i++ % values.length]!;
};

describe('backoff jitter', () => {
  const opts = { baseMs: 1_000, maxMs: 8_000 };

  it('none (the default) keeps the exact doubling', () => {
    expect([1, 2, 3, 4, 5].map((n) => backoffDelay(n, opts))).toEqual([1_000, 2_000, 4_000, 8_000, 8_000]);
    expect([1, 2].map((n) => backoffDelay(n, { ...opts, jitter: 'none', random: () => 0 }))).toEqual([
      1_000, 2_000,
    ]);
  });

  it('full waits a share of the delay, from nothing up to it', () => {
    const full = { ...opts, jitter: 'full' as const };
    expect(backoffDelay(3, { ...full, random: () => 0 })).toBe(0);
    expect(backoffDelay(3, { ...full, random: () => 0.25 })).toBe(1_000);
    expect(backoffDelay(3, { ...full, random: () => 0.999 })).toBe(3_996);
    expect(backoffDelay(9, { ...full, random: () => 0.5 })).toBe(4_000); // half the cap
  });

  it('equal waits at least half the delay', () => {
    const equal = { ...opts, jitter: 'equal' as const };
    expect(backoffDelay(3, { ...equal, random: () => 0 })).toBe(2_000);
    expect(backoffDelay(3, { ...equal, random: () => 0.5 })).toBe(3_000);
    expect(backoffDelay(3, { ...equal, random: () => 0.999 })).toBe(3_998);
  });

  it('clamps a random source outside [0, 1)', () => {
    expect(jittered(1_000, { jitter: 'full', random: () => -3 })).toBe(0);
    expect(jittered(1_000, { jitter: 'full', random: () => 7 })).toBe(1_000);
    expect(jittered(1_000, { jitter: 'equal', random: () => Number.NaN })).toBe(500);
  });

  it('spreads the clients that failed together over the window', () => {
    // 100 clients with an even spread of random values: their first retries cover [500, 1000).
    const delays = Array.from({ length: 100 }, (_, i) =>
      backoffDelay(1, { ...opts, jitter: 'equal', random: () => i / 100 }),
    );
    expect(Math.min(...delays)).toBe(500);
    expect(Math.max(...delays)).toBe(995);
    expect(new Set(delays).size).toBe(100);
  });

  it('Backoff counts failures and jitters each delay', () => {
    const b = new Backoff({ ...opts, jitter: 'full', random: sequence(0.5, 0.25, 0.5) });
    expect([b.next(), b.next(), b.next()]).toEqual([500, 500, 2_000]);
    b.reset();
    expect(b.attempts).toBe(0);
  });
});
