import { afterEach, describe, expect, it, vi } from 'vitest';
import { WorkQueue } from '../../../operator/runtime/workqueue.ts';
import { ApiError } from '../../../operator/kube/client.ts';
import { ApiHealth, isOutage } from '../../../operator/kube/health.ts';

const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' });

describe('isOutage', () => {
  it('takes connection errors, 429 and 5xx as an outage, and nothing else', () => {
    expect(isOutage(refused())).toBe(true);
    expect(isOutage(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }))).toBe(true);
    for (const code of [429, 500, 502, 503, 504]) expect(isOutage(new ApiError(code, undefined))).toBe(true);
    for (const code of [400, 403, 404, 409, 410, 422])
      expect(isOutage(new ApiError(code, undefined))).toBe(false);
    expect(isOutage(Object.assign(new Error('aborted'), { name: 'AbortError' }))).toBe(false);
    expect(isOutage(new Error("the API server's answer to GET /x is not JSON"))).toBe(false);
    expect(isOutage('a string')).toBe(false);
    expect(isOutage(Object.assign(new TypeError('bad'), { code: 'ERR_INVALID_ARG_TYPE' }))).toBe(false);
    expect(isOutage(Object.assign(new Error('getaddrinfo EAI_AGAIN'), { code: 'EAI_AGAIN' }))).toBe(true);
  });
});

describe('ApiHealth', () => {
  it('opens on an outage, probes after the delay, doubles on a failed probe, closes on an answer', () => {
    let now = 0;
    const h = new ApiHealth({ backoff: { baseMs: 1_000, maxMs: 4_000 }, now: () => now });
    const recovered = vi.fn();
    h.onRecover(recovered);
    expect(h.state).toBe('closed');
    expect(h.limit(8)).toBe(8);

    h.observe(refused());
    expect(h.state).toBe('open');
    expect(h.limit(8)).toBe(0);
    expect(h.waitMs()).toBe(1_000);
    // Requests that were already in flight fail too: the delay does not grow for them.
    h.observe(new ApiError(503, undefined));
    expect(h.waitMs()).toBe(1_000);

    now = 1_000;
    expect(h.state).toBe('probing');
    expect(h.limit(8)).toBe(1);
    h.observe(refused()); // the probe failed
    expect(h.waitMs()).toBe(2_000);
    now = 3_000;
    h.observe(refused());
    expect(h.waitMs()).toBe(4_000);
    now = 7_000;
    h.observe(refused());
    expect(h.waitMs()).toBe(4_000); // capped

    now = 11_000;
    h.observe(new ApiError(404, undefined)); // an answer, even a 404, means the server is back
    expect(h.state).toBe('closed');
    expect(recovered).toHaveBeenCalledTimes(1);
    expect(h.opened).toBe(1);
    // The next outage starts from the base delay again.
    h.observe(refused());
    expect(h.waitMs()).toBe(1_000);
    expect(h.opened).toBe(2);
  });
});

describe('WorkQueue with the ApiHealth gate', () => {
  afterEach(() => vi.useRealTimers());

  it('starts nothing while open, one probe when the delay is over, everything once the server answers', async () => {
    vi.useFakeTimers();
    const health = new ApiHealth({ backoff: { baseMs: 1_000, maxMs: 30_000 } });
    let serverUp = false;
    const attempts: string[] = [];
    const q = new WorkQueue(
      async (key) => {
        attempts.push(key);
        await Promise.resolve();
        const err = serverUp ? undefined : refused();
        health.observe(err);
        if (err) throw err;
      },
      { concurrency: 4, gate: health, backoff: { baseMs: 100, maxMs: 100 } },
    );
    for (let i = 0; i < 50; i++) q.add(`ns/c${i}`);
    await vi.advanceTimersByTimeAsync(0);
    // The first four were in flight when the outage showed; nothing else started.
    expect(attempts).toHaveLength(4);
    await vi.advanceTimersByTimeAsync(999);
    expect(attempts).toHaveLength(4);
    await vi.advanceTimersByTimeAsync(1);
    expect(attempts).toHaveLength(5); // one probe at 1 s
    await vi.advanceTimersByTimeAsync(2_000);
    expect(attempts).toHaveLength(6); // the next after 2 s more
    await vi.advanceTimersByTimeAsync(4_000);
    expect(attempts).toHaveLength(7);
    // 20 s of outage in all: a handful of attempts, not one per key and retry.
    await vi.advanceTimersByTimeAsync(13_000);
    expect(attempts.length).toBeLessThanOrEqual(9);

    serverUp = true;
    await vi.advanceTimersByTimeAsync(30_000);
    await q.idle();
    expect(new Set(attempts).size).toBe(50);
    // Every key ran once after recovery; the failed ones were retried once more each.
    const failedBefore = attempts.length - 50;
    expect(failedBefore).toBeLessThanOrEqual(9);
  });
});
