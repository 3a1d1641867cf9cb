// Cancellation reaches the HTTP request. The AgentCard controller's runnables run in this process
// against the real API server through a TCP relay that can stop forwarding without closing
// anything; a reconcile then waits on an API call that will not be answered (its GET of an
// unlabelled signing Secret, which is never cached). Stopping the loop waits for it, as a
// shutdown within its budget should; cancelling it (lost leadership, or shutdown past its budget:
// runtime/manager.ts) aborts the request itself, so the loop ends at once instead of after the
// client's 60 s request timeout, and the aborted reconcile is not logged or retried as a failure.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Controller } from '../../operator/controllers/agentcard/controller.ts';
import { objectKey } from '../../operator/runtime/keys.ts';
import { ControllerMetrics } from '../../operator/controllers/agentcard/metrics.ts';
import { noProbes } from '../../operator/controllers/agentcard/probes.ts';
import { KubeClient } from '../../operator/kube/client.ts';
import { EventRecorder } from '../../operator/kube/events.ts';
import { kubeConfig, useTestNamespace } from '../support/cluster.ts';
import { captureLogs } from '../support/logs.ts';
import { Api, condition, installCrd, privateJwk, sampleCard, sleep, waitFor } from '../support/operator.ts';
import { kubeconfigThrough, startRelay, type Relay } from '../support/relay.ts';

const kc = kubeConfig();
const api = new Api(kc);
const ns = useTestNamespace('controller-cancel');

describe('a reconcile waiting on the API server', () => {
  let relay: Relay | undefined;
  let dir = '';
  beforeAll(async () => {
    await installCrd(kc);
    dir = mkdtempSync(join(tmpdir(), 'controller-cancel-'));
  });
  afterAll(async () => {
    await relay?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('is aborted by cancelling the loop: the request ends at once, nothing is retried', async () => {
    const server = new URL(kc.getCurrentCluster()!.server);
    relay = await startRelay(server.hostname, Number(server.port));
    const relayed = new KubeConfig();
    relayed.loadFromFile(kubeconfigThrough(kc, relay, join(dir, 'kubeconfig')));
    const client = new KubeClient(relayed);
    const { lines, log } = captureLogs('info');
    const controller = new Controller({
      client,
      namespaces: [ns.name],
      concurrency: 1,
      resyncMs: 600_000,
      log,
      metrics: new ControllerMetrics(new Registry()),
      // Events go straight to the API server: only the controller's own calls pass the relay.
      events: new EventRecorder({
        client: new KubeClient(kc),
        log,
        reportingController: 'agentcard.dev/operator',
        reportingInstance: 'controller-cancel',
      }),
      probes: noProbes(),
    });
    const [caches, reconciler] = controller.runnables();
    const running = new AbortController();
    try {
      await caches!.start(running.signal);
      await reconciler!.start(running.signal);
      await api.putSecret(ns.name, 'cancel-key', { jwk: await privateJwk('cancel-1') }, false);
      await api.createCard(ns.name, 'cancel', {
        card: sampleCard('1.0.0'),
        signing: { keys: [{ secretRef: { name: 'cancel-key', key: 'jwk' } }] },
      });
      await waitFor(
        'the card signed through the relay',
        async () => condition(await api.getCard(ns.name, 'cancel'), 'Signed')?.status === 'True',
      );

      // The card's own status write queues it again. A reconcile that had already read the Secret
      // when the relay stalls could finish without another call, and stop() would not wait for
      // it: let the queue be quiet for a second first. Once stalled, no watch event arrives
      // (the informers read through the relay too), so the next reconcile is the one added here.
      let quietSince = Date.now();
      await waitFor('the controller to be quiet for 1 s', async () => {
        if (controller.queue.active > 0 || controller.queue.depth > 0) quietSince = Date.now();
        return Date.now() - quietSince >= 1_000;
      });
      relay.stall();
      controller.queue.add(objectKey(ns.name, 'cancel'));
      await waitFor('the reconcile to run', async () => controller.queue.active === 1, 5_000);
      // Stopping waits for the reconcile in flight: it is still waiting after 2 s.
      const stopped = reconciler!.stop();
      const first = await Promise.race([stopped.then(() => 'stopped'), sleep(2_000).then(() => 'waiting')]);
      expect(first).toBe('waiting');
      expect(controller.queue.active).toBe(1);

      const cancelledAt = Date.now();
      reconciler!.cancel!();
      await stopped;
      const endedMs = Date.now() - cancelledAt;
      expect(endedMs).toBeLessThan(1_000);
      expect(controller.queue.active).toBe(0);
      // An abort is not a failure: no "retrying" line, no error line.
      expect(lines.filter((l) => l.msg === 'reconcile failed; retrying')).toEqual([]);
      expect(lines.filter((l) => l.level === 'error')).toEqual([]);
    } finally {
      running.abort();
      await reconciler!.stop();
      await caches!.stop();
    }
  });
});
