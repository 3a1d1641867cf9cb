// Fault suite: the kube-apiserver and etcd restarted under a running operator, on a private
// control plane (restarting the shared one would disturb the other test files). Every case
// asserts convergence, counts writes, and checks that no published ConfigMap went back to an
// older card.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  attemptedWrites,
  burstSpec,
  cardName,
  convergedCards,
  createBurst,
  eventCounts,
  PublishedHistory,
  retrying,
  startFaultCluster,
  waitForConverged,
  type FaultCluster,
} from '../../support/faults.ts';
import { join } from 'node:path';
import { OWNED_SELECTOR } from '../../../operator/api/names.ts';
import { ApiRelay } from '../../support/api-relay.ts';
import { compactEtcd } from '../../support/etcd.ts';
import { privateJwk, sleep, spawnOperator, waitFor, type ChildOperator } from '../../support/operator.ts';
import { recordFigure } from '../../support/figures.ts';

let cluster: FaultCluster;
const operators: ChildOperator[] = [];

beforeAll(async () => {
  cluster = await startFaultCluster();
}, 300_000);

afterAll(async () => {
  for (const op of operators) if (op.child.exitCode === null) op.child.kill('SIGKILL');
  await cluster?.instance.destroy();
});

/**
 * Runs a burst of `count` card creates with one component of the control plane stopped for
 * `outageMs` after a third of them, then updates the first `updates` cards to 2.0.0 while it is
 * still down. Returns the figures the test asserts on.
 */
async function burstThroughOutage(opts: {
  namespace: string;
  part: 'kube-apiserver' | 'etcd';
  count: number;
  updates: number;
  outageMs: number;
}) {
  const { api, instance, kc } = cluster;
  const ns = opts.namespace;
  await retrying(() => api.core.createNamespace({ body: { metadata: { name: ns } } }));
  await retrying(async () => api.putSecret(ns, 'key', { jwk: await privateJwk('faults') }, true));
  const history = new PublishedHistory(kc, ns);
  await history.start();
  const op = spawnOperator(ns, ['--no-leader-elect', '--no-probes', '--concurrency', '4'], {
    kubeconfig: instance.kubeconfig,
  });
  operators.push(op);
  const port = await op.metricsPort();
  const names = Array.from({ length: opts.count }, (_, i) => cardName(i));

  let outage: Promise<{ down: number; up: number; writesDuringOutage: Record<string, number> }> | undefined;
  const startOutage = async () => {
    await waitFor('some cards published', async () => (await convergedCards(api, ns)).size >= 20, 60_000);
    const before = await attemptedWrites(port);
    await instance.stopPart(opts.part);
    const down = Date.now();
    await sleep(opts.outageMs);
    const atEnd = await attemptedWrites(port);
    await instance.startPart(opts.part);
    const up = Date.now();
    const writesDuringOutage = Object.fromEntries(
      Object.entries(atEnd).map(([k, v]) => [k, v - (before[k] ?? 0)]),
    );
    return { down, up, writesDuringOutage };
  };
  await createBurst(
    api,
    ns,
    names,
    () => burstSpec('1.0.0', 'key'),
    (done) => {
      if (!outage && done >= Math.floor(opts.count / 3)) outage = startOutage();
    },
  );
  // Spec updates that the API server takes as soon as it is back: the operator must publish
  // them, and never put 1.0.0 back afterwards.
  await Promise.all(
    names.slice(0, opts.updates).map((name) =>
      retrying(
        async () => {
          const live = await api.getCard(ns, name);
          if ((live!.spec.card as { version: string }).version === '2.0.0') return;
          await api.replaceSpec(ns, name, burstSpec('2.0.0', 'key'));
        },
        120_000,
        { conflicts: true },
      ),
    ),
  );
  const lastApply = Date.now();
  const { up, down, writesDuringOutage } = await outage!;
  await waitForConverged(api, ns, opts.count, 180_000, [op]);
  const convergedAfterMs = Date.now() - up;
  const convergedAfterLastApplyMs = Date.now() - Math.max(lastApply, up);
  // Settled: nothing queued and the write counters still for two readings 2 s apart.
  const writes = await waitFor(
    'the operator to settle',
    async () => {
      const a = await attemptedWrites(port);
      await sleep(2_000);
      const b = await attemptedWrites(port);
      return JSON.stringify(a) === JSON.stringify(b) ? b : undefined;
    },
    60_000,
  );
  await history.stop();
  const events = await eventCounts(api, ns);
  op.child.kill('SIGTERM');
  await op.exited;
  return {
    writes,
    writesDuringOutage,
    convergedAfterMs,
    convergedAfterLastApplyMs,
    outageMs: up - down,
    history,
    events,
    names,
  };
}

/**
 * Records the figures of a burst through an outage and checks what every such case must show:
 * no ConfigMap reverted to an older card, every updated card at 2.0.0, no duplicate Event, and
 * at most 20 ConfigMap writes beyond the ones needed (one per apply and per update).
 */
function expectConvergedThroughOutage(
  name: string,
  burst: { count: number; updates: number },
  r: Awaited<ReturnType<typeof burstThroughOutage>>,
) {
  const needed = burst.count + burst.updates;
  recordFigure(name, {
    cards: burst.count,
    updates: burst.updates,
    outageMs: r.outageMs,
    convergedAfterMs: r.convergedAfterMs,
    convergedAfterLastApplyMs: r.convergedAfterLastApplyMs,
    configMapWrites: r.writes.configmap!,
    statusWrites: r.writes.status!,
    neededConfigMapWrites: needed,
    writesDuringOutage: r.writesDuringOutage,
  });
  expect(r.history.reverted()).toEqual([]);
  // Every updated card went 1.0.0 -> 2.0.0 (or straight to 2.0.0), the others stayed at 1.0.0.
  for (const card of r.names.slice(0, burst.updates))
    expect(r.history.versions.get(`${card}-agent-card`)?.at(-1)).toBe('2.0.0');
  expect([...r.events].filter(([, n]) => n > 1).map(([k]) => k)).toEqual([]);
  expect(r.writes.configmap).toBeLessThanOrEqual(needed + 20);
}

describe('faults: control plane restarts', () => {
  // The API server alone, and etcd under it (the API server stays up and answers errors).
  const restarts = [
    { namespace: 'apiserver-restart', part: 'kube-apiserver', count: 200, updates: 40, outageMs: 10_000 },
    { namespace: 'etcd-restart', part: 'etcd', count: 100, updates: 20, outageMs: 10_000 },
  ] as const;
  it.each(restarts)(
    '$part restarted during a burst of $count applies: all converge, no duplicate event, no revert, few wasted writes',
    async (burst) => {
      const r = await burstThroughOutage(burst);
      expectConvergedThroughOutage(burst.namespace, burst, r);
      // While the control plane was away the breaker held the queue: the writes in flight when it
      // went, one probe per backoff step, and a few more while it starts (the API server answers
      // some requests before others); not one write per key and retry (184 of them for the API
      // server before the breaker).
      expect(r.writesDuringOutage.configmap).toBeLessThanOrEqual(25);
    },
    400_000,
  );

  it('watch history compacted (410) while the operator is cut off, with changes in between: relists and converges', async () => {
    const { api, instance, kc } = cluster;
    const ns = 'compacted';
    await api.core.createNamespace({ body: { metadata: { name: ns } } });
    await api.putSecret(ns, 'key', { jwk: await privateJwk('k1') }, true);
    const names = Array.from({ length: 20 }, (_, i) => cardName(i));
    await createBurst(api, ns, names, () => burstSpec('1.0.0', 'key'));
    // The operator reaches the API server through a relay that can cut it off.
    const relay = await ApiRelay.start(instance.server, instance.pkiDir);
    const relayed = join(instance.dir, 'relay.kubeconfig');
    relay.writeKubeconfig(instance.kubeconfig, relayed);
    const op = spawnOperator(ns, ['--no-leader-elect', '--no-probes', '--concurrency', '4'], {
      kubeconfig: relayed,
    });
    operators.push(op);
    try {
      const port = await op.metricsPort();
      await waitForConverged(api, ns, 20, 60_000, [op]);
      const history = new PublishedHistory(kc, ns);
      await history.start();
      const before = await attemptedWrites(port);

      // Cut off: running watches end, new requests hang without an answer.
      relay.setMode({ kind: 'hang' });
      const updated = names.slice(0, 5);
      for (const name of updated)
        await retrying(() => api.replaceSpec(ns, name, burstSpec('2.0.0', 'key')), 120_000, {
          conflicts: true,
        });
      const added = [cardName(20), cardName(21)];
      await createBurst(api, ns, added, () => burstSpec('1.0.0', 'key'));
      await api.core.deleteNamespacedConfigMap({ namespace: ns, name: `${names[10]}-agent-card` });
      await api.putSecret(ns, 'key', { jwk: await privateJwk('k2') }, true);
      // Compact the history past every resourceVersion the operator saw, and restart the API
      // server so its watch cache starts after the compaction too: every resumed watch gets 410.
      await compactEtcd({ etcd: instance.state.etcd, pkiDir: instance.pkiDir });
      await instance.stopPart('kube-apiserver');
      await instance.startPart('kube-apiserver');
      const healed = Date.now();
      relay.setMode({ kind: 'pass' });

      const all = [...names, ...added];
      await waitFor(
        'every card converged and signed with the rotated key',
        async () => {
          if ((await convergedCards(api, ns)).size !== all.length) return false;
          const cms = await api.core.listNamespacedConfigMap({
            namespace: ns,
            labelSelector: OWNED_SELECTOR,
          });
          return (
            cms.items.length === all.length &&
            cms.items.every((cm) => cm.data?.['jwks.json']?.includes('"k2"'))
          );
        },
        90_000,
      );
      const convergedAfterMs = Date.now() - healed;
      const writes = await waitFor(
        'the operator to settle',
        async () => {
          const a = await attemptedWrites(port);
          await sleep(2_000);
          const b = await attemptedWrites(port);
          return JSON.stringify(a) === JSON.stringify(b) ? b : undefined;
        },
        60_000,
      );
      await history.stop();
      // The operator's watches really resumed into a 410 Gone and it relisted.
      expect(relay.requests.some((r) => r.gone)).toBe(true);
      expect(history.reverted()).toEqual([]);
      for (const name of updated) expect(history.versions.get(`${name}-agent-card`)?.at(-1)).toBe('2.0.0');
      // The rotation changes every card's signature: each ConfigMap is written once.
      const configMapWrites = writes.configmap! - before.configmap!;
      recordFigure('watch-compacted', {
        cards: all.length,
        convergedAfterMs,
        configMapWrites,
        needed: all.length,
      });
      expect(configMapWrites).toBeGreaterThanOrEqual(all.length);
      expect(configMapWrites).toBeLessThanOrEqual(all.length + 6);
    } catch (err) {
      process.stderr.write(op.lines.slice(-60).join('\n') + '\n');
      const conv = await convergedCards(api, ns).catch(() => new Set());
      process.stderr.write(`converged: ${conv.size}\n`);
      throw err;
    } finally {
      op.child.kill('SIGTERM');
      await op.exited;
      await relay.close();
    }
  }, 300_000);
});
