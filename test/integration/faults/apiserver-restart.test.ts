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
  type FaultCluster,
} from '../../support/faults.ts';
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
      retrying(async () => {
        const live = await api.getCard(ns, name);
        if ((live!.spec.card as { version: string }).version === '2.0.0') return;
        await api.replaceSpec(ns, name, burstSpec('2.0.0', 'key'));
      }),
    ),
  );
  const lastApply = Date.now();
  const { up, down, writesDuringOutage } = await outage!;
  await waitFor(
    `all ${opts.count} AgentCards converged`,
    async () => (await convergedCards(api, ns)).size === opts.count,
    180_000,
  );
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
  return { writes, writesDuringOutage, convergedAfterMs, convergedAfterLastApplyMs, outageMs: up - down, history, events, names };
}

describe('faults: control plane restarts', () => {
  it('kube-apiserver restarted during a burst of 200 applies: all converge, no duplicate event, no revert, few wasted writes', async () => {
    const r = await burstThroughOutage({
      namespace: 'apiserver-restart',
      part: 'kube-apiserver',
      count: 200,
      updates: 40,
      outageMs: 10_000,
    });
    const needed = 200 + 40;
    recordFigure('apiserver-restart', {
      cards: 200,
      updates: 40,
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
    for (const name of r.names.slice(0, 40))
      expect(r.history.versions.get(`${name}-agent-card`)?.at(-1)).toBe('2.0.0');
    const duplicates = [...r.events].filter(([, n]) => n > 1).map(([k]) => k);
    expect(duplicates).toEqual([]);
    expect(r.writes.configmap).toBeLessThanOrEqual(needed + 20);
  }, 400_000);
});
