// The startup list-access check's retries (runtime/access.ts): the informers' backoff, with
// equal jitter, on the injected clock and random source.
import { describe, expect, it } from 'vitest';
import { ApiError, type KubeClient } from '../../../operator/kube/client.ts';
import { createLogger } from '../../../operator/log.ts';
import { checkListAccess } from '../../../operator/runtime/access.ts';
import { StartupError } from '../../../operator/runtime/manager.ts';
import { ManualClock } from '../../support/clock.ts';

/** A client whose LISTs fail with `status` `failures` times, then answer; it records when. */
function listing(clock: ManualClock, failures: number, status = 503) {
  const at: number[] = [];
  const client = {
    request: async () => {
      at.push(clock.now() - start);
      if (at.length <= failures) throw new ApiError(status, { message: 'unavailable' });
      return { items: [] };
    },
  } as unknown as KubeClient;
  const start = clock.now();
  return { client, at };
}

const source = {
  what: 'agentcards in namespace shop',
  path: '/apis/agentcard.dev/v1alpha1/namespaces/shop/agentcards',
};
const log = createLogger({}, { level: 'error' });

describe('checkListAccess', () => {
  it('retries on the random source equal jitter gives, and nothing before it', async () => {
    const clock = new ManualClock();
    const { client, at } = listing(clock, 2);
    const done = checkListAccess(client, [source], {
      signal: new AbortController().signal,
      log,
      clock,
      backoff: { baseMs: 1_000, maxMs: 30_000, jitter: 'equal', random: () => 0.5 },
    });
    let passed = false;
    void done.then(() => (passed = true));
    await clock.advance(749);
    expect(at).toEqual([0]);
    await clock.advance(1); // 1 s with equal jitter at 0.5: 750 ms
    await clock.advance(1_500); // then 2 s: 1.5 s
    expect(at).toEqual([0, 750, 2_250]);
    expect(passed).toBe(true);
  });

  it('spreads the retries of checks that failed together by default', async () => {
    const clock = new ManualClock();
    const checks = Array.from({ length: 20 }, () => listing(clock, 1));
    const signal = new AbortController().signal;
    const all = Promise.all(
      checks.map(({ client }) => checkListAccess(client, [source], { signal, log, clock })),
    );
    await clock.advance(1_000);
    await all;
    const retries = checks.map(({ at }) => at[1]!);
    // Equal jitter on a 1 s base: each retry in [500, 1000], and not all at once.
    expect(Math.min(...retries)).toBeGreaterThanOrEqual(500);
    expect(Math.max(...retries)).toBeLessThanOrEqual(1_000);
    expect(new Set(retries).size).toBeGreaterThan(1);
  });

  it('ends at once on an answer a restart would get again, naming the collection', async () => {
    const clock = new ManualClock();
    const { client, at } = listing(clock, 1, 403);
    await expect(
      checkListAccess(client, [source], { signal: new AbortController().signal, log, clock }),
    ).rejects.toThrow(StartupError);
    expect(at).toEqual([0]);
  });
});
