// The informer on the real API server through a TCP relay that stops forwarding without closing
// anything (a partition that drops packets): the silent watch is given up at its idle deadline,
// not when the request's body timeout ends it, and once the relay forwards again (what was sent
// meanwhile delivered, as TCP would), a change made during the partition reaches the cache.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { KubeClient } from '../../operator/kube/client.ts';
import { ResilientInformer } from '../../operator/kube/informer.ts';
import { kubeConfig, useTestNamespace } from '../support/cluster.ts';
import { recordFigure } from '../support/figures.ts';
import { waitFor } from '../support/operator.ts';
import { kubeconfigThrough, startRelay } from '../support/relay.ts';
import { captureLogs } from '../support/logs.ts';

const kc = kubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const ns = useTestNamespace('informer-silent-watch');

describe('ResilientInformer', () => {
  it('gives up a watch gone silent at its idle deadline and, once traffic passes, catches up on a change made meanwhile', async () => {
    const server = new URL(kc.getCurrentCluster()!.server);
    const relay = await startRelay(server.hostname, Number(server.port));
    const dir = mkdtempSync(join(tmpdir(), 'informer-relay-'));
    const relayed = new KubeConfig();
    relayed.loadFromFile(kubeconfigThrough(kc, relay, join(dir, 'kubeconfig')));
    const { lines, log } = captureLogs();
    // A test-only deadline: the default (WATCH_IDLE_MS, 3 bookmark intervals) is minutes.
    const idleMs = 3_000;
    const informer = new ResilientInformer<V1ConfigMap>({
      name: 'configmaps/silent',
      client: new KubeClient(relayed),
      path: `/api/v1/namespaces/${ns.name}/configmaps`,
      labelSelector: 'app=silent',
      log,
      backoff: { baseMs: 500, maxMs: 1_000 },
      watchIdleMs: idleMs,
    });
    const idleRestarts = () =>
      lines.filter((l) => l.msg === 'watch stopped; restarting' && /delivered nothing/.test(String(l.error)));
    const labelled = (name: string) => ({ metadata: { name, labels: { app: 'silent' } } });
    try {
      await informer.start();
      await waitFor('sync', async () => informer.synced);
      await core.createNamespacedConfigMap({ namespace: ns.name, body: labelled('before') });
      await waitFor('the watch to deliver', async () => informer.get('before', ns.name) !== undefined);
      // The events above kept the watch alive: no idle restart so far.
      expect(idleRestarts()).toEqual([]);

      relay.stall();
      const stalled = Date.now();
      await core.createNamespacedConfigMap({ namespace: ns.name, body: labelled('during') });
      await waitFor('the silent watch to be given up', async () => idleRestarts().length > 0, 15_000);
      const noticedAfterMs = Date.now() - stalled;
      // About the deadline: it runs from the last event, which came just before the stall (the
      // exact "not before" is proved on a manual clock in test/unit/kube/informer.test.ts).
      expect(noticedAfterMs).toBeGreaterThanOrEqual(idleMs - 500);
      expect(noticedAfterMs).toBeLessThan(idleMs + 5_000);
      // The resumed watch hangs too (the relay accepts and forwards nothing): given up again.
      await waitFor('a second idle restart', async () => idleRestarts().length > 1, 15_000);
      expect(informer.get('during', ns.name)).toBeUndefined();

      relay.heal();
      const healed = Date.now();
      await waitFor(
        'the change made meanwhile',
        async () => informer.get('during', ns.name) !== undefined,
        15_000,
      );
      const caughtUpAfterMs = Date.now() - healed;
      recordFigure('informer: silent watch', { idleMs, noticedAfterMs, caughtUpAfterMs });
      // Resumed from its resourceVersion: no relist (a relist is logged only on 410).
      expect(lines.filter((l) => String(l.msg).includes('relisting'))).toEqual([]);
    } finally {
      await informer.stop();
      await relay.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
