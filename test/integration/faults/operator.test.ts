// Fault suite: faults around a running operator on a private control plane. The leader killed
// mid-way, the API server throttling (429) or failing (500) for a while, objects edited by hand,
// the webhook's API connection hanging while Pods are created, and SIGTERM during a burst. Each
// case asserts convergence, counts writes and checks that no good card is lost.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoordinationV1Api, type V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INJECT_ANNOTATION, OWNED_SELECTOR, SIDECAR_CONTAINER } from '../../../operator/api/names.ts';
import { digestOf } from '../../../operator/runtime/configmaps.ts';
import { ApiRelay } from '../../support/api-relay.ts';
import {
  attemptedWrites,
  burstSpec,
  cardName,
  convergedCards,
  createBurst,
  listCards,
  PublishedHistory,
  retrying,
  startFaultCluster,
  waitForConverged,
  type FaultCluster,
} from '../../support/faults.ts';
import { recordFigure } from '../../support/figures.ts';
import {
  condition,
  controllerWrites,
  privateJwk,
  sleep,
  spawnOperator,
  waitFor,
  type ChildOperator,
} from '../../support/operator.ts';
import { freePort } from '../../support/ports.ts';
import { createTestCa } from '../../support/tls-certs.ts';
import { registerPodWebhook } from '../../support/webhook-config.ts';

const FORGED_DIGEST = `sha256:${'0'.repeat(64)}`;
const FORGED_CARD = '{"name":"forged"}';
let cluster: FaultCluster;
const operators: ChildOperator[] = [];
const relays: ApiRelay[] = [];

beforeAll(async () => {
  cluster = await startFaultCluster();
}, 300_000);

afterAll(async () => {
  for (const op of operators) if (op.child.exitCode === null) op.child.kill('SIGKILL');
  for (const relay of relays) await relay.close();
  await cluster?.instance.destroy();
});

async function namespace(name: string, cards = 0): Promise<string[]> {
  const { api } = cluster;
  await api.core.createNamespace({ body: { metadata: { name } } });
  await api.putSecret(name, 'key', { jwk: await privateJwk(`${name}-k1`) }, true);
  const names = Array.from({ length: cards }, (_, i) => cardName(i));
  await createBurst(api, name, names, () => burstSpec('1.0.0', 'key'));
  return names;
}

function operator(ns: string, extra: string[], kubeconfig = cluster.instance.kubeconfig): ChildOperator {
  const op = spawnOperator(ns, ['--no-probes', '--concurrency', '4', ...extra], { kubeconfig });
  operators.push(op);
  return op;
}

async function relayedKubeconfig(name: string): Promise<{ relay: ApiRelay; kubeconfig: string }> {
  const relay = await ApiRelay.start(cluster.instance.server, cluster.instance.pkiDir);
  relays.push(relay);
  const kubeconfig = join(cluster.instance.dir, `${name}.kubeconfig`);
  relay.writeKubeconfig(cluster.instance.kubeconfig, kubeconfig);
  return { relay, kubeconfig };
}

const configMaps = async (ns: string) =>
  (await cluster.api.core.listNamespacedConfigMap({ namespace: ns, labelSelector: OWNED_SELECTOR })).items;

/** Waits until the write counters stop moving (two readings 2 s apart), and returns them. */
async function settled(port: number): Promise<Record<string, number>> {
  return waitFor(
    'the operator to settle',
    async () => {
      const a = await attemptedWrites(port);
      await sleep(2_000);
      const b = await attemptedWrites(port);
      return JSON.stringify(a) === JSON.stringify(b) ? b : undefined;
    },
    60_000,
  );
}

const leaderFlags = (ns: string) => [
  '--leader-elect',
  '--leader-election-namespace',
  ns,
  '--leader-election-id',
  'faults',
  '--lease-duration',
  '4s',
  '--renew-deadline',
  '3s',
  '--retry-period',
  '500ms',
];

describe('faults: around the operator', () => {
  it('the leader killed with SIGKILL mid-writes: the standby converges within lease duration plus one round, no duplicate write', async () => {
    const { api, kc } = cluster;
    const ns = 'leader-kill';
    await namespace(ns);
    const before = await controllerWrites(kc);
    const one = operator(ns, leaderFlags(ns));
    const two = operator(ns, leaderFlags(ns));
    const leader = await waitFor('a leader', async () =>
      [one, two].find((p) => p.lines.some((l) => l.includes('"msg":"became leader"'))),
    );
    const standby = leader === one ? two : one;
    const names = Array.from({ length: 100 }, (_, i) => cardName(i));
    const burst = createBurst(api, ns, names, () => burstSpec('1.0.0', 'key'));
    await waitFor('30 cards published', async () => (await convergedCards(api, ns)).size >= 30, 60_000);
    leader.child.kill('SIGKILL');
    const killed = Date.now();
    await leader.exited;
    await burst;
    await standby.waitForLog('became leader', 20_000);
    const tookOverMs = Date.now() - killed;
    await waitForConverged(api, ns, 100, 60_000, [standby]);
    const convergedMs = Date.now() - killed;
    await settled(await standby.metricsPort());
    const after = await controllerWrites(kc);
    recordFigure('leader-sigkill', {
      cards: 100,
      tookOverMs,
      convergedMs,
      configMapWrites: after.configMaps - before.configMaps,
      statusWrites: after.status - before.status,
    });
    // The lease (4 s) expires, the standby's next retry (0.5 s) takes it, then one reconcile
    // round. 3 s of slack for two processes' scheduling on a loaded 2-core machine.
    expect(tookOverMs).toBeLessThan(4_000 + 500 + 3_000);
    expect(convergedMs - tookOverMs).toBeLessThan(30_000);
    // Writes the killed leader had in flight (at most --concurrency 4) may be repeated once: the
    // standby's cache may not hold yet a ConfigMap that landed just before the kill. Nothing else
    // is written twice.
    expect(after.configMaps - before.configMaps).toBeGreaterThanOrEqual(100);
    expect(after.configMaps - before.configMaps).toBeLessThanOrEqual(100 + 4);
    standby.child.kill('SIGTERM');
    expect(await standby.exited).toBe(0);
  }, 180_000);

  it('the API server answering 429, then 500, for 10 s each: backoff without a hot loop, recovery afterwards', async () => {
    const { api } = cluster;
    const ns = 'throttled';
    const names = await namespace(ns, 50);
    const { relay, kubeconfig } = await relayedKubeconfig('throttled');
    const figures: Record<string, unknown> = {};
    for (const status of [429, 500] as const) {
      // A fresh operator per fault, so the second does not start with backoffs the first grew.
      const op = operator(ns, ['--no-leader-elect'], kubeconfig);
      const port = await op.metricsPort();
      await waitForConverged(api, ns, 50, 60_000, [op]);
      await settled(port);
      const version = status === 429 ? '2.0.0' : '3.0.0';
      const writesBefore = await attemptedWrites(port);
      relay.setMode({ kind: 'fail', status });
      const from = Date.now();
      // Changes the operator must pick up once the API server serves again.
      for (const name of names.slice(0, 10))
        await retrying(() => api.replaceSpec(ns, name, burstSpec(version, 'key')), 120_000, {
          conflicts: true,
        });
      await sleep(10_000);
      const to = Date.now();
      relay.setMode({ kind: 'pass' });
      const rate = relay.rate(from, to);
      // The second half of the window, once the backoffs have grown: the steady rate.
      const lateRate = relay.rate(from + 5_000, to);
      await waitFor(
        `the ${version} updates published`,
        async () => {
          const done = await convergedCards(api, ns);
          return names.slice(0, 10).every((n) => done.has(n)) && done.size === 50;
        },
        60_000,
      );
      const recoveredMs = Date.now() - to;
      const writesAfter = await settled(port);
      figures[String(status)] = {
        requests: relay.requests.filter((r) => r.at >= from && r.at < to).length,
        requestsPerSecond: Number(rate.toFixed(2)),
        lateRequestsPerSecond: Number(lateRate.toFixed(2)),
        recoveredMs,
        configMapWrites: writesAfter.configmap! - writesBefore.configmap!,
      };
      // No hot loop: 4 watches, each on a growing backoff (1, 2, 4, 8 s ...), and nothing else.
      expect(rate).toBeLessThan(4);
      expect(lateRate).toBeLessThan(2);
      // Recovery within the watches' backoff cap (30 s) after the fault ends.
      expect(recoveredMs).toBeLessThan(35_000);
      // 10 cards changed: 10 ConfigMap writes, and none wasted on the fault.
      expect(writesAfter.configmap! - writesBefore.configmap!).toBeLessThanOrEqual(10 + 4);
      op.child.kill('SIGTERM');
      expect(await op.exited).toBe(0);
    }
    recordFigure('throttled', figures);
  }, 240_000);

  it('a ConfigMap edited or deleted by hand is restored, a status edited by hand is corrected, one write per object', async () => {
    const { api, kc } = cluster;
    const ns = 'hand-edits';
    const names = await namespace(ns, 3);
    const op = operator(ns, ['--no-leader-elect']);
    const port = await op.metricsPort();
    await waitForConverged(api, ns, 3, 60_000, [op]);
    await settled(port);
    const cmOf = async (name: string) => (await api.getConfigMap(ns, `${name}-agent-card`)) as V1ConfigMap;
    const original = await cmOf(names[0]!);
    const before = await controllerWrites(kc);
    const t0 = Date.now();

    // Edited: the served card replaced by someone else's bytes.
    await api.core.replaceNamespacedConfigMap({
      namespace: ns,
      name: original.metadata!.name!,
      body: { ...original, data: { ...original.data, 'agent-card.json': FORGED_CARD } },
    });
    // Deleted.
    await api.core.deleteNamespacedConfigMap({ namespace: ns, name: `${names[1]}-agent-card` });
    // Status edited: Ready flipped and the digest changed, through the status subresource.
    const live = await api.getCard(ns, names[2]!);
    await api.custom.replaceNamespacedCustomObjectStatus({
      group: 'agentcard.dev',
      version: 'v1alpha1',
      plural: 'agentcards',
      namespace: ns,
      name: names[2]!,
      body: {
        ...live,
        status: {
          ...live!.status,
          card: { ...live!.status!.card!, digest: FORGED_DIGEST },
          conditions: live!.status!.conditions!.map((c) =>
            c.type === 'Ready' ? { ...c, status: 'False', reason: 'Forged', message: 'edited by hand' } : c,
          ),
        },
      },
    });

    await waitFor(
      'all three repaired',
      async () => {
        const [edited, deleted, card, editedCard] = await Promise.all([
          cmOf(names[0]!),
          api.getConfigMap(ns, `${names[1]}-agent-card`),
          api.getCard(ns, names[2]!),
          api.getCard(ns, names[0]!),
        ]);
        // Signed again (ECDSA signatures differ each time): the status' digest names the bytes.
        const served = edited.data?.['agent-card.json'] ?? '';
        return (
          served !== FORGED_CARD &&
          digestOf(served) === editedCard?.status?.card?.digest &&
          deleted?.data?.['agent-card.json'] !== undefined &&
          condition(card, 'Ready')?.status === 'True' &&
          card?.status?.card?.digest !== FORGED_DIGEST
        );
      },
      20_000,
    );
    const repairedMs = Date.now() - t0;
    await settled(port);
    const after = await controllerWrites(kc);
    recordFigure('hand-edits', {
      repairedMs,
      configMapWrites: after.configMaps - before.configMaps,
      statusWrites: after.status - before.status,
    });
    // Not the 10-minute resync: at once.
    expect(repairedMs).toBeLessThan(10_000);
    // One ConfigMap write per repaired ConfigMap; one status write per card: the corrected one,
    // and the two whose card was signed again (an ECDSA signature differs each time, so the
    // digest in status changes with it).
    expect(after.configMaps - before.configMaps).toBe(2);
    expect(after.status - before.status).toBe(3);
    const card = await api.getCard(ns, names[2]!);
    const cm = await cmOf(names[2]!);
    expect(card!.status!.card!.digest).toBe(digestOf(cm.data!['agent-card.json']!));
    op.child.kill('SIGTERM');
    await op.exited;
  }, 120_000);

  it("the webhook's API connection hanging while Pods are created: no Pod delayed past the webhook timeout, and status.serving reports them", async () => {
    const { api, instance } = cluster;
    const ns = 'webhook-hang';
    await namespace(ns, 1);
    // No kube-controller-manager here: the ServiceAccount admission needs the default account.
    await api.core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'default' } } });
    const { relay, kubeconfig } = await relayedKubeconfig('webhook-hang');
    // cert-manager mode with a certificate for 127.0.0.1: the API server calls the webhook by URL.
    const ca = await createTestCa('faults webhook CA');
    const leaf = await ca.issue({ ips: ['127.0.0.1'] });
    const certDir = join(instance.dir, 'webhook-certs');
    mkdirSync(certDir, { recursive: true });
    writeFileSync(join(certDir, 'tls.crt'), leaf.cert);
    writeFileSync(join(certDir, 'tls.key'), leaf.key);
    const port = await freePort();
    const op = operator(
      ns,
      [
        '--no-leader-elect',
        '--webhook-port',
        String(port),
        '--webhook-cert-mode',
        'cert-manager',
        '--webhook-cert-dir',
        certDir,
        '--operator-namespace',
        'kube-system',
        '--sidecar-image',
        'registry.example/agentcard:test',
      ],
      kubeconfig,
    );
    await op.waitForLog('webhook listening');
    const timeoutSeconds = 5;
    await registerPodWebhook(api.kc, {
      name: 'faults-webhook',
      port,
      namespaces: [ns],
      caPem: ca.cert,
      timeoutSeconds,
    });
    const pod = (name: string) => ({
      metadata: { name, annotations: { [INJECT_ANNOTATION]: cardName(0) } },
      spec: {
        automountServiceAccountToken: false,
        containers: [{ name: 'agent', image: 'example.invalid/agent' }],
      },
    });
    const hasSidecar = (p: {
      spec?: { initContainers?: Array<{ name: string }>; containers?: Array<{ name: string }> };
    }) =>
      [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])].some(
        (c) => c.name === SIDECAR_CONTAINER,
      );
    // The configuration reaches the admission chain through an informer: wait for a mutated Pod.
    await waitFor('the webhook in the admission chain', async () => {
      const name = `probe-${Date.now()}`;
      const created = await api.core.createNamespacedPod({ namespace: ns, body: pod(name) });
      await api.core.deleteNamespacedPod({ namespace: ns, name, gracePeriodSeconds: 0 });
      return hasSidecar(created);
    });
    await waitFor('card converged', async () => (await convergedCards(api, ns)).size === 1, 30_000);

    relay.setMode({ kind: 'hang' });
    const latencies: number[] = [];
    for (let i = 0; i < 10; i++) {
      const t = Date.now();
      const created = await api.core.createNamespacedPod({ namespace: ns, body: pod(`agent-${i}`) });
      latencies.push(Date.now() - t);
      expect(hasSidecar(created)).toBe(true);
    }
    const hungFor = Date.now();
    await sleep(1_000);
    relay.setMode({ kind: 'pass' });
    await waitFor(
      'status.serving to count the 10 Pods',
      async () => {
        const card = await api.getCard(ns, cardName(0));
        const serving = (
          card?.status as { serving?: { podsRequesting?: number; podsMissingSidecar?: number } }
        )?.serving;
        return serving?.podsRequesting === 10 && serving.podsMissingSidecar === 0;
      },
      60_000,
    );
    recordFigure('webhook-hang', {
      pods: 10,
      maxCreateMs: Math.max(...latencies),
      servingReportedAfterHealMs: Date.now() - hungFor - 1_000,
    });
    // Each admission took far less than the webhook timeout: the review makes no API call.
    expect(Math.max(...latencies)).toBeLessThan(timeoutSeconds * 1000);
    op.child.kill('SIGTERM');
    await op.exited;
  }, 120_000);

  it('SIGTERM during a burst: in-flight reconciles finish, the Lease is released, no partial write', async () => {
    const { api, kc } = cluster;
    const ns = 'sigterm';
    await namespace(ns);
    const before = await controllerWrites(kc);
    const op = operator(ns, leaderFlags(ns));
    await op.waitForLog('became leader', 30_000);
    const history = new PublishedHistory(kc, ns);
    await history.start();
    const names = Array.from({ length: 100 }, (_, i) => cardName(i));
    const burst = createBurst(api, ns, names, () => burstSpec('1.0.0', 'key'));
    await waitFor('20 cards published', async () => (await convergedCards(api, ns)).size >= 20, 60_000);
    const t = Date.now();
    op.child.kill('SIGTERM');
    expect(await op.exited).toBe(0);
    const exitMs = Date.now() - t;
    await burst;
    const lease = await kc
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ namespace: ns, name: 'faults' });
    expect(lease.spec?.holderIdentity ?? '').toBe('');
    // No partial write: every published ConfigMap has the status that describes it.
    const cards = new Map((await listCards(api, ns)).map((c) => [c.metadata.name, c]));
    const cms = await configMaps(ns);
    expect(cms.length).toBeGreaterThan(0);
    for (const cm of cms) {
      const card = cards.get(cm.metadata!.name!.replace(/-agent-card$/, ''));
      expect(card?.status?.card?.digest).toBe(digestOf(cm.data!['agent-card.json']!));
    }
    const published = cms.length;
    // A successor converges the rest, writing each remaining ConfigMap once.
    const next = operator(ns, leaderFlags(ns));
    await waitForConverged(api, ns, 100, 90_000, [next]);
    await settled(await next.metricsPort());
    await history.stop();
    const after = await controllerWrites(kc);
    recordFigure('sigterm', {
      exitMs,
      publishedBeforeExit: published,
      configMapWrites: after.configMaps - before.configMaps,
    });
    expect(exitMs).toBeLessThan(10_000);
    expect(after.configMaps - before.configMaps).toBe(100);
    expect(history.reverted()).toEqual([]);
    next.child.kill('SIGTERM');
    expect(await next.exited).toBe(0);
  }, 180_000);
});
