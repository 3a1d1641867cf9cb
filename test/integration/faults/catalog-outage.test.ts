// Fault suite: the catalog controller's work queue behind the API-health outage gate, as the
// AgentCard controller's is (faults/operator.test.ts, faults/control-plane.test.ts). The API
// server, reached through a relay, refuses every write with 429 while its watches keep
// streaming: catalogs created meanwhile reach the operator, their writes fail, and the gate holds
// the queue (one probe per backoff step) instead of every catalog retrying on its own backoff.
// When the API server takes writes again, every catalog is published.
import { join } from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, CATALOG_KIND, CATALOG_PLURAL, GROUP } from '../../../operator/api/names.ts';
import { ApiRelay, type RelayRequest } from '../../support/api-relay.ts';
import { startFaultCluster, type FaultCluster } from '../../support/faults.ts';
import { recordFigure } from '../../support/figures.ts';
import { installCatalogCrds, spawnOperator, waitFor, type ChildOperator } from '../../support/operator.ts';

let cluster: FaultCluster;
let relay: ApiRelay | undefined;
let op: ChildOperator | undefined;

beforeAll(async () => {
  cluster = await startFaultCluster();
  await installCatalogCrds(cluster.kc);
}, 300_000);

afterAll(async () => {
  if (op && op.child.exitCode === null) op.child.kill('SIGKILL');
  await relay?.close();
  await cluster?.instance.destroy();
});

const G = { group: GROUP, version: API_VERSION.split('/')[1]!, plural: CATALOG_PLURAL };

async function createCatalog(ns: string, name: string): Promise<void> {
  await cluster.kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    ...G,
    namespace: ns,
    body: {
      apiVersion: API_VERSION,
      kind: CATALOG_KIND,
      metadata: { name },
      spec: { publisher: 'example.com' },
    },
  });
}

async function ready(ns: string, name: string): Promise<boolean> {
  const obj = (await cluster.kc
    .makeApiClient(CustomObjectsApi)
    .getNamespacedCustomObject({ ...G, namespace: ns, name })) as {
    status?: { conditions?: Array<{ type: string; status: string }> };
  };
  return obj.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** A write to a catalog's ConfigMap or status, as the relay saw it. */
const catalogWrite = (r: RelayRequest) =>
  r.method !== 'GET' &&
  (/\/configmaps\/[^/]+-ai-catalog$/.test(r.path) || r.path.includes(`/${CATALOG_PLURAL}/`));

describe('faults: the catalog controller during an API outage', () => {
  it('writes refused with 429 past three breaker steps: the outage gate holds the catalog queue, every catalog is published after', async () => {
    const ns = 'catalog-outage';
    await cluster.api.core.createNamespace({ body: { metadata: { name: ns } } });
    relay = await ApiRelay.start(cluster.instance.server, cluster.instance.pkiDir);
    const kubeconfig = join(cluster.instance.dir, 'catalog-outage.kubeconfig');
    relay.writeKubeconfig(cluster.instance.kubeconfig, kubeconfig);
    op = spawnOperator(ns, ['--no-leader-elect', '--no-probes'], { kubeconfig });
    await op.metricsPort();
    // Through the relay, a catalog is published as usual.
    await createCatalog(ns, 'before');
    await waitFor('the first catalog Ready', () => ready(ns, 'before'), 60_000);

    relay.setMode({ kind: 'fail', status: 429, only: 'writes' });
    const from = Date.now();
    const names = Array.from({ length: 10 }, (_, i) => `during-${i}`);
    // Created with the admin client, not through the relay: the operator's watch delivers them.
    for (const name of names) await createCatalog(ns, name);
    await waitFor(
      'the refused catalog writes',
      async () => relay!.requests.some((r) => r.at >= from && catalogWrite(r) && r.outcome === 429),
      30_000,
    );
    // The outage lasts until the gate has backed off to its 4 s step: its probes (one refused write
    // each) 1, 2 and 4 s apart. Without the gate the 10 catalogs would each retry 1, 2, 4 s after
    // their last failure, and the refused writes would never be 4 s apart this early.
    const refusedAt = () =>
      relay!.requests.filter((r) => r.at >= from && catalogWrite(r) && r.outcome === 429).map((r) => r.at);
    await waitFor(
      'refused writes 4 s apart (the gate at its third step)',
      async () => refusedAt().some((at, i, all) => i > 0 && at - all[i - 1]! >= 3_500),
      30_000,
    );
    const to = Date.now();
    relay.setMode({ kind: 'pass' });
    const during = relay.requests.filter((r) => r.at >= from && r.at < to && catalogWrite(r));
    // Nothing was taken while writes were refused.
    expect(during.every((r) => r.outcome === 429)).toBe(true);

    await waitFor(
      'every catalog Ready',
      async () => (await Promise.all(names.map((n) => ready(ns, n)))).every(Boolean),
      60_000,
    );
    const recoveredMs = Date.now() - to;
    for (const name of names) expect(await cluster.api.getConfigMap(ns, `${name}-ai-catalog`)).toBeDefined();
    recordFigure('catalog-outage', { catalogs: names.length, refusedWrites: during.length, recoveredMs });
    // Held: the runs in flight when the gate opened (the queue's concurrency, 2) and one probe per
    // breaker step (1, 2, 4 s). Without the gate each of the 10 catalogs retries on its own
    // backoff (1, 2, 4 s): about 40 refused writes by then.
    expect(to - from).toBeGreaterThanOrEqual(1_000 + 2_000 + 3_500);
    expect(during.length).toBeLessThanOrEqual(2 + 3 + 2);
    // The gate's recovery (the breaker's next probe, at most 8 s away here) publishes them all.
    expect(recoveredMs).toBeLessThan(8_000 + 10_000);
    op.child.kill('SIGTERM');
    expect(await op.exited).toBe(0);
  }, 180_000);
});
