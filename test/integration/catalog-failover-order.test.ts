// What a new leader reconciles first among catalogs, by the same rule as AgentCards
// (runtime/startup.ts): a catalog changed while no leader ran (its spec, or its published
// ConfigMap deleted) goes before the re-plan of the unchanged catalogs, whatever its place in the
// list (the API server lists by name; the changed catalogs sort last here). Two real operator
// processes, one after the other, the second elected on a real Lease; the order is read from the
// new leader's log.
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestNamespace, kubeConfig, type TestNamespace } from '../support/cluster.ts';
import { installCatalogCrds, spawnOperator, waitFor, type ChildOperator } from '../support/operator.ts';

const kc = kubeConfig();
const custom = kc.makeApiClient(CustomObjectsApi);
const core = kc.makeApiClient(CoreV1Api);
const G = { group: 'agentcard.dev', version: 'v1alpha1', plural: 'agentcatalogs' };
let ns: TestNamespace;
const procs: ChildOperator[] = [];

/** Unchanged catalogs, listed before the changed ones (etcd lists by key: by name within a namespace). */
const BACKLOG = 30;
const unchanged = Array.from({ length: BACKLOG }, (_, i) => `catalog-${String(i).padStart(2, '0')}`);
const specChanged = 'zz-spec';
const configMapDeleted = 'zz-configmap';
const rootConfigMap = (name: string) => `${name}-ai-catalog`;

type Catalog = {
  metadata: { name: string; generation?: number };
  status?: { observedGeneration?: number; conditions?: Array<{ type: string; status: string }> };
};

beforeAll(async () => {
  await installCatalogCrds(kc);
  ns = await createTestNamespace('catalog-failover');
});

afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  await ns?.cleanup();
});

// As controller-failover-order.test.ts: the first operator runs without election, so that it
// cannot lose a Lease while publishing; the order, not the time, is what the test reads.
const elect = [
  ...['--leader-elect', '--leader-election-namespace', '', '--leader-election-id', 'catalog-order'],
  ...['--lease-duration', '15s', '--renew-deadline', '10s', '--retry-period', '1s'],
];
const flags = (extra: string[] = []) => ['--no-probes', ...extra];

async function catalogs(): Promise<Catalog[]> {
  const list = (await custom.listNamespacedCustomObject({ ...G, namespace: ns.name })) as {
    items: Catalog[];
  };
  return list.items;
}

const readyFor = (c: Catalog) =>
  c.status?.observedGeneration === c.metadata.generation &&
  c.status?.conditions?.find((x) => x.type === 'Ready')?.status === 'True';

/** The catalogs the operator started reconciling, in order, from its debug log. */
function reconcileOrder(op: ChildOperator): string[] {
  return op.lines
    .filter((l) => l.includes('"msg":"reconciling catalog"'))
    .map((l) =>
      String((JSON.parse(l) as { catalog: string }).catalog)
        .split('/')
        .pop()!,
    );
}

async function configMapExists(name: string): Promise<boolean> {
  return core.readNamespacedConfigMap({ namespace: ns.name, name }).then(
    () => true,
    () => false,
  );
}

describe('a new leader, for catalogs', () => {
  it('reconciles the catalogs changed while no leader ran before the unchanged backlog', async () => {
    for (const name of [...unchanged, specChanged, configMapDeleted])
      await custom.createNamespacedCustomObject({
        ...G,
        namespace: ns.name,
        body: {
          apiVersion: 'agentcard.dev/v1alpha1',
          kind: 'AgentCatalog',
          metadata: { name },
          spec: { publisher: 'example.com' },
        },
      });
    const first = spawnOperator(ns.name, flags(['--no-leader-elect']), { env: { POD_NAME: 'first' } });
    procs.push(first);
    await waitFor(
      'every catalog published and Ready',
      async () => {
        const all = await catalogs();
        return all.length === BACKLOG + 2 && all.every(readyFor);
      },
      // Starting a process from the sources takes a minute or more on a loaded machine.
      300_000,
    ).catch(async (err: unknown) => {
      const pending = (await catalogs()).filter((c) => !readyFor(c)).map((c) => c.metadata.name);
      throw new Error(
        `${String(err)}; not Ready: ${pending.join(', ')}; log: ${first.lines.slice(-5).join('\n')}`,
      );
    });
    expect(await configMapExists(rootConfigMap(configMapDeleted))).toBe(true);

    // The leader dies; while no operator runs, one spec changes and one published ConfigMap goes.
    first.child.kill('SIGKILL');
    await first.exited;
    await custom.patchNamespacedCustomObject(
      {
        ...G,
        namespace: ns.name,
        name: specChanged,
        body: { spec: { publisher: 'example.org' } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await core.deleteNamespacedConfigMap({ namespace: ns.name, name: rootConfigMap(configMapDeleted) });

    // The catalog controller runs two reconciles at once, so the first two started are the
    // first two it took from its queue.
    const next = spawnOperator(ns.name, flags(elect.map((f) => f || ns.name)), {
      env: { POD_NAME: 'next', AGENTCARD_LOG_LEVEL: 'debug' },
    });
    procs.push(next);
    await next.waitForLog('became leader', 300_000);
    const started = await next.waitForLog('caches synced; reconciling catalogs', 60_000);
    await waitFor(
      'every catalog re-planned',
      async () => reconcileOrder(next).length >= BACKLOG + 2,
      120_000,
    );

    const order = reconcileOrder(next);
    expect(order.slice(0, 2).sort()).toEqual([configMapDeleted, specChanged]);
    expect([...new Set(order.slice(2))].sort()).toEqual(unchanged); // then the unchanged ones
    expect(started).toMatchObject({ catalogs: BACKLOG + 2, changed: 2 });
    // And the two were written: the new spec published, the ConfigMap back.
    await waitFor('the changed catalog Ready', async () => {
      const all = await catalogs();
      const c = all.find((x) => x.metadata.name === specChanged);
      return c?.metadata.generation === 2 && readyFor(c);
    });
    await waitFor('the deleted ConfigMap back', () => configMapExists(rootConfigMap(configMapDeleted)));
    const written = next.lines
      .filter((l) => l.includes('"msg":"catalog reconciled"'))
      .map((l) =>
        String((JSON.parse(l) as { catalog: string }).catalog)
          .split('/')
          .pop()!,
      );
    expect(written.sort()).toEqual([configMapDeleted, specChanged]); // the backlog had nothing to write
  }, 900_000);
});
