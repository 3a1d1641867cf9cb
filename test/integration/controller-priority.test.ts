// Queue priorities on the real control plane: a spec change made while the periodic resync is
// going through every AgentCard is reconciled ahead of the resync, not behind it (the resync,
// like the first list and probe verdicts, is background work; see operator/runtime/workqueue.ts).
//
// Its own operator per case rather than the shared set-up (useOperatorInNamespace): the operator
// starts only once the case's AgentCards exist, with a resync and a concurrency of the case's own.
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestNamespace, kubeConfig, type TestNamespace } from '../support/cluster.ts';
import {
  Api,
  condition,
  installCrd,
  privateJwk,
  RESOURCE,
  sampleCard,
  startOperator,
  waitFor,
} from '../support/operator.ts';

const kc = kubeConfig();
const api = new Api(kc);
const namespaces: TestNamespace[] = [];
const CARDS = 300;
const RESYNC_S = 20;

beforeAll(async () => {
  await installCrd(kc);
});

afterAll(async () => {
  for (const ns of namespaces) await ns.cleanup();
});

/** The controller's "planned" debug lines (one per reconcile, in start order at concurrency 1). */
function planned(logs: readonly string[], from = 0): Array<{ name: string; generation: number }> {
  const out: Array<{ name: string; generation: number }> = [];
  for (const line of logs.slice(from)) {
    const l = JSON.parse(line) as { msg?: string; name?: string; generation?: number };
    if (l.msg === 'planned') out.push({ name: l.name!, generation: l.generation! });
  }
  return out;
}

describe('controller: queue priorities', () => {
  it('reconciles a spec change made during a resync before the rest of the resync', async () => {
    const ns = await createTestNamespace('controller-priority');
    namespaces.push(ns);
    await api.putSecret(ns.name, 'key', { jwk: await privateJwk('p1') }, true);
    const names = Array.from({ length: CARDS }, (_, i) => `card-${String(i).padStart(3, '0')}`);
    for (let i = 0; i < names.length; i += 10) {
      await Promise.all(
        names.slice(i, i + 10).map((name) =>
          api.createCard(ns.name, name, {
            card: sampleCard('1.0.0'),
            signing: { keys: [{ secretRef: { name: 'key', key: 'jwk' } }] },
          }),
        ),
      );
    }
    // One worker, so the log's order is the order reconciles start in.
    const op = await startOperator(ns.name, ['--resync', `${RESYNC_S}s`, '--concurrency', '1']);
    try {
      await waitFor(
        'every AgentCard reconciled once',
        async () => new Set(planned(op.logs).map((p) => p.name)).size === CARDS,
        120_000,
      );
      // A first full resync shows the order a resync goes in; its last card is the one to edit.
      const quiet = op.logs.length;
      await waitFor('a first resync', async () => planned(op.logs, quiet).length >= CARDS, 60_000);
      const order = planned(op.logs, quiet)
        .slice(0, CARDS)
        .map((p) => p.name);
      expect(new Set(order).size).toBe(CARDS);
      const target = order.at(-1)!;

      // The next resync: edit the target as soon as it has started.
      const mark = op.logs.length;
      await waitFor('the next resync', async () => planned(op.logs, mark).length > 0, 2 * RESYNC_S * 1000);
      await api.custom.patchNamespacedCustomObject(
        { ...RESOURCE, namespace: ns.name, name: target, body: { spec: { card: { version: '2.0.0' } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      await waitFor(
        'the edit reconciled',
        async () => planned(op.logs, mark).some((p) => p.name === target && p.generation === 2),
        60_000,
      );
      const run = planned(op.logs, mark);
      const position = run.findIndex((p) => p.name === target && p.generation === 2);
      // Behind the resync it would come last (119th of 120 before the queue had priorities);
      // ahead of it, after the reconciles that started before the watch event arrived. A resync
      // reconcile of an unchanged card writes nothing and takes a few ms, so that is a few on a
      // quiet machine but 39 and 80 of 120 in two runs of the whole suite (the event took about
      // half a second). Hence 300 cards, and the bound: a quarter of the resync still runs after
      // the edit, which a queue without priorities cannot do.
      expect(position).toBeLessThan((CARDS * 3) / 4);
      expect(run.slice(0, position).some((p) => p.name === target)).toBe(false);
      const cm = await api.getConfigMap(ns.name, `${target}-agent-card`);
      expect(cm?.data?.['agent-card.json']).toContain('"version":"2.0.0"');
      expect(condition(await api.getCard(ns.name, target), 'Ready')?.status).toBe('True');
    } finally {
      await op.stop();
    }
  }, 240_000);
});
