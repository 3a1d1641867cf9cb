// The runtime's work-queue helper (runtime/reconciler.ts, reconcileQueue): the reconcile gets the
// loop's signal, a failure is retried with backoff and logged once per failed run with the key's
// fields, and nothing is logged once the queue is shut down (the failure is the cancellation).
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../operator/kube/client.ts';
import { createLogger } from '../../../operator/log.ts';
import { reconcileQueue, WorkSignal } from '../../../operator/runtime/reconciler.ts';

function logs() {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger({}, { level: 'debug', write: (l: string) => lines.push(JSON.parse(l)) });
  return { lines, log };
}

describe('reconcileQueue', () => {
  it('retries a failed run with backoff, logging each failure once with the fields naming the key', async () => {
    const { lines, log } = logs();
    const work = new WorkSignal();
    const signals: AbortSignal[] = [];
    let runs = 0;
    const queue = reconcileQueue({
      reconcile: async (_key, signal) => {
        signals.push(signal);
        if (++runs < 3) throw new ApiError(500, { message: 'etcd timed out' });
      },
      work,
      concurrency: 1,
      backoff: { baseMs: 1, maxMs: 2 },
      log,
      failure: 'thing failed; retrying',
      fields: (key) => ({ thing: key }),
    });
    queue.add('ns/a');
    await waitUntil(() => runs === 3);
    await queue.idle();
    const warnings = lines.filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatchObject({ msg: 'thing failed; retrying', thing: 'ns/a', retryInMs: 1 });
    expect(String(warnings[0]!.error)).toContain('etcd timed out');
    expect(warnings[1]).toMatchObject({ retryInMs: 2 });
    expect(signals.every((s) => s === work.signal)).toBe(true);
    await queue.shutdown();
  });

  it('logs nothing and retries nothing for a run that fails because the loop was cancelled', async () => {
    const { lines, log } = logs();
    const work = new WorkSignal();
    let runs = 0;
    let started: () => void = () => {};
    const running = new Promise<void>((r) => (started = r));
    const queue = reconcileQueue({
      reconcile: (_key, signal) => {
        runs++;
        started();
        return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      },
      work,
      concurrency: 1,
      log,
      failure: 'thing failed; retrying',
      fields: (key) => ({ thing: key }),
    });
    queue.add('ns/a');
    await running;
    const stopped = queue.shutdown();
    work.cancel();
    await stopped;
    expect(runs).toBe(1);
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
  });
});

async function waitUntil(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 1_000 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(cond()).toBe(true);
}
