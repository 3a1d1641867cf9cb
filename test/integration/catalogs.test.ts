// Catalogs on the real control plane: AgentCards in three namespaces, a ClusterAgentCatalog with a
// namespaceSelector and an AgentCatalog, reconciled by the operator (in this process), published
// in ConfigMaps, served by the well-known server as the catalog server (real loopback HTTP),
// verified with jose over JCS and with @a2a-js/sdk's card verifier, and the page loaded in
// headless Chromium from Debian.
//
// Its own operator rather than the shared set-up (useOperatorInNamespace): the operator watches four
// namespaces (three of cards, one it publishes the catalogs in), which one namespace per file
// cannot express.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import canonicalize from 'canonicalize';
import * as jose from 'jose';
import { verifyAgentCardSignature, type AgentCard as SdkAgentCard } from '@a2a-js/sdk';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../operator/log.ts';
import { startSidecar, type Sidecar } from '../../operator/sidecar/server.ts';
import { kubeletWrite, tempDir } from '../support/card-files.ts';
import { createTestNamespace, kubeConfig, kubeconfigPath, type TestNamespace } from '../support/cluster.ts';
import {
  Api,
  installCatalogCrds,
  metricValue,
  operatorMetrics,
  privateJwk,
  sampleCard,
  startOperator,
  waitFor,
  type InProcessOperator,
} from '../support/operator.ts';
import { repoRoot } from '../support/paths.ts';
import { runTool } from '../support/tools.ts';
import { useClusterLock } from '../support/cluster-lock.ts';

// Beside any file but the others of its family: see vitest.config.ts.
useClusterLock('cluster-catalogs');

const run = promisify(execFile);
const kc = kubeConfig();
const api = new Api(kc);
const custom = kc.makeApiClient(CustomObjectsApi);
const G = { group: 'agentcard.dev', version: 'v1alpha1' };
const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(repoRoot, 'test-artifacts');

let a: TestNamespace, b: TestNamespace, c: TestNamespace, pub: TestNamespace;
let op: InProcessOperator;
const cleanups: Array<() => Promise<unknown>> = [];
/** One well-known server per AgentCard that the catalog points at (the card-url annotation). */
const cardServers = new Map<string, { sidecar: Sidecar; dir: string }>();
let catalogServer: { sidecar: Sidecar; dir: string; base: string };
const quiet = createLogger({}, { write: () => {} });

async function server(): Promise<{ sidecar: Sidecar; dir: string }> {
  const dir = await tempDir('agentcard-catalog-');
  const sidecar = await startSidecar({
    dir,
    port: 0,
    metricsPort: 0,
    host: '127.0.0.1',
    defaultMaxAgeSeconds: 60,
    logger: quiet,
    pollMs: 60_000,
  });
  cleanups.push(
    () => sidecar.close(),
    () => rm(dir, { recursive: true, force: true }),
  );
  return { sidecar, dir };
}

async function labelNamespace(name: string, labels: Record<string, string>) {
  const args = Object.entries(labels).map(([k, v]) => `${k}=${v}`);
  const r = await runTool('kubectl', ['label', 'namespace', name, ...args, '--overwrite'], {
    kubeconfig: kubeconfigPath(),
  });
  if (r.code !== 0) throw new Error(r.stderr);
}

/** An AgentCard signed with its own key, pointing the catalog at a local server of its card. */
async function card(
  ns: string,
  name: string,
  labels: Record<string, string>,
  opts: { keySecret?: string; createKey?: boolean } = {},
) {
  const s = await server();
  cardServers.set(`${ns}/${name}`, s);
  const secret = opts.keySecret ?? `${name}-key`;
  if (opts.createKey !== false)
    await api.putSecret(ns, secret, { jwk: await privateJwk(`${name}-k1`) }, true);
  await custom.createNamespacedCustomObject({
    ...G,
    plural: 'agentcards',
    namespace: ns,
    body: {
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'AgentCard',
      metadata: {
        name,
        namespace: ns,
        labels,
        annotations: {
          'agentcard.dev/card-url': `http://127.0.0.1:${s.sidecar.port}/.well-known/agent-card.json`,
        },
      },
      spec: {
        card: sampleCard('1.0.0', {
          name: `Agent ${name}`,
          description: `The ${name} agent answers questions.`,
        }),
        signing: { keys: [{ secretRef: { name: secret, key: 'jwk' } }] },
      },
    },
  });
}

/** Lays a ConfigMap out in a directory as the kubelet would, once it holds `key`. */
async function mirror(
  ns: string,
  name: string,
  dir: string,
  key: string,
  accept: (data: Record<string, string>) => boolean = () => true,
) {
  const data = await waitFor(`ConfigMap ${ns}/${name} with ${key}`, async () => {
    const cm = await api.getConfigMap(ns, name);
    return cm?.data?.[key] !== undefined && accept(cm.data) ? cm.data : undefined;
  });
  await kubeletWrite(dir, data);
  return data;
}

async function getCatalog(plural: string, name: string, ns?: string) {
  return (
    ns
      ? await custom.getNamespacedCustomObject({ ...G, plural, namespace: ns, name })
      : await custom.getClusterCustomObject({ ...G, plural, name })
  ) as {
    metadata: { resourceVersion: string; generation: number };
    status?: {
      entries?: number;
      conditions?: Array<{ type: string; status: string; message: string }>;
      skipped?: string[];
      digest?: string;
    };
  };
}

const identifiers = (doc: { entries: Array<{ identifier: string }> }) =>
  doc.entries.map((e) => e.identifier).sort();
const urn = (ns: string, name: string) => `urn:air:example.com:${ns}:${name}`;
const clusterCatalogName = () => `all-${a.name}`;

beforeAll(async () => {
  await installCatalogCrds(kc);
  a = await createTestNamespace('cat-a');
  b = await createTestNamespace('cat-b');
  c = await createTestNamespace('cat-c');
  pub = await createTestNamespace('cat-pub');
  await labelNamespace(a.name, { 'catalog-test': a.name });
  await labelNamespace(b.name, { 'catalog-test': a.name });
  await labelNamespace(c.name, { 'catalog-test': 'other' });
  op = await startOperator(pub.name, [
    '--namespace',
    a.name,
    '--namespace',
    b.name,
    '--namespace',
    c.name,
    '--cluster-catalogs',
    '--operator-namespace',
    pub.name,
    '--resync',
    '2s',
  ]);
  await card(a.name, 'alpha', { tier: 'public' });
  await card(a.name, 'hidden', {}); // not selected: no tier label
  await card(b.name, 'beta', { tier: 'public' });
  await card(b.name, 'pending', { tier: 'public' }, { createKey: false }); // its key Secret is missing: not Ready
  await card(c.name, 'gamma', { tier: 'public' }); // its namespace is not selected
  for (const [key, s] of cardServers) {
    const [ns, name] = key.split('/') as [string, string];
    if (name !== 'pending') await mirror(ns, `${name}-agent-card`, s.dir, 'agent-card.json');
    await s.sidecar.reload();
  }
  await api.putSecret(pub.name, 'catalog-key', { jwk: await privateJwk('catalog-k1') }, true);
  await custom.createClusterCustomObject({
    ...G,
    plural: 'clusteragentcatalogs',
    body: {
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'ClusterAgentCatalog',
      metadata: { name: clusterCatalogName() },
      spec: {
        namespaceSelector: { matchLabels: { 'catalog-test': a.name } },
        selector: { matchLabels: { tier: 'public' } },
        publisher: 'example.com',
        host: { displayName: 'Test cluster agents' },
        signing: { keys: [{ secretRef: { name: 'catalog-key', key: 'jwk' } }] },
      },
    },
  });
  const s = await server();
  catalogServer = { ...s, base: `http://127.0.0.1:${s.sidecar.port}` };
}, 180_000);

afterAll(async () => {
  await custom
    .deleteClusterCustomObject({ ...G, plural: 'clusteragentcatalogs', name: clusterCatalogName() })
    .catch(() => {});
  await op?.stop();
  for (const c of cleanups.reverse()) await c().catch(() => {});
  await Promise.all([a, b, c, pub].map((n) => (n as TestNamespace | undefined)?.cleanup()));
});

/** The served cluster catalog, once it lists `want` exactly. */
async function servedCatalog(want: string[], timeoutMs = 15_000) {
  const cmName = `${clusterCatalogName()}-cluster-ai-catalog`;
  const started = Date.now();
  await mirror(pub.name, cmName, catalogServer.dir, 'ai-catalog.json', (data) => {
    const doc = JSON.parse(data['ai-catalog.json']!) as { entries: Array<{ identifier: string }> };
    return JSON.stringify(identifiers(doc)) === JSON.stringify([...want].sort());
  }).catch((err: unknown) => {
    throw new Error(
      `${String(err)}; last status: ${JSON.stringify(op.logs.filter((l) => l.includes('catalog')).slice(-3))}`,
    );
  });
  const elapsedMs = Date.now() - started;
  expect(elapsedMs).toBeLessThan(timeoutMs);
  await catalogServer.sidecar.reload();
  const res = await fetch(`${catalogServer.base}/.well-known/ai-catalog.json`);
  expect(res.headers.get('content-type')).toBe('application/ai-catalog+json');
  return {
    doc: (await res.json()) as Record<string, unknown> & {
      entries: Array<Record<string, unknown> & { identifier: string; url?: string }>;
      signature?: string;
    },
    elapsedMs,
  };
}

describe('catalogs on the real control plane', () => {
  it('refuses an AgentCatalog that reaches across namespaces (schema: no namespaceSelector)', async () => {
    const manifest = JSON.stringify({
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'AgentCatalog',
      metadata: { name: 'reach', namespace: a.name },
      spec: { namespaceSelector: { matchLabels: { 'catalog-test': a.name } } },
    });
    const r = await runTool('kubectl', ['apply', '--server-side', '-f', '-'], {
      kubeconfig: kubeconfigPath(),
      input: manifest,
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/\.spec\.namespaceSelector: field not declared in schema/);
    expect(await api.getConfigMap(a.name, 'reach-ai-catalog')).toBeUndefined();
  });

  it('lists the Ready, selected cards of the selected namespaces, signed; leaves out the others and says why', async () => {
    const { doc } = await servedCatalog([urn(a.name, 'alpha'), urn(b.name, 'beta')]);
    expect(doc.specVersion).toBe('1.0');
    expect(doc.host).toEqual({ displayName: 'Test cluster agents' });
    for (const e of doc.entries) {
      expect(e).toMatchObject({
        type: 'application/a2a-agent-card+json',
        version: '1.0.0',
        tags: ['weather'],
      });
      expect(e.updatedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    }
    const status = await waitFor('status.entries', async () => {
      const cat = await getCatalog('clusteragentcatalogs', clusterCatalogName());
      return cat.status?.entries === 2 ? cat.status : undefined;
    });
    expect(status.conditions?.find((x) => x.type === 'Ready')?.status).toBe('True');
    expect(status.conditions?.find((x) => x.type === 'Signed')?.status).toBe('True');
    expect(status.skipped).toEqual([expect.stringMatching(new RegExp(`^${b.name}/pending: not Ready`))]);
    expect(status.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('verifies with jose over the JCS form, and every card it points at verifies with @a2a-js/sdk', async () => {
    const { doc } = await servedCatalog([urn(a.name, 'alpha'), urn(b.name, 'beta')]);
    const jwks = (await (
      await fetch(`${catalogServer.base}/.well-known/jwks.json`)
    ).json()) as jose.JSONWebKeySet;
    const [protectedHeader, empty, signature] = doc.signature!.split('.');
    expect(empty).toBe('');
    const { signature: _s, ...unsigned } = doc;
    const payload = jose.base64url.encode(canonicalize(unsigned)!);
    const verified = await jose.compactVerify(
      `${protectedHeader}.${payload}.${signature}`,
      jose.createLocalJWKSet(jwks),
    );
    expect(verified.protectedHeader.kid).toBe('catalog-k1');
    // The check is real: a changed catalog does not verify.
    const tampered = jose.base64url.encode(canonicalize({ ...unsigned, entries: [] })!);
    await expect(
      jose.compactVerify(`${protectedHeader}.${tampered}.${signature}`, jose.createLocalJWKSet(jwks)),
    ).rejects.toThrow();

    for (const entry of doc.entries) {
      const res = await fetch(entry.url!);
      expect(res.status).toBe(200);
      const cardDoc = (await res.json()) as SdkAgentCard;
      const keys = (await (await fetch(new URL('/.well-known/jwks.json', entry.url!))).json()) as {
        keys: Array<{ kid: string }>;
      };
      const verify = verifyAgentCardSignature(async (kid) => {
        const jwk = keys.keys.find((k) => k.kid === kid);
        if (!jwk) throw new Error(`no key ${kid}`);
        return jwk;
      });
      await expect(verify(cardDoc)).resolves.toBeUndefined();
    }
  });

  it('adds a card within seconds of it becoming Ready, and drops a deleted one', async () => {
    await api.putSecret(b.name, 'pending-key', { jwk: await privateJwk('pending-k1') }, true);
    // servedCatalog fails if either takes 15 s or more (its wait outlasts that bound).
    await servedCatalog([urn(a.name, 'alpha'), urn(b.name, 'beta'), urn(b.name, 'pending')], 15_000);
    await api.deleteCard(a.name, 'alpha');
    await servedCatalog([urn(b.name, 'beta'), urn(b.name, 'pending')], 15_000);
  });

  it('writes nothing while nothing changes (resync every 2 s)', async () => {
    const cmName = `${clusterCatalogName()}-cluster-ai-catalog`;
    const before = await api.getConfigMap(pub.name, cmName);
    const cat = await getCatalog('clusteragentcatalogs', clusterCatalogName());
    // Counted, not slept through: the window ends once the resyncs have reconciled every catalog
    // the operator watches at least twice. Every resync enqueues all of them, so their counts
    // differ by one at most; three reconciles per catalog leave each with two at least.
    const list = async (plural: string, namespace?: string) =>
      (
        (namespace
          ? await custom.listNamespacedCustomObject({ ...G, plural, namespace })
          : await custom.listClusterCustomObject({ ...G, plural })) as { items: unknown[] }
      ).items.length;
    const catalogs =
      (await list('clusteragentcatalogs')) +
      (await Promise.all([a, b, c, pub].map((n) => list('agentcatalogs', n.name)))).reduce(
        (x, y) => x + y,
        0,
      );
    const reconciles = async () =>
      metricValue(await operatorMetrics(op.metricsPort()), 'controller_runtime_reconcile_total', {
        controller: 'agentcatalog',
      });
    const reconcilesBefore = await reconciles();
    await waitFor(
      `${3 * catalogs} catalog reconciles`,
      async () => (await reconciles()) - reconcilesBefore >= 3 * catalogs,
      30_000,
    );
    expect((await api.getConfigMap(pub.name, cmName))?.metadata?.resourceVersion).toBe(
      before?.metadata?.resourceVersion,
    );
    expect((await getCatalog('clusteragentcatalogs', clusterCatalogName())).metadata.resourceVersion).toBe(
      cat.metadata.resourceVersion,
    );
  });

  it('an AgentCatalog with include[] of the served cluster catalog lists it as a nested entry', async () => {
    const included = `${catalogServer.base}/.well-known/ai-catalog.json`;
    await custom.createNamespacedCustomObject({
      ...G,
      plural: 'agentcatalogs',
      namespace: b.name,
      body: {
        apiVersion: 'agentcard.dev/v1alpha1',
        kind: 'AgentCatalog',
        metadata: { name: 'team', namespace: b.name },
        spec: { publisher: 'example.com', include: [{ url: included, displayName: 'The cluster' }] },
      },
    });
    const s = await server();
    const data = await mirror(b.name, 'team-ai-catalog', s.dir, 'ai-catalog.json');
    await s.sidecar.reload();
    const doc = (await (
      await fetch(`http://127.0.0.1:${s.sidecar.port}/.well-known/ai-catalog.json`)
    ).json()) as { entries: Array<Record<string, unknown>>; signature?: string };
    expect(doc.signature).toBeUndefined(); // no spec.signing
    expect(JSON.parse(data['ai-catalog.json']!)).toEqual(doc);
    expect(doc.entries).toContainEqual({
      identifier: included,
      type: 'application/ai-catalog+json',
      url: included,
      displayName: 'The cluster',
    });
    // Its own namespace's cards only: beta and pending, never a card of another namespace.
    expect(
      doc.entries
        .filter((e) => e.type === 'application/a2a-agent-card+json')
        .map((e) => e.identifier)
        .sort(),
    ).toEqual([urn(b.name, 'beta'), urn(b.name, 'pending')]);
    // The nested catalog is reachable and is the cluster catalog.
    const nested = (await (await fetch(included)).json()) as { entries: unknown[] };
    expect(nested.entries).toHaveLength(2);
  });

  it('the page, loaded in headless Chromium, shows the listed agents and none of the others', async () => {
    await servedCatalog([urn(b.name, 'beta'), urn(b.name, 'pending')]);
    const page = `${catalogServer.base}/`;
    const head = await fetch(page);
    expect(head.headers.get('content-security-policy')).toMatch(/^default-src 'none'; style-src 'sha256-/);
    mkdirSync(ARTIFACTS, { recursive: true });
    const profile = await tempDir('agentcard-chromium-');
    cleanups.push(() => rm(profile, { recursive: true, force: true }));
    const flags = [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      `--user-data-dir=${profile}`,
      '--disable-background-networking',
    ];
    const { stdout: dom } = await run(CHROMIUM, [...flags, '--dump-dom', page], { timeout: 60_000 });
    expect(dom).toContain('Test cluster agents');
    expect(dom).toContain('Agent beta');
    expect(dom).toContain('Agent pending');
    expect(dom).toContain('Forecast');
    expect(dom.match(/<span class="badge yes">signed<\/span>/g)).toHaveLength(2);
    for (const absent of ['Agent alpha', 'Agent hidden', 'Agent gamma']) expect(dom).not.toContain(absent);
    // Two agent entries, each linking to its card.
    expect(dom.match(/<li class="agent">/g)).toHaveLength(2);
    const screenshot = join(ARTIFACTS, 'catalog-page.png');
    await rm(screenshot, { force: true });
    const shot = await run(
      CHROMIUM,
      [
        ...flags,
        '--enable-logging=stderr',
        '--v=0',
        `--screenshot=${screenshot}`,
        '--window-size=1200,900',
        page,
      ],
      {
        timeout: 60_000,
      },
    );
    expect(existsSync(screenshot)).toBe(true);
    // The strict policy lets the page's own style through: Chromium reports no violation.
    expect(shot.stderr).not.toMatch(/Content Security Policy/i);
    writeFileSync(join(ARTIFACTS, 'catalog-page.html'), dom);
  });
});
