// The catalog reconcile decision, without a cluster: what it publishes, that a second plan over
// the published state writes nothing (signatures kept), conditions, scope and stale partitions.
import { describe, expect, it } from 'vitest';
import { generateSigningJwk } from '../../../../operator/card/keygen.ts';
import { verifyCatalog } from '../../../../operator/catalog/signature.ts';
import type { CardView } from '../../../../operator/catalog/entries.ts';
import type { ConfigMapObject } from '../../../../operator/runtime/configmaps.ts';
import { buildCatalog } from '../../../../operator/catalog/build.ts';
import { signCatalog } from '../../../../operator/catalog/signature.ts';
import {
  planCatalog,
  reconcileCatalogPlan,
  type CatalogEngine,
  type CatalogPlanInput,
} from '../../../../operator/controllers/catalogs/plan.ts';
import { minimalCard } from '../../../support/cards.ts';

const view = (namespace: string, name: string, extra: Partial<CardView> = {}): CardView => ({
  namespace,
  name,
  labels: { tier: 'public' },
  annotations: {},
  card: { ...minimalCard(), name: `Agent ${name}` },
  ready: 'True',
  signed: false,
  ...extra,
});

async function secretWith(kid: string) {
  const jwk = JSON.stringify(await generateSigningJwk('ES256', kid));
  return new Map([['key', { data: { jwk: Buffer.from(jwk).toString('base64') }, labelled: true }]]);
}

function input(
  overrides: Partial<CatalogPlanInput> = {},
  live = new Map<string, ConfigMapObject>(),
): CatalogPlanInput {
  return {
    kind: 'ClusterAgentCatalog',
    catalog: { metadata: { name: 'all', uid: 'uid-1', generation: 1 }, spec: { publisher: 'example.com' } },
    publishNamespace: 'ops',
    cards: [view('a', 'one'), view('b', 'two'), view('c', 'three')],
    namespaceLabels: (ns) => ({ env: ns === 'c' ? 'dev' : 'prod' }),
    secrets: new Map(),
    liveConfigMap: (name) => live.get(name),
    liveNames: [...live.keys()],
    now: new Date('2026-12-01T00:00:00Z'),
    ...overrides,
  };
}

const entriesOf = (cm: ConfigMapObject) =>
  (JSON.parse(cm.data['ai-catalog.json']!) as { entries: Array<{ identifier: string }> }).entries.map(
    (e) => e.identifier,
  );

describe('planning a catalog', () => {
  it('publishes a signed catalog, its page and jwks, and reports it; a second plan writes nothing', async () => {
    const secrets = await secretWith('cat-1');
    const catalog = {
      metadata: { name: 'all', uid: 'uid-1', generation: 1 },
      spec: {
        publisher: 'example.com',
        namespaceSelector: { matchLabels: { env: 'prod' } },
        signing: { keys: [{ secretRef: { name: 'key', key: 'jwk' } }] },
      },
    };
    const first = await planCatalog(input({ catalog, secrets }));
    expect(first.configMaps).toHaveLength(1);
    const cm = first.configMaps[0]!;
    expect(cm.metadata).toMatchObject({
      name: 'all-cluster-ai-catalog',
      namespace: 'ops',
      labels: {
        'app.kubernetes.io/managed-by': 'agentcard-operator',
        'agentcard.dev/catalog': 'cluster.all',
      },
      ownerReferences: [{ kind: 'ClusterAgentCatalog', name: 'all', uid: 'uid-1', controller: true }],
    });
    expect(Object.keys(cm.data).sort()).toEqual([
      'ai-catalog.json',
      'cache-max-age-seconds',
      'index.html',
      'jwks.json',
    ]);
    expect(entriesOf(cm)).toEqual(['urn:air:example.com:a:one', 'urn:air:example.com:b:two']); // c is not selected
    const verified = await verifyCatalog(
      JSON.parse(cm.data['ai-catalog.json']!),
      JSON.parse(cm.data['jwks.json']!),
    );
    expect(verified).toMatchObject({ verified: true, kid: 'cat-1' });
    expect(first.status).toMatchObject({
      entries: 2,
      partitions: 0,
      configMap: 'all-cluster-ai-catalog',
      namespace: 'ops',
      signatures: [{ kid: 'cat-1', alg: 'ES256' }],
    });
    expect(first.status.conditions?.map((c) => `${c.type}=${c.status}`)).toEqual([
      'Accepted=True',
      'Signed=True',
      'Published=True',
      'Ready=True',
    ]);
    expect(first.statusChanged).toBe(true);

    // The same state again, an hour later: same bytes (the ES256 signature is kept), no write.
    const second = await planCatalog(
      input(
        { catalog: { ...catalog, status: first.status }, secrets, now: new Date('2026-12-01T01:00:00Z') },
        new Map([[cm.metadata.name, cm]]),
      ),
    );
    expect(second.configMaps).toEqual([]);
    expect(second.statusChanged).toBe(false);
  });

  it('an AgentCatalog lists only its own namespace, whatever it is given', async () => {
    const plan = await planCatalog(
      input({
        kind: 'AgentCatalog',
        catalog: { metadata: { name: 'team', namespace: 'b', uid: 'u', generation: 1 }, spec: {} },
        publishNamespace: 'b',
      }),
    );
    expect(plan.configMaps[0]!.metadata.name).toBe('team-ai-catalog');
    expect(entriesOf(plan.configMaps[0]!)).toEqual(['urn:air:cluster.local:b:two']);
  });

  it('refuses a bad spec with Accepted=False and keeps what was published', async () => {
    const plan = await planCatalog(
      input({
        catalog: { metadata: { name: 'all', uid: 'u', generation: 2 }, spec: { entries: 'everything' } },
      }),
    );
    expect(plan.configMaps).toEqual([]);
    const accepted = plan.status.conditions?.find((c) => c.type === 'Accepted');
    expect(accepted).toMatchObject({ status: 'False', reason: 'InvalidSpec', observedGeneration: 2 });
    expect(accepted?.message).toMatch(/^spec\.entries: /);
    expect(plan.ready).toBe('False');
  });

  it('a missing signing key blocks publishing with SigningKeyNotFound, and says so', async () => {
    const plan = await planCatalog(
      input({
        catalog: {
          metadata: { name: 'all', uid: 'u', generation: 1 },
          spec: { signing: { keys: [{ secretRef: { name: 'nope', key: 'jwk' } }] } },
        },
      }),
    );
    expect(plan.configMaps).toEqual([]);
    expect(plan.status.conditions?.find((c) => c.type === 'Signed')).toMatchObject({
      status: 'False',
      reason: 'SigningKeyNotFound',
    });
    expect(plan.ready).toBe('False');
  });

  it('empties a partition it no longer needs instead of deleting it', async () => {
    const stale: ConfigMapObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'all-cluster-ai-catalog-p1',
        namespace: 'ops',
        labels: {
          'app.kubernetes.io/managed-by': 'agentcard-operator',
          'agentcard.dev/catalog': 'cluster.all',
        },
        ownerReferences: [
          {
            apiVersion: 'agentcard.dev/v1alpha1',
            kind: 'ClusterAgentCatalog',
            name: 'all',
            uid: 'uid-1',
            controller: true,
          },
        ],
      },
      data: {
        'ai-catalog.p1.json': '{"specVersion":"1.0","entries":[]}',
        'index.p1.html': '<!DOCTYPE html>',
      },
    };
    const plan = await planCatalog(input({}, new Map([[stale.metadata.name, stale]])));
    const emptied = plan.configMaps.find((c) => c.metadata.name === 'all-cluster-ai-catalog-p1');
    expect(emptied?.data).toEqual({});
  });

  it('lists not-Ready cards in status.skipped with why', async () => {
    const plan = await planCatalog(
      input({
        cards: [view('a', 'one'), view('a', 'slow', { ready: 'False', readyMessage: 'Signed: no key' })],
      }),
    );
    expect(plan.status.entries).toBe(1);
    expect(plan.status.skipped).toEqual(['a/slow: not Ready (Signed: no key)']);
    expect(plan.status.conditions?.find((c) => c.type === 'Published')?.message).toMatch(
      /1 selected AgentCard\(s\) left out, first: a\/slow/,
    );
  });
});

describe('reconcileCatalogPlan: decide once, derive the status for the publish result', () => {
  /** The real catalog engine, counting its calls. */
  function countingEngine() {
    const calls = { build: 0, sign: 0 };
    const engine: CatalogEngine = {
      build: (args) => {
        calls.build++;
        return buildCatalog(args);
      },
      sign: (...args) => {
        calls.sign++;
        return signCatalog(...args);
      },
    };
    return { calls, engine };
  }
  const signedCatalog = {
    metadata: { name: 'all', uid: 'uid-1', generation: 1 },
    spec: { publisher: 'example.com', signing: { keys: [{ secretRef: { name: 'key', key: 'jwk' } }] } },
  };

  it('a failed publish builds and signs once, and reports PublishFailed with nothing claimed', async () => {
    const secrets = await secretWith('cat-1');
    const { calls, engine } = countingEngine();
    const attempted: string[][] = [];
    const { plan } = await reconcileCatalogPlan(
      input({ catalog: signedCatalog, secrets }),
      async (cms) => {
        attempted.push(cms.map((cm) => cm.metadata.name));
        return { result: 'PublishFailed', message: 'HTTP 500: etcd is down', error: new Error('down') };
      },
      engine,
    );
    expect(attempted).toEqual([['all-cluster-ai-catalog']]);
    expect(calls).toEqual({ build: 1, sign: 1 });
    const published = plan.status.conditions!.find((c) => c.type === 'Published')!;
    expect(published).toMatchObject({ status: 'False', reason: 'PublishFailed' });
    expect(published.message).toBe(
      'writing the catalog ConfigMaps in ops failed: HTTP 500: etcd is down; retrying with backoff; nothing is published yet',
    );
    expect(plan.status.digest).toBeUndefined();
    expect(plan.configMaps).toEqual([]);
    expect(plan.ready).toBe('False');
  });

  it('a 422 builds and signs once; an outage leaves the status as it is', async () => {
    const secrets = await secretWith('cat-1');
    const rejected = countingEngine();
    const r = await reconcileCatalogPlan(
      input({ catalog: signedCatalog, secrets }),
      async () => ({ result: 'PublishRejected', message: 'HTTP 422: denied' }),
      rejected.engine,
    );
    expect(rejected.calls).toEqual({ build: 1, sign: 1 });
    expect(r.plan.status.conditions!.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'PublishRejected',
    });
    const outage = countingEngine();
    const o = await reconcileCatalogPlan(
      input({ catalog: { ...signedCatalog, status: r.plan.status }, secrets }),
      async () => ({ result: 'Outage', error: new Error('connection refused') }),
      outage.engine,
    );
    expect(outage.calls).toEqual({ build: 1, sign: 1 });
    expect(o.plan.statusChanged).toBe(false);
    expect(o.plan.configMaps).toEqual([]);
  });
});
