// One Namespace cache for the whole operator: with cluster catalogs (a ClusterAgentCatalog's
// namespaceSelector) and a namespace label adoption policy both on, the operator lists and watches
// Namespaces once (counted on the wire, through a relay in front of the real API server), and one
// label change on a namespace still reaches both controllers: the adoption controller creates
// (and then deletes) the card of a labelled Deployment, the catalog controller lists (and then
// leaves out) the namespace's card.
//
// Its own operator rather than the shared set-up (useOperatorInNamespace): it watches two
// namespaces (the team's and the one it publishes the cluster catalog in) through the relay.
//
// A standby (leader election, the Lease held by another replica) keeps the same one watch warm
// and writes nothing.
//
// And on a private control plane without the catalog CRDs (cluster catalogs asked for, so off
// with a warning): the Namespaces are watched only when the adoption policy still needs them, and
// the cache nobody needs holds readiness back for nothing.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { AppsV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiRelay, type RelayRequest } from '../support/api-relay.ts';
import { applyYaml } from '../support/apply.ts';
import { createTestNamespace, kubeConfig, kubeconfigPath, type TestNamespace } from '../support/cluster.ts';
import { startFaultCluster, type FaultCluster } from '../support/faults.ts';
import {
  Api,
  installCatalogCrds,
  privateJwk,
  sampleCard,
  spawnOperator,
  startOperator,
  waitFor,
  type ChildOperator,
  type InProcessOperator,
} from '../support/operator.ts';
import { useClusterLock } from '../support/cluster-lock.ts';

// Beside any file but the others of its family: see vitest.config.ts.
useClusterLock('cluster-catalogs');

const kc = kubeConfig();
const api = new Api(kc);
const apps = kc.makeApiClient(AppsV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const G = { group: 'agentcard.dev', version: 'v1alpha1' };
const LABEL = 'agentcard.dev/ns-cache-test';

let team: TestNamespace, pub: TestNamespace;

/** Flags that make both users of the Namespace cache run: cluster catalogs and label adoption. */
const bothUsers = () => [
  '--namespace',
  team.name,
  '--cluster-catalogs',
  '--operator-namespace',
  pub.name,
  '--adopt-namespace-label',
  `${LABEL}=${team.name}`,
];
let relay: ApiRelay;
let op: InProcessOperator;
const catalogName = () => `ns-cache-${team.name}`;

/** The operator's requests on the Namespace collection: its watches, and its lists. */
const namespaceRequests = (watch: boolean, through = relay) =>
  through.requests.filter(
    (r: RelayRequest) =>
      r.method === 'GET' &&
      r.path === '/api/v1/namespaces' &&
      ['1', 'true'].includes(r.query.get('watch') ?? '') === watch,
  );

async function labelTeam(value: string | null): Promise<void> {
  await api.core.patchNamespace({
    name: team.name,
    body: [
      value === null
        ? { op: 'remove', path: `/metadata/labels/${LABEL.replace('/', '~1')}` }
        : { op: 'add', path: `/metadata/labels/${LABEL.replace('/', '~1')}`, value },
    ],
  });
}

async function skipped(): Promise<string[]> {
  const c = (await custom.getClusterCustomObject({
    ...G,
    plural: 'clusteragentcatalogs',
    name: catalogName(),
  })) as { metadata: { generation: number }; status?: { observedGeneration?: number; skipped?: string[] } };
  return c.status?.observedGeneration === c.metadata.generation
    ? (c.status.skipped ?? [])
    : ['(not reconciled)'];
}

beforeAll(async () => {
  await installCatalogCrds(kc);
  team = await createTestNamespace('ns-cache-team');
  pub = await createTestNamespace('ns-cache-pub');
  relay = await ApiRelay.start(kc.getCurrentCluster()!.server, join(dirname(kubeconfigPath()), 'pki'));
  const kubeconfig = join(mkdtempSync(join(tmpdir(), 'ns-cache-')), 'kubeconfig');
  relay.writeKubeconfig(kubeconfigPath(), kubeconfig);

  // A card of the team that the catalog selects, not Ready (its key Secret is missing): listed in
  // status.skipped while its namespace is selected, absent otherwise.
  await custom.createNamespacedCustomObject({
    ...G,
    plural: 'agentcards',
    namespace: team.name,
    body: {
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'AgentCard',
      metadata: { name: 'pending', labels: { tier: 'public' } },
      spec: {
        card: sampleCard('1.0.0', { name: 'Agent pending', description: 'Waits for its key.' }),
        signing: { keys: [{ secretRef: { name: 'missing-key', key: 'jwk' } }] },
      },
    },
  });
  await api.putSecret(pub.name, 'catalog-key', { jwk: await privateJwk('catalog-k1') }, true);
  await custom.createClusterCustomObject({
    ...G,
    plural: 'clusteragentcatalogs',
    body: {
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'ClusterAgentCatalog',
      metadata: { name: catalogName() },
      spec: {
        namespaceSelector: { matchLabels: { [LABEL]: team.name } },
        selector: { matchLabels: { tier: 'public' } },
        publisher: 'example.com',
        signing: { keys: [{ secretRef: { name: 'catalog-key', key: 'jwk' } }] },
      },
    },
  });
  await apps.createNamespacedDeployment({
    namespace: team.name,
    body: {
      metadata: {
        name: 'weather',
        labels: { 'agentcard.dev/adopt': 'true' },
        annotations: { 'agentcard.dev/card-port': '9999' },
      },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: 'weather' } },
        template: {
          metadata: { labels: { app: 'weather' } },
          spec: { containers: [{ name: 'agent', image: 'agent:1', ports: [{ containerPort: 9999 }] }] },
        },
      },
    },
  });

  op = await startOperator(
    pub.name,
    [
      ...bothUsers(),
      // Only the Namespace watch can explain a reconcile within the test, not the resync.
      '--resync',
      '10m',
    ],
    { kubeconfig },
  );
}, 180_000);

afterAll(async () => {
  await custom
    .deleteClusterCustomObject({ ...G, plural: 'clusteragentcatalogs', name: catalogName() })
    .catch(() => {});
  await op?.stop();
  await relay?.close();
  await team?.cleanup();
  await pub?.cleanup();
});

describe('the shared Namespace cache', () => {
  it('watches Namespaces once for catalogs and adoption, and one label change reaches both', async () => {
    // Before the label: the namespace is neither selected by the catalog nor allowed for adoption.
    await waitFor('the cluster catalog reconciled', async () => (await skipped()).length === 0, 30_000);
    expect(await api.getCard(team.name, 'weather')).toBeUndefined();

    await labelTeam(team.name);
    await waitFor('the adopted card', () => api.getCard(team.name, 'weather'), 30_000);
    await waitFor(
      "the team's card in the cluster catalog (skipped: not Ready)",
      async () => (await skipped()).some((s) => s.startsWith(`${team.name}/pending`)),
      30_000,
    );

    await labelTeam(null);
    await waitFor(
      'the adopted card deleted',
      async () => (await api.getCard(team.name, 'weather')) === undefined,
      30_000,
    );
    await waitFor('the team left out again', async () => (await skipped()).length === 0, 30_000);

    // On the wire: one watch of the Namespaces, one access check (limit=1) and one full list;
    // with a cache per controller it was two of each.
    expect(namespaceRequests(true)).toHaveLength(1);
    const lists = namespaceRequests(false);
    expect(lists.filter((r) => r.query.get('limit') === '1')).toHaveLength(1);
    expect(lists.filter((r) => r.query.get('limit') !== '1' && !r.query.has('continue'))).toHaveLength(1);
    const synced = op.logs
      .map((l) => JSON.parse(l) as { msg?: string; informer?: string })
      .filter((l) => l.msg === 'informer synced' && l.informer?.startsWith('namespaces'));
    expect(synced.map((l) => l.informer)).toEqual(['namespaces']);
  });
});

describe('the shared Namespace cache on a standby', () => {
  let standby: ChildOperator | undefined;
  let through: ApiRelay | undefined;
  afterAll(async () => {
    if (standby && standby.child.exitCode === null) {
      standby.child.kill('SIGTERM');
      await standby.exited;
    }
    await through?.close();
  });

  it('watches Namespaces once while another replica leads, and writes nothing', async () => {
    // The Lease is held by a replica that is not there: this operator stays a standby.
    const now = new Date().toISOString().replace(/Z$/, '000Z'); // a MicroTime
    await applyYaml(
      JSON.stringify({
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'ns-cache-standby', namespace: pub.name },
        spec: { holderIdentity: 'the-leader', leaseDurationSeconds: 3600, acquireTime: now, renewTime: now },
      }),
      { kc },
    );
    through = await ApiRelay.start(kc.getCurrentCluster()!.server, join(dirname(kubeconfigPath()), 'pki'));
    const kubeconfig = join(mkdtempSync(join(tmpdir(), 'ns-cache-standby-')), 'kubeconfig');
    through.writeKubeconfig(kubeconfigPath(), kubeconfig);
    standby = spawnOperator(
      pub.name,
      [
        ...bothUsers(),
        '--leader-elect',
        '--leader-election-namespace',
        pub.name,
        '--leader-election-id',
        'ns-cache-standby',
        '--no-probes',
      ],
      { kubeconfig },
    );
    const port = await standby.metricsPort();
    await standby.waitForLog('informer synced', 60_000);
    await waitFor(
      'the Namespace informer synced on the standby',
      async () => standby!.lines.some((l) => l.includes('"informer":"namespaces"')),
      60_000,
    );
    await waitFor('/readyz', async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok, 30_000);
    // Its other caches synced too, so nothing more will be listed or watched at start.
    await waitFor(
      'every cache of the standby synced',
      async () => standby!.lines.some((l) => l.includes('"informer":"clusteragentcatalogs"')),
      30_000,
    );
    expect(namespaceRequests(true, through)).toHaveLength(1);
    expect(namespaceRequests(false, through).filter((r) => r.query.get('limit') === '1')).toHaveLength(1);
    expect(standby.lines.some((l) => l.includes('"msg":"became leader"'))).toBe(false);
    expect(through.requests.filter((r) => r.method !== 'GET')).toEqual([]);
  }, 120_000);
});

describe('the shared Namespace cache without the ClusterAgentCatalog CRD', () => {
  let cluster: FaultCluster | undefined;
  afterAll(async () => {
    await cluster?.instance.destroy();
  });

  /** An operator through a fresh relay to the private control plane, once ready. */
  async function readyOperator(name: string, extra: string[]) {
    cluster ??= await startFaultCluster();
    await cluster.api.core.createNamespace({ body: { metadata: { name } } });
    const through = await ApiRelay.start(cluster.instance.server, cluster.instance.pkiDir);
    const kubeconfig = join(cluster.instance.dir, `${name}.kubeconfig`);
    through.writeKubeconfig(cluster.instance.kubeconfig, kubeconfig);
    const operator = await startOperator(name, ['--cluster-catalogs', ...extra], { kubeconfig });
    try {
      await waitFor(
        '/readyz',
        async () => (await fetch(`http://127.0.0.1:${operator.metricsPort()}/readyz`)).ok,
        60_000,
      );
    } catch (err) {
      await operator.stop();
      await through.close();
      throw err;
    }
    return { operator, through };
  }

  it('with no other user, never lists nor watches Namespaces, and is ready', async () => {
    const { operator, through } = await readyOperator('ns-cache-alone', []);
    try {
      expect(operator.logs.some((l) => l.includes('the ClusterAgentCatalog CRD is not installed'))).toBe(
        true,
      );
      expect(operator.logs.some((l) => l.includes('no controller needs the namespaces while'))).toBe(true);
      expect(namespaceRequests(true, through)).toHaveLength(0);
      expect(namespaceRequests(false, through)).toHaveLength(0);
    } finally {
      await operator.stop();
      await through.close();
    }
  }, 120_000);

  it('with a namespace label adoption policy, watches them once for it', async () => {
    const { operator, through } = await readyOperator('ns-cache-adopt', [
      '--adopt-namespace-label',
      `${LABEL}=yes`,
    ]);
    try {
      expect(operator.logs.some((l) => l.includes('the ClusterAgentCatalog CRD is not installed'))).toBe(
        true,
      );
      // Ready once the list is loaded; the watch that follows may reach the relay a moment later.
      await waitFor('the Namespace watch', async () => namespaceRequests(true, through).length > 0, 10_000);
      expect(namespaceRequests(true, through)).toHaveLength(1);
      expect(namespaceRequests(false, through).filter((r) => r.query.get('limit') === '1')).toHaveLength(1);
    } finally {
      await operator.stop();
      await through.close();
    }
  }, 120_000);
});
