// The informer's restart backoff on a manual clock: a list the API server refuses is retried at
// exactly 1 s, 2 s, 4 s..., and never before. The client is a small in-memory double (the real
// API server behaviour is covered by test/integration/controller-informer.test.ts).
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ApiError, type KubeClient } from '../../../operator/kube/client.ts';
import { ResilientInformer } from '../../../operator/kube/informer.ts';
import { createLogger } from '../../../operator/log.ts';
import { ManualClock, settle } from '../../support/clock.ts';

describe('ResilientInformer restarts', () => {
  it('retries a refused list with capped exponential backoff on its clock, then syncs', async () => {
    const clock = new ManualClock();
    const t0 = clock.now();
    const lists: number[] = [];
    let refuse = true;
    const client = {
      request: async () => {
        lists.push(clock.now() - t0);
        if (refuse) throw new ApiError(503, { message: 'unavailable' });
        return {
          items: [{ metadata: { name: 'a', namespace: 'ns', resourceVersion: '5' } }],
          metadata: { resourceVersion: '5' },
        };
      },
      // The watch stays open until stopped.
      watch: (_p: string, _q: unknown, _e: unknown, signal: AbortSignal) =>
        new Promise<void>((_, reject) =>
          signal.addEventListener('abort', () => reject(new Error('stopped'))),
        ),
    } as unknown as KubeClient;
    const informer = new ResilientInformer<KubernetesObject>({
      name: 'test',
      client,
      path: '/api/v1/namespaces/ns/secrets',
      log: createLogger({}, { write: () => {} }),
      backoff: { baseMs: 1_000, maxMs: 4_000 },
      clock,
    });
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
    refuse = false;
    await clock.advance(4_000);
    await settle();
    expect(lists).toEqual([0, 1_000, 3_000, 7_000, 11_000, 15_000]);
    expect(informer.synced).toBe(true);
    expect(informer.get('a', 'ns')?.metadata?.resourceVersion).toBe('5');
    await informer.stop();
    expect(clock.pending).toBe(0);
  });
});
