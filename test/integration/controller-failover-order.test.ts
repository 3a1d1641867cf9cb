// What a new leader reconciles first: a card changed while no leader ran (its spec, or its
// published ConfigMap deleted) goes before the re-plan of the unchanged cards, whatever its place
// in the list (the API server lists by name; the changed cards sort last here). Two real operator
// processes, one after the other, the second elected on a real Lease; the order is read from the
// new leader's log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configMapName } from '../../operator/api/names.ts';
import { createTestNamespace, kubeConfig, type TestNamespace } from '../support/cluster.ts';
import {
  Api,
  condition,
  installCrd,
  RESOURCE,
  sampleCard,
  spawnOperator,
  waitFor,
  type AgentCardLive,
  type ChildOperator,
} from '../support/operator.ts';

const kc = kubeConfig();
const api = new Api(kc);
let ns: TestNamespace;
const procs: ChildOperator[] = [];

/** Unchanged cards, listed before the changed ones (etcd lists by key: by name within a namespace). */
const BACKLOG = 40;
const unchanged = Array.from({ length: BACKLOG }, (_, i) => `card-${String(i).padStart(2, '0')}`);
const specChanged = 'zz-spec';
const configMapDeleted = 'zz-configmap';

beforeAll(async () => {
  await installCrd(kc);
  ns = await createTestNamespace('failover-order');
});

afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  await ns?.cleanup();
});

// Timings that a loaded machine keeps (the order, not the time, is what the test reads). The
// first operator runs without election, so that it cannot lose a Lease while publishing.
const elect = [
  ...['--leader-elect', '--leader-election-namespace', '', '--leader-election-id', 'order'],
  ...['--lease-duration', '15s', '--renew-deadline', '10s', '--retry-period', '1s'],
];
const flags = (extra: string[] = []) => ['--no-probes', '--no-catalogs', ...extra];
const alone = ['--no-leader-elect'];

async function cards(): Promise<AgentCardLive[]> {
  const list = (await api.custom.listNamespacedCustomObject({ ...RESOURCE, namespace: ns.name })) as {
    items: AgentCardLive[];
  };
  return list.items;
}

const readyFor = (card: AgentCardLive) =>
  card.status?.observedGeneration === card.metadata.generation && condition(card, 'Ready')?.status === 'True';

/** The cards the operator planned, in order, from its debug log ("planned": one per reconcile). */
function plannedOrder(op: ChildOperator): string[] {
  return op.lines
    .filter((l) => l.includes('"msg":"planned"'))
    .map((l) => String((JSON.parse(l) as { name: string }).name));
}

describe('a new leader', () => {
  it('reconciles the cards changed while no leader ran before the unchanged backlog', async () => {
    for (const name of [...unchanged, specChanged, configMapDeleted])
      await api.createCard(ns.name, name, { card: sampleCard('1.0.0') });
    const first = spawnOperator(ns.name, flags(alone), { env: { POD_NAME: 'first' } });
    procs.push(first);
    await waitFor(
      'every card published and Ready',
      async () => {
        const all = await cards();
        return all.length === BACKLOG + 2 && all.every(readyFor);
      },
      // Starting a process from the sources takes a minute or more on a loaded machine.
      300_000,
    ).catch(async (err: unknown) => {
      const all = await cards();
      const pending = all.filter((c) => !readyFor(c)).map((c) => c.metadata.name);
      throw new Error(
        `${String(err)}; not Ready: ${pending.join(', ')}; log: ${first.lines.slice(-5).join('\n')}`,
      );
    });
    expect(await api.getConfigMap(ns.name, configMapName(configMapDeleted))).toBeDefined();

    // The leader dies; while no operator runs, one spec changes and one published ConfigMap goes.
    first.child.kill('SIGKILL');
    await first.exited;
    await api.replaceSpec(ns.name, specChanged, { card: sampleCard('2.0.0') });
    await api.core.deleteNamespacedConfigMap({ namespace: ns.name, name: configMapName(configMapDeleted) });

    // One reconcile at a time, so the log's order is the queue's order.
    const next = spawnOperator(ns.name, flags(['--concurrency', '1', ...elect.map((f) => f || ns.name)]), {
      env: { POD_NAME: 'next', AGENTCARD_LOG_LEVEL: 'debug' },
    });
    procs.push(next);
    await next.waitForLog('became leader', 300_000);
    const started = await next.waitForLog('caches synced; reconciling', 60_000);
    expect(started).toMatchObject({ agentCards: BACKLOG + 2, changed: 2 });
    await waitFor('every card re-planned', async () => plannedOrder(next).length >= BACKLOG + 2, 120_000);

    const order = plannedOrder(next);
    expect(order.slice(0, 2).sort()).toEqual([configMapDeleted, specChanged]);
    expect(order.slice(2).sort()).toEqual(unchanged); // then each unchanged card, once
    // And the two were written: the new spec published, the ConfigMap back.
    await waitFor('the changed spec Ready', async () => {
      const card = await api.getCard(ns.name, specChanged);
      return card?.metadata.generation === 2 && readyFor(card);
    });
    expect(await api.getConfigMap(ns.name, configMapName(configMapDeleted))).toBeDefined();
    const writes = next.lines
      .filter((l) => l.includes('"msg":"reconciled"'))
      .map((l) => String((JSON.parse(l) as { name: string }).name));
    expect(writes.sort()).toEqual([configMapDeleted, specChanged]); // the backlog had nothing to write
  }, 900_000);
});
