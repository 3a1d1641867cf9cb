// The informer's restart backoff on a manual clock: a list the API server refuses is retried at
// exactly 1 s, 2 s, 4 s..., and never before. The client is a small in-memory double (the real
// API server behaviour is covered by test/integration/controller-informer.test.ts).
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ApiError, type KubeClient } from '../../../operator/kube/client.ts';
import { ResilientInformer, WATCH_IDLE_MS } from '../../../operator/kube/informer.ts';
import type { WatchEvent } from '../../../operator/kube/client.ts';
import { createLogger } from '../../../operator/log.ts';
import { ManualClock, settle } from '../../support/clock.ts';

/**
 * An API double whose list is refused (503) while `refuse` is set, recording when each list came
 * (ms since it was made), and whose watch stays open until stopped.
 */
function refusingApi(
  clock: ManualClock,
  list: { items: KubernetesObject[]; metadata: { resourceVersion: string } },
) {
  const t0 = clock.now();
  const api = { refuse: true, lists: [] as number[], client: undefined as unknown as KubeClient };
  api.client = {
    request: async () => {
      api.lists.push(clock.now() - t0);
      if (api.refuse) throw new ApiError(503, { message: 'unavailable' });
      return list;
    },
    watch: (_p: string, _q: unknown, _e: unknown, signal: AbortSignal) =>
      new Promise<void>((_, reject) => signal.addEventListener('abort', () => reject(new Error('stopped')))),
  } as unknown as KubeClient;
  return api;
}

const backedOffInformer = (
  clock: ManualClock,
  client: KubeClient,
  backoff: { baseMs: number; maxMs: number },
) =>
  new ResilientInformer<KubernetesObject>({
    name: 'test',
    client,
    path: '/api/v1/namespaces/ns/secrets',
    log: createLogger({}, { write: () => {} }),
    backoff,
    clock,
  });

describe('ResilientInformer restarts', () => {
  it('retries a refused list with capped exponential backoff on its clock, then syncs', async () => {
    const clock = new ManualClock();
    const api = refusingApi(clock, {
      items: [{ metadata: { name: 'a', namespace: 'ns', resourceVersion: '5' } }],
      metadata: { resourceVersion: '5' },
    });
    const lists = api.lists;
    const informer = backedOffInformer(clock, api.client, { baseMs: 1_000, maxMs: 4_000 });
    await informer.start();
    expect(lists).toEqual([0]);
    await clock.advance(999);
    expect(lists).toEqual([0]); // nothing before the delay
    await clock.advance(1);
    await clock.advance(2_000);
    await clock.advance(4_000);
    await clock.advance(4_000); // capped
    expect(lists).toEqual([0, 1_000, 3_000, 7_000, 11_000]);
    expect(informer.synced).toBe(false);
    api.refuse = false;
    await clock.advance(4_000);
    await settle();
    expect(lists).toEqual([0, 1_000, 3_000, 7_000, 11_000, 15_000]);
    expect(informer.synced).toBe(true);
    expect(informer.get('a', 'ns')?.metadata?.resourceVersion).toBe('5');
    await informer.stop();
    expect(clock.pending).toBe(0);
  });
});

describe('ResilientInformer.retryNow', () => {
  it('restarts at once an informer waiting out its backoff, and does nothing to a running one', async () => {
    const clock = new ManualClock();
    const api = refusingApi(clock, { items: [], metadata: { resourceVersion: '7' } });
    const lists = api.lists;
    const informer = backedOffInformer(clock, api.client, { baseMs: 8_000, maxMs: 30_000 });
    await informer.start();
    await clock.advance(2_000);
    expect(lists).toEqual([0]); // waiting out 8 s
    api.refuse = false;
    informer.retryNow(); // the API server answers again
    await settle();
    expect(lists).toEqual([0, 2_000]);
    expect(informer.synced).toBe(true);
    informer.retryNow(); // running: nothing to do
    await clock.advance(30_000);
    expect(lists).toEqual([0, 2_000]);
    await informer.stop();
    expect(clock.pending).toBe(0);
  });
});

describe('ResilientInformer idle watch deadline', () => {
  /** A client whose list answers at once and whose watches stay open and silent until aborted. */
  function silentWatches(clock: ManualClock) {
    const t0 = clock.now();
    const watches: Array<{ at: number; resourceVersion: unknown; ended?: number }> = [];
    let deliver: ((e: WatchEvent<KubernetesObject>) => void) | undefined;
    const client = {
      request: async () => ({
        items: [{ metadata: { name: 'a', namespace: 'ns', resourceVersion: '5' } }],
        metadata: { resourceVersion: '5' },
      }),
      watch: (
        _p: string,
        q: { resourceVersion: unknown },
        onEvent: (e: WatchEvent<KubernetesObject>) => void,
        signal: AbortSignal,
      ) => {
        const watch: (typeof watches)[number] = { at: clock.now() - t0, resourceVersion: q.resourceVersion };
        watches.push(watch);
        deliver = onEvent;
        return new Promise<void>((_, reject) =>
          signal.addEventListener('abort', () => {
            watch.ended = clock.now() - t0;
            reject(new DOMException('aborted', 'AbortError'));
          }),
        );
      },
    } as unknown as KubeClient;
    return { client, watches, emit: (e: WatchEvent<KubernetesObject>) => deliver!(e) };
  }

  function informerOn(clock: ManualClock, client: KubeClient, lines: string[], watchIdleMs?: number) {
    return new ResilientInformer<KubernetesObject>({
      name: 'test',
      client,
      path: '/api/v1/namespaces/ns/secrets',
      log: createLogger({}, { write: (l) => lines.push(l) }),
      clock,
      watchIdleMs,
      // Without jitter (the default's equal jitter is covered in informer-handlers.test.ts), so
      // the restart lands at an exact time.
      backoff: { baseMs: 1_000, maxMs: 30_000 },
    });
  }

  it('gives up a silent watch exactly at the deadline and resumes from the last resourceVersion', async () => {
    const clock = new ManualClock();
    const { client, watches } = silentWatches(clock);
    const lines: string[] = [];
    const informer = informerOn(clock, client, lines);
    await informer.start();
    await settle();
    expect(watches).toEqual([{ at: 0, resourceVersion: '5' }]);
    await clock.advance(WATCH_IDLE_MS - 1);
    expect(watches).toHaveLength(1); // nothing before the deadline
    expect(watches[0]!.ended).toBeUndefined();
    await clock.advance(1);
    expect(watches[0]!.ended).toBe(WATCH_IDLE_MS);
    expect(lines.join('\n')).toMatch(/delivered nothing \(no event, no bookmark\) for 180 s/);
    // The restart backoff (1 s base; the watch had run long enough to count as healthy), no relist.
    await clock.advance(1_000);
    expect(watches).toEqual([
      { at: 0, resourceVersion: '5', ended: WATCH_IDLE_MS },
      { at: WATCH_IDLE_MS + 1_000, resourceVersion: '5' },
    ]);
    expect(informer.get('a', 'ns')).toBeDefined();
    await informer.stop();
    expect(clock.pending).toBe(0);
  });

  it("every event or bookmark moves the deadline; a bookmark's resourceVersion is where it resumes", async () => {
    const clock = new ManualClock();
    const { client, watches, emit } = silentWatches(clock);
    const informer = informerOn(clock, client, [], 10_000);
    await informer.start();
    await settle();
    await clock.advance(9_000);
    emit({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '9' } } });
    await clock.advance(9_000);
    emit({ type: 'ADDED', object: { metadata: { name: 'b', namespace: 'ns', resourceVersion: '12' } } });
    await clock.advance(9_000);
    emit({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '15' } } });
    await clock.advance(9_999);
    expect(watches).toHaveLength(1); // 36.999 s open, never 10 s silent
    expect(watches[0]!.ended).toBeUndefined();
    await clock.advance(1);
    expect(watches[0]!.ended).toBe(37_000);
    await clock.advance(1_000);
    expect(watches).toHaveLength(2);
    expect(watches[1]!.resourceVersion).toBe('15');
    expect(informer.get('b', 'ns')).toBeDefined();
    await informer.stop();
    expect(clock.pending).toBe(0);
  });

  it('stop() during a silent watch ends it without a restart and leaves no timer', async () => {
    const clock = new ManualClock();
    const { client, watches } = silentWatches(clock);
    const informer = informerOn(clock, client, [], 10_000);
    await informer.start();
    await settle();
    await clock.advance(5_000);
    await informer.stop();
    expect(watches[0]!.ended).toBe(5_000);
    expect(clock.pending).toBe(0);
    await clock.advance(60_000);
    expect(watches).toHaveLength(1);
  });
});
