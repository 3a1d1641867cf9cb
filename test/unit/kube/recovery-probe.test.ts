// The recovery probe on a manual clock, with the real breaker (pure logic): while the breaker is
// open it asks after 1 s, then after 2 s and every 4 s, one check at a time, each bounded; a ready
// answer closes the breaker (and so fires its recovery listeners); it never asks while the breaker is closed or while the
// API server is throttling (429). The real GET /readyz is exercised by the fault suite.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../operator/kube/client.ts';
import { ApiHealth } from '../../../operator/kube/health.ts';
import { RecoveryProbe } from '../../../operator/kube/recovery-probe.ts';
import { ManualClock } from '../../support/clock.ts';

const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });

function setup() {
  const clock = new ManualClock();
  const t0 = clock.now();
  const health = new ApiHealth({ backoff: { baseMs: 1_000, maxMs: 30_000 }, now: () => clock.now() });
  const asked: number[] = [];
  let answer: 'ready' | 'not ready' | 'refused' | 'hang' = 'refused';
  const probe = new RecoveryProbe({
    health,
    clock,
    check: (signal) => {
      asked.push(clock.now() - t0);
      if (answer === 'hang')
        return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      if (answer === 'refused') return Promise.reject(refused());
      return Promise.resolve(answer === 'ready');
    },
  });
  let recovered = 0;
  health.onRecover(() => (recovered += 1));
  return {
    clock,
    health,
    probe,
    asked,
    recovered: () => recovered,
    answer: (a: typeof answer) => (answer = a),
  };
}

describe('RecoveryProbe', () => {
  it('asks nothing while the breaker is closed', async () => {
    const { clock, asked, probe } = setup();
    await clock.advance(60_000);
    expect(asked).toEqual([]);
    expect(clock.pending).toBe(0);
    probe.stop();
  });

  it('asks after 1 s, then on a doubling delay capped at 4 s, and closes the breaker at the first ready answer', async () => {
    const { clock, health, asked, recovered, answer, probe } = setup();
    health.observe(refused());
    await clock.advance(999);
    expect(asked).toEqual([]);
    await clock.advance(1);
    expect(asked).toEqual([1_000]);
    // Real requests keep failing meanwhile (the breaker's own delay doubles up to 30 s).
    health.observe(refused());
    await clock.advance(10_000);
    expect(asked).toEqual([1_000, 3_000, 7_000, 11_000]); // +2 s, +4 s, then every 4 s
    answer('not ready'); // /readyz 500 while the API server starts
    await clock.advance(4_000);
    expect(asked).toHaveLength(5);
    expect(health.state).not.toBe('closed');
    answer('ready');
    await clock.advance(3_999);
    expect(recovered()).toBe(0); // not before the next check
    await clock.advance(1);
    expect(asked).toEqual([1_000, 3_000, 7_000, 11_000, 15_000, 19_000]);
    expect(health.state).toBe('closed');
    expect(recovered()).toBe(1);
    // Closed: no more checks, no timer left.
    await clock.advance(10_000);
    expect(asked).toHaveLength(6);
    expect(clock.pending).toBe(0);
    // A new outage starts again at 1 s.
    health.observe(refused());
    await clock.advance(1_000);
    expect(asked).toEqual([1_000, 3_000, 7_000, 11_000, 15_000, 19_000, 30_000]);
    probe.stop();
  });

  it('bounds a check that hangs, and has one in flight at a time', async () => {
    const { clock, health, asked, answer, probe } = setup();
    answer('hang');
    health.observe(refused());
    await clock.advance(1_000);
    expect(asked).toEqual([1_000]);
    await clock.advance(1_999);
    expect(asked).toEqual([1_000]); // the first is still in flight
    await clock.advance(1); // cut at 2 s (3 s on the clock), the next one 2 s later
    answer('ready');
    await clock.advance(1_999);
    expect(asked).toEqual([1_000]);
    await clock.advance(1);
    expect(asked).toEqual([1_000, 5_000]);
    expect(health.state).toBe('closed');
    probe.stop();
  });

  it('does not ask while the API server is throttling (429); a real answer still closes the breaker', async () => {
    const { clock, health, asked, recovered, answer, probe } = setup();
    answer('ready');
    health.observe(new ApiError(429, { message: 'too many requests' }));
    expect(health.throttled).toBe(true);
    await clock.advance(5_000);
    expect(asked).toEqual([]);
    expect(health.state).not.toBe('closed');
    health.observe(); // a write got through
    expect(recovered()).toBe(1);
    expect(health.throttled).toBe(false);
    await clock.advance(5_000);
    expect(clock.pending).toBe(0);
    probe.stop();
  });

  it('stop() cancels the pending check', async () => {
    const { clock, health, asked, probe } = setup();
    health.observe(refused());
    probe.stop();
    await clock.advance(5_000);
    expect(asked).toEqual([]);
    expect(clock.pending).toBe(0);
  });
});
