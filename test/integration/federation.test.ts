// Two clusters in one test (docs/federation.md): cluster A is the shared control plane, cluster B
// a second control plane of its own; each runs its own operator and its own catalog server (the
// real `agentcard sidecar` behind a TLS nginx). A publishes a signed catalog of cards signed with
// certificates cert-manager issued from A's CA; B imports it (CatalogImport) with a trust bundle
// and an identity pattern, and B's AgentCatalog lists A's agents, verified, marked with their
// origin. Then, in order: an agent signed for a foreign identity is refused; a tampered byte on
// the way is refused and the last good stays; an agent removed at A leaves B; A down, then back;
// and A and B importing each other list each agent once and write nothing over two intervals.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publicJwks, importSigningKey } from '../../operator/card/sign.ts';
import { verifyCard } from '../../operator/card/verify.ts';
import { parseTrustBundle } from '../../operator/card/x5c.ts';
import type { AiCatalog } from '../../operator/catalog/document.ts';
import { IMPORTED_EXTENSION } from '../../operator/catalog/imported.ts';
import { verifyCatalog } from '../../operator/catalog/signature.ts';
import { discover } from '../../operator/discover/discover.ts';
import { createAddressPolicy } from '../../operator/probe/policy.ts';
import { ControlPlaneInstance } from '../controlplane/instance.ts';
import { startCatalogHost, type CatalogHost } from '../support/catalog-host.ts';
import {
  caIssuer,
  startCertManager,
  waitForCertificateReady,
  type CaIssuer,
  type CertManager,
} from '../support/cert-manager.ts';
import { createTestNamespace, kubeConfig, testNamespace, type TestNamespace } from '../support/cluster.ts';
import {
  Api,
  installCatalogCrds,
  installImportCrd,
  privateJwk,
  sampleCard,
  sleep,
  startOperator,
  waitFor,
  type InProcessOperator,
} from '../support/operator.ts';
import { createTestCa } from '../support/tls-certs.ts';

const G = { group: 'agentcard.dev', version: 'v1alpha1' };
const CM = { group: 'cert-manager.io', version: 'v1' };
/** The shortest interval the CatalogImport schema allows, what the imports here ask for. */
const SPEC_INTERVAL = '30s';
/**
 * The time between fetches the operators here keep for it: a third of it (startOperator's
 * importFetchIntervalMs, tests only), so that each "within one interval" below takes 10 s, not
 * 30. Longer than the operators' 5 s resync, so resyncs between fetches still write nothing.
 */
const INTERVAL_MS = 10_000;
const fetchIntervalMs = (specMs: number) => specMs / 3;
const tmp = mkdtempSync(join(tmpdir(), 'agentcard-federation-'));

const kcA = kubeConfig();
let kcB: KubeConfig;
let clusterB: ControlPlaneInstance | undefined;
let nsA: TestNamespace;
let nsB: { name: string };
let opA: InProcessOperator | undefined;
let opB: InProcessOperator | undefined;
let certManager: CertManager | undefined;
let ca: CaIssuer;
let hostA: CatalogHost | undefined;
let hostB: CatalogHost | undefined;
let tlsCaFile: string;
let tlsCa: string;
let bJwks: string;

const spiffeA = (sa: string) => `spiffe://a.example.org/ns/${nsA.name}/sa/${sa}`;
const idA = (name: string) => `urn:air:a.example.org:${nsA.name}:${name}`;
const idB = (name: string) => `urn:air:b.example.org:${nsB.name}:${name}`;
const custom = (kc: KubeConfig) => kc.makeApiClient(CustomObjectsApi);
const core = (kc: KubeConfig) => kc.makeApiClient(CoreV1Api);

/** The card, catalog and CatalogImport CRDs of one cluster. */
async function installCrds(kc: KubeConfig) {
  await installCatalogCrds(kc);
  await installImportCrd(kc);
}

async function create(kc: KubeConfig, ns: string, plural: string, body: Record<string, unknown>) {
  await custom(kc).createNamespacedCustomObject({ ...G, namespace: ns, plural, body });
}

/** A Certificate of cluster A's CA for a workload identity, into the Secret `<name>-tls`. */
async function certificate(name: string, identity: string) {
  await custom(kcA).createNamespacedCustomObject({
    ...CM,
    namespace: nsA.name,
    plural: 'certificates',
    body: {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name },
      spec: {
        secretName: `${name}-tls`,
        uris: [identity],
        usages: ['digital signature'],
        privateKey: { algorithm: 'ECDSA', size: 256 },
        issuerRef: { name: ca.name, kind: 'Issuer', group: 'cert-manager.io' },
      },
    },
  });
}

const agentCardBody = (ns: string, name: string, signing: unknown) => ({
  apiVersion: 'agentcard.dev/v1alpha1',
  kind: 'AgentCard',
  metadata: { name, namespace: ns },
  spec: {
    card: sampleCard('1.0.0', { name: `Agent ${name}`, description: `The ${name} agent.` }),
    signing,
  },
});

async function catalogDoc(kc: KubeConfig, ns: string, name: string): Promise<AiCatalog | undefined> {
  const cm = await core(kc)
    .readNamespacedConfigMap({ namespace: ns, name: `${name}-ai-catalog` })
    .catch(() => undefined);
  const text = cm?.data?.['ai-catalog.json'];
  return text ? (JSON.parse(text) as AiCatalog) : undefined;
}

const ids = (doc: AiCatalog | undefined) => (doc?.entries ?? []).map((e) => e.identifier).sort();

interface ImportStatus {
  lastFetchTime?: string;
  imported?: number;
  stale?: number;
  refused?: Record<string, number>;
  refusedEntries?: string[];
  conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
}

async function importStatus(kc: KubeConfig, ns: string, name: string): Promise<ImportStatus> {
  const obj = (await custom(kc).getNamespacedCustomObject({
    ...G,
    namespace: ns,
    plural: 'catalogimports',
    name,
  })) as { status?: ImportStatus };
  return obj.status ?? {};
}

/** A page of a catalog host, over TLS with the hosts' CA. */
function httpsGet(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    get(url, { ca: tlsCa }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve(body));
    }).on('error', reject);
  });
}

/**
 * The status of B's import of A once it has fetched at `since` or later (lastFetchTime has whole
 * seconds) and `ok` holds; within one interval and some slack.
 */
async function fetchedSince(since: number, ok: (s: ImportStatus) => boolean): Promise<ImportStatus> {
  const from = Math.floor(since / 1000) * 1000;
  return waitFor(
    'a fetch of A by B',
    async () => {
      const s = await importStatus(kcB, nsB.name, 'cluster-a');
      return s.lastFetchTime && Date.parse(s.lastFetchTime) >= from && ok(s) ? s : undefined;
    },
    INTERVAL_MS + 15_000,
  );
}

const condition = (s: ImportStatus, type: string) => s.conditions?.find((c) => c.type === type);

/** Resource versions of a namespace's catalog and import ConfigMaps and its imports (what a write moves). */
async function versions(kc: KubeConfig, ns: string): Promise<Record<string, string>> {
  const list = await core(kc).listNamespacedConfigMap({ namespace: ns });
  const out: Record<string, string> = {};
  for (const cm of list.items) {
    const labels = cm.metadata?.labels ?? {};
    if (labels['agentcard.dev/catalog'] || labels['agentcard.dev/catalog-import'])
      out[cm.metadata!.name!] = cm.metadata!.resourceVersion!;
  }
  const imports = (await custom(kc).listNamespacedCustomObject({
    ...G,
    namespace: ns,
    plural: 'catalogimports',
  })) as { items: Array<{ metadata: { name: string; resourceVersion: string } }> };
  for (const imp of imports.items) out[`import/${imp.metadata.name}`] = imp.metadata.resourceVersion;
  return out;
}

beforeAll(async () => {
  // TLS of both catalog hosts, trusted by both operators (--probe-ca-file).
  const serverCa = await createTestCa('federation test hosts CA');
  tlsCa = serverCa.cert;
  tlsCaFile = join(tmp, 'hosts-ca.pem');
  writeFileSync(tlsCaFile, tlsCa);
  const tls = await serverCa.issue({ ips: ['127.0.0.1'] });

  // Cluster B starts while cluster A's cert-manager issues certificates.
  const startB = (async () => {
    clusterB = await ControlPlaneInstance.start(() => {});
    kcB = new KubeConfig();
    kcB.loadFromFile(clusterB.kubeconfig);
    await installCrds(kcB);
    const ns = testNamespace('fed-b', kcB);
    await ns.create();
    nsB = { name: ns.name };
  })();

  await installCrds(kcA);
  nsA = await createTestNamespace('fed-a');
  certManager = await startCertManager({ namespace: nsA.name, logFile: join(tmp, 'cert-manager.log') });
  ca = await caIssuer(nsA.name, { commonName: 'cluster A workload CA' });
  await certificate('weather', spiffeA('weather'));
  await certificate('radar', spiffeA('radar'));
  // The same CA, but an identity outside the pattern cluster B trusts.
  await certificate('foreign', 'spiffe://elsewhere.example.org/ns/x/sa/foreign');
  await certificate('catalog', spiffeA('catalog'));
  await Promise.all(
    ['weather', 'radar', 'foreign', 'catalog'].map((n) => waitForCertificateReady(nsA.name, n)),
  );
  await startB;

  const flags = ['--probe-allow-cidr', '127.0.0.1/32', '--probe-ca-file', tlsCaFile, '--resync', '5s'];
  opA = await startOperator(nsA.name, flags, { importFetchIntervalMs: fetchIntervalMs });
  opB = await startOperator(nsB.name, flags, {
    kubeconfig: clusterB!.kubeconfig,
    importFetchIntervalMs: fetchIntervalMs,
  });

  // Cluster A: three signed cards, a catalog of them (inline, signed with A's certificate).
  for (const name of ['weather', 'radar', 'foreign'])
    await create(
      kcA,
      nsA.name,
      'agentcards',
      agentCardBody(nsA.name, name, { keys: [{ certificate: { secretName: `${name}-tls` } }] }),
    );
  await create(kcA, nsA.name, 'agentcatalogs', {
    apiVersion: 'agentcard.dev/v1alpha1',
    kind: 'AgentCatalog',
    metadata: { name: 'a', namespace: nsA.name },
    spec: {
      publisher: 'a.example.org',
      entries: 'inline',
      host: { displayName: 'Cluster A' },
      signing: { keys: [{ certificate: { secretName: 'catalog-tls' } }] },
      imports: { selector: {} },
    },
  });

  // Cluster B: one card signed with a JWKS key, a catalog signed with the same key.
  const jwk = await privateJwk('cluster-b');
  bJwks = JSON.stringify(publicJwks([await importSigningKey(jwk)]));
  await new Api(kcB).putSecret(nsB.name, 'b-key', { jwk }, true);
  const keyRef = { keys: [{ secretRef: { name: 'b-key', key: 'jwk' } }] };
  await create(kcB, nsB.name, 'agentcards', agentCardBody(nsB.name, 'billing', keyRef));
  await create(kcB, nsB.name, 'agentcatalogs', {
    apiVersion: 'agentcard.dev/v1alpha1',
    kind: 'AgentCatalog',
    metadata: { name: 'b', namespace: nsB.name },
    spec: {
      publisher: 'b.example.org',
      entries: 'inline',
      host: { displayName: 'Cluster B' },
      signing: keyRef,
      imports: { selector: { matchLabels: { fleet: 'a' } } },
    },
  });

  const read = (kc: KubeConfig, ns: string, name: string) => async () =>
    (await core(kc).readNamespacedConfigMap({ namespace: ns, name: `${name}-ai-catalog` })).data;
  hostA = await startCatalogHost({ read: read(kcA, nsA.name, 'a'), tls });
  hostB = await startCatalogHost({ read: read(kcB, nsB.name, 'b'), tls });
  await waitFor(
    "both clusters' catalogs published",
    async () =>
      ids(await catalogDoc(kcA, nsA.name, 'a')).length === 3 &&
      ids(await catalogDoc(kcB, nsB.name, 'b')).length === 1,
    60_000,
  );
  await Promise.all([hostA.synced(), hostB.synced()]);
}, 1_800_000); // a cold build of cert-manager's controller takes minutes

afterAll(async () => {
  await opA?.stop();
  await opB?.stop();
  await certManager?.stop();
  await hostA?.close();
  await hostB?.close();
  await clusterB?.destroy();
  await nsA?.cleanup();
  rmSync(tmp, { recursive: true, force: true });
});

describe('two clusters: B imports the signed catalog of A', () => {
  it("lists A's agents verified and marked with their origin, and refuses a foreign identity", async () => {
    await core(kcB).createNamespacedConfigMap({
      namespace: nsB.name,
      body: { metadata: { name: 'cluster-a-ca' }, data: { 'ca.pem': ca.caPem } },
    });
    await create(kcB, nsB.name, 'catalogimports', {
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'CatalogImport',
      metadata: { name: 'cluster-a', namespace: nsB.name, labels: { fleet: 'a' } },
      spec: {
        url: hostA!.url,
        origin: 'cluster-a',
        trust: {
          trustBundle: { configMap: { name: 'cluster-a-ca', key: 'ca.pem' } },
          identities: [`spiffe://a.example.org/ns/${nsA.name}/*`],
        },
        catalogSignature: 'Required',
        interval: SPEC_INTERVAL,
        maxStaleness: '10m',
      },
    });
    const started = Date.now();
    const doc = await waitFor(
      "A's verified agents listed in B's catalog",
      async () => {
        const d = await catalogDoc(kcB, nsB.name, 'b');
        return ids(d).length === 3 ? d : undefined;
      },
      60_000,
    );
    console.log(`federation: A's agents listed in B ${Date.now() - started} ms after the import`);
    expect(ids(doc)).toEqual([idA('radar'), idA('weather'), idB('billing')].sort());
    const weather = doc.entries.find((e) => e.identifier === idA('weather'))!;
    expect(weather.extensions?.[IMPORTED_EXTENSION]).toMatchObject({
      origin: 'cluster-a',
      catalog: hostA!.url,
      signer: spiffeA('weather'),
    });
    // The card A signed, verifiable by any client of B with A's CA and identity pattern.
    const trust = {
      certificates: {
        roots: parseTrustBundle(ca.caPem, 'ca.pem'),
        identities: [`spiffe://a.example.org/ns/${nsA.name}/*`],
      },
    };
    expect(await verifyCard(weather.data, { keys: [] }, trust)).toMatchObject({
      verified: true,
      identity: spiffeA('weather'),
    });
    // B's catalog is signed by B.
    expect(await verifyCatalog(doc, JSON.parse(bJwks))).toMatchObject({ verified: true });

    const status = await waitFor('the import status', async () => {
      const s = await importStatus(kcB, nsB.name, 'cluster-a');
      return s.imported !== undefined ? s : undefined;
    });
    expect(status.imported).toBe(2);
    expect(Object.values(status.refused ?? {}).reduce((a, b) => a + b, 0)).toBe(1);
    expect(status.refusedEntries?.join('\n')).toContain('spiffe://elsewhere.example.org/ns/x/sa/foreign');

    // The page served by B shows each imported agent's cluster and signer.
    await hostB!.synced();
    const pageText = await httpsGet(hostB!.url.replace('/.well-known/ai-catalog.json', '/'));
    expect(pageText).toContain('<b>From cluster:</b> cluster-a');
    expect(pageText).toContain(`<b>signer:</b> ${spiffeA('weather')}`);

    // agentcard discover against B: A's cards verified against A's CA, with their origin.
    const report = await discover({
      urls: [hostB!.url],
      policy: createAddressPolicy({ allowCidrs: ['127.0.0.1/32'] }),
      ca: tlsCa,
      jwks: JSON.parse(bJwks),
      certificates: trust.certificates,
    });
    const card = report.cards.find((c) => c.entry?.identifier === idA('weather'));
    expect(card).toMatchObject({
      ok: true,
      signature: { status: 'verified', identity: spiffeA('weather') },
      entry: { origin: { cluster: 'cluster-a', signer: spiffeA('weather') } },
    });
    expect(report.catalogs[0]?.signature?.status).toBe('verified');
  });

  it('refuses a tampered byte on the way and keeps the last good entries', async () => {
    const tampered = Date.now();
    await hostA!.up([['The weather agent.', 'The wEather agent.']]);
    const status = await fetchedSince(tampered, (s) => condition(s, 'Fetched')?.status === 'False').finally(
      () => hostA!.up(),
    );
    console.log(`federation: tampered catalog refused after ${Date.now() - tampered} ms`);
    expect(condition(status, 'Fetched')).toMatchObject({ reason: 'CatalogSignatureInvalid' });
    expect(status.stale).toBe(2);
    // The last good entries stay listed, as they were.
    const doc = await catalogDoc(kcB, nsB.name, 'b');
    expect(ids(doc)).toEqual([idA('radar'), idA('weather'), idB('billing')].sort());
    const listed = doc!.entries.find((e) => e.identifier === idA('weather'));
    expect(JSON.stringify(listed?.data)).toContain('The weather agent.');
  });

  it('an agent removed at A leaves B within one interval (and the entries are fresh again)', async () => {
    await custom(kcA).deleteNamespacedCustomObject({
      ...G,
      namespace: nsA.name,
      plural: 'agentcards',
      name: 'radar',
    });
    await waitFor(
      'radar gone from A',
      async () => !ids(await catalogDoc(kcA, nsA.name, 'a')).includes(idA('radar')),
    );
    const gone = Date.now();
    await waitFor(
      'radar gone from B',
      async () => !ids(await catalogDoc(kcB, nsB.name, 'b')).includes(idA('radar')),
      INTERVAL_MS + 15_000,
    );
    console.log(`federation: removal at A seen in B after ${Date.now() - gone} ms`);
    expect(ids(await catalogDoc(kcB, nsB.name, 'b'))).toEqual([idA('weather'), idB('billing')].sort());
    const fresh = await fetchedSince(gone, (s) => condition(s, 'Fetched')?.status === 'True');
    expect(fresh).toMatchObject({ imported: 1, stale: 0 });
  });

  it('A down keeps the last good entries, stale', async () => {
    const downAt = Date.now();
    await hostA!.down();
    const down = await fetchedSince(downAt, (s) => condition(s, 'Fetched')?.status === 'False').finally(() =>
      hostA!.up(),
    );
    console.log(`federation: A down seen after ${Date.now() - downAt} ms`);
    expect(condition(down, 'Fetched')).toMatchObject({ reason: 'Unreachable' });
    expect(down).toMatchObject({ imported: 1, stale: 1 });
    expect(ids(await catalogDoc(kcB, nsB.name, 'b'))).toEqual([idA('weather'), idB('billing')].sort());
  });

  it('A and B import each other: each agent listed once, and nothing is written over two intervals', async () => {
    await core(kcA).createNamespacedConfigMap({
      namespace: nsA.name,
      body: { metadata: { name: 'cluster-b-keys' }, data: { 'jwks.json': bJwks } },
    });
    await create(kcA, nsA.name, 'catalogimports', {
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'CatalogImport',
      metadata: { name: 'cluster-b', namespace: nsA.name },
      spec: {
        url: hostB!.url,
        origin: 'cluster-b',
        trust: { jwks: { configMap: { name: 'cluster-b-keys', key: 'jwks.json' } } },
        catalogSignature: 'Required',
        interval: SPEC_INTERVAL,
      },
    });
    await waitFor(
      "B's agent listed in A",
      async () => ids(await catalogDoc(kcA, nsA.name, 'a')).includes(idB('billing')),
      60_000,
    );
    await hostA!.synced();
    const billingListed = Date.now();
    // A is back since the last step: B's entries are fresh again.
    const back = await waitFor(
      'B fetching A again',
      async () => {
        const s = await importStatus(kcB, nsB.name, 'cluster-a');
        return condition(s, 'Fetched')?.status === 'True' ? s : undefined;
      },
      INTERVAL_MS + 15_000,
    );
    expect(back).toMatchObject({ imported: 1, stale: 0 });
    // B has fetched A's catalog since it lists billing (imported from B), or fetches it once more.
    if (Date.parse(back.lastFetchTime!) < Math.ceil(billingListed / 1000) * 1000)
      await sleep(INTERVAL_MS + 5_000);
    const before = { a: await versions(kcA, nsA.name), b: await versions(kcB, nsB.name) };
    const listedA = ids(await catalogDoc(kcA, nsA.name, 'a'));
    const listedB = ids(await catalogDoc(kcB, nsB.name, 'b'));
    expect(listedA).toEqual([idA('foreign'), idA('weather'), idB('billing')].sort());
    expect(listedB).toEqual([idA('weather'), idB('billing')].sort());
    // B's billing came back through A marked as imported: not imported again.
    const fromA = await importStatus(kcB, nsB.name, 'cluster-a');
    expect(fromA.imported).toBe(1);
    await sleep(2 * INTERVAL_MS);
    expect(ids(await catalogDoc(kcA, nsA.name, 'a'))).toEqual(listedA);
    expect(ids(await catalogDoc(kcB, nsB.name, 'b'))).toEqual(listedB);
    expect({ a: await versions(kcA, nsA.name), b: await versions(kcB, nsB.name) }).toEqual(before);
  }, 240_000);
});
