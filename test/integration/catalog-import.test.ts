// A CatalogImport against the real API server and a real HTTPS catalog server (another cluster's
// catalog as the operator meets it: TLS, ETags, x5c-signed cards): what verifies is imported and
// Ready, stored byte for byte in the import's ConfigMaps; a tampered card is refused while its
// last good version stays; an origin that goes down keeps the last good entries (the same bytes:
// no ConfigMap write) and recovers; an agent removed at the origin disappears. Each step changes
// spec.maxDepth, a new generation, so the fetch runs at once instead of after spec.interval.
import { mkdtempSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { afterAll, describe, expect, it } from 'vitest';
import { GROUP, IMPORT_LABEL, IMPORT_PLURAL, VERSION } from '../../operator/api/names.ts';
import { readImportedEntries } from '../../operator/federation/store.ts';
import { minimalCard } from '../support/cards.ts';
import { installImportCrd, useOperatorInNamespace, waitFor } from '../support/operator.ts';
import { createTestCa } from '../support/tls-certs.ts';
import { createLeaf, createRoot, signWithChain, type TestCert } from '../support/x5c-signer.ts';

/** An https server on a fixed port that can go down and come back; answers If-None-Match with 304. */
class Origin {
  readonly routes = new Map<string, string>();
  readonly revalidated: string[] = [];
  private server?: https.Server;
  port = 0;
  private readonly tls: { cert: string; key: string };
  constructor(tls: { cert: string; key: string }) {
    this.tls = tls;
  }

  async start(): Promise<void> {
    const server = https.createServer(this.tls, (req, res) => {
      const path = (req.url ?? '/').split('?')[0]!;
      const body = this.routes.get(path);
      if (body === undefined) return void res.writeHead(404).end();
      const etag = `"${Buffer.from(body).length}-${body.length % 97}-${hash(body)}"`;
      if (req.headers['if-none-match'] === etag) {
        this.revalidated.push(path);
        return void res.writeHead(304, { etag }).end();
      }
      res.writeHead(200, { 'content-type': 'application/json', etag }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', () => resolve()));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  url(path: string): string {
    return `https://127.0.0.1:${this.port}${path}`;
  }
}

const hash = (text: string) => {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) | 0;
  return (h >>> 0).toString(16);
};

let origin: Origin;
let signingRoot: TestCert;
let agentLeaf: TestCert;
let foreignLeaf: TestCert;
let caFile = '';
const served = new Map<string, string>();

async function signed(name: string, leaf: TestCert): Promise<string> {
  // Unusual spacing: the stored bytes must be these, not a re-serialization.
  return JSON.stringify(await signWithChain({ ...minimalCard(), name }, leaf, []), null, 3);
}

const entry = (name: string) => ({
  identifier: `urn:air:a.example:agents:${name}`,
  type: 'application/a2a-agent-card+json',
  url: `/cards/${name}.json`,
});

function publish(names: string[]): void {
  origin.routes.set(
    '/.well-known/ai-catalog.json',
    JSON.stringify({ specVersion: '1.0', host: { displayName: 'Cluster A' }, entries: names.map(entry) }),
  );
  for (const [name, text] of served) origin.routes.set(`/cards/${name}.json`, text);
}

const { api, ns, kc } = useOperatorInNamespace('catalog-import', {
  catalogs: true,
  probes: true,
  before: async () => {
    await installImportCrd(kc);
    const tlsCa = await createTestCa('origin TLS CA');
    caFile = join(mkdtempSync(join(tmpdir(), 'import-ca-')), 'ca.pem');
    writeFileSync(caFile, tlsCa.cert);
    origin = new Origin(await tlsCa.issue({ ips: ['127.0.0.1'] }));
    await origin.start();
    signingRoot = await createRoot('cluster-a signing CA');
    agentLeaf = await createLeaf(signingRoot, { uris: ['spiffe://a.example/ns/agents/sa/default'] });
    foreignLeaf = await createLeaf(signingRoot, { uris: ['spiffe://evil.example/ns/x/sa/default'] });
    served.set('one', await signed('one', agentLeaf));
    served.set('two', await signed('two', agentLeaf));
    served.set('foreign', await signed('foreign', foreignLeaf));
    publish(['one', 'two', 'foreign']);
    await api.core.createNamespacedConfigMap({
      namespace: ns.name,
      body: { metadata: { name: 'cluster-a-ca' }, data: { 'ca.crt': signingRoot.pem } },
    });
  },
  flags: () => ['--probe-ca-file', caFile],
});

afterAll(async () => {
  await origin?.stop();
});

type ImportLive = {
  metadata: { generation?: number };
  status?: {
    observedGeneration?: number;
    conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
    imported?: number;
    stale?: number;
    refused?: Record<string, number>;
    origin?: string;
  };
};

const NAME = 'cluster-a';

async function getImport(): Promise<ImportLive> {
  return (await api.custom.getNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: ns.name,
    plural: IMPORT_PLURAL,
    name: NAME,
  })) as ImportLive;
}

let step = 0;
/**
 * Changes spec.maxDepth (4, 5, 4, ...: nothing here nests): a new generation, so the import
 * fetches at once; waits for the status of that generation.
 */
async function fetchNow(): Promise<ImportLive> {
  step++;
  const patched = (await api.custom.patchNamespacedCustomObject(
    {
      group: GROUP,
      version: VERSION,
      namespace: ns.name,
      plural: IMPORT_PLURAL,
      name: NAME,
      body: { spec: { maxDepth: 4 + (step % 2) } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  )) as ImportLive;
  const generation = patched.metadata.generation;
  return waitFor(`step ${step} reconciled`, async () => {
    const live = await getImport();
    return live.status?.observedGeneration === generation ? live : undefined;
  });
}

const condition = (live: ImportLive, type: string) => live.status?.conditions?.find((c) => c.type === type);

async function storeConfigMaps() {
  const list = await api.core.listNamespacedConfigMap({
    namespace: ns.name,
    labelSelector: `${IMPORT_LABEL}=${NAME}`,
  });
  return list.items;
}

describe('CatalogImport', () => {
  it('imports the cards that verify, Ready, with their bytes as served', async () => {
    await api.custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns.name,
      plural: IMPORT_PLURAL,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'CatalogImport',
        metadata: { name: NAME },
        spec: {
          url: origin.url('/.well-known/ai-catalog.json'),
          trust: {
            trustBundle: { configMap: { name: 'cluster-a-ca', key: 'ca.crt' } },
            identities: ['spiffe://a.example/ns/agents/*'],
          },
        },
      },
    });
    const live = await waitFor(
      'the import Ready',
      async () => {
        const l = await getImport();
        return condition(l, 'Ready')?.status === 'True' ? l : undefined;
      },
      60_000,
    );
    expect(live.status).toMatchObject({
      imported: 2,
      stale: 0,
      refused: { IdentityNotAllowed: 1 },
      origin: 'Cluster A',
    });
    const entries = readImportedEntries(await storeConfigMaps());
    expect(entries.map((e) => e.entry.identifier)).toEqual([
      'urn:air:a.example:agents:one',
      'urn:air:a.example:agents:two',
    ]);
    expect(entries[0]!.card).toBe(served.get('one'));
    expect(entries[0]!.signer).toBe('spiffe://a.example/ns/agents/sa/default');
    expect(entries[0]!.import).toEqual({ namespace: ns.name, name: NAME });
    const events = await api.events(ns.name, NAME);
    expect(events.some((e) => e.reason === 'IdentityNotAllowed')).toBe(true);
  });

  it('refuses a tampered card and keeps its last good version', async () => {
    const original = served.get('one')!;
    origin.routes.set('/cards/one.json', original.replace('Finds recipes', 'Finds secrets'));
    const live = await fetchNow();
    expect(live.status).toMatchObject({
      imported: 2,
      stale: 1,
      refused: { SignatureInvalid: 1, IdentityNotAllowed: 1 },
    });
    const one = readImportedEntries(await storeConfigMaps()).find((e) => e.entry.identifier.endsWith(':one'));
    expect(one!.card).toBe(original);
    origin.routes.set('/cards/one.json', original);
    const back = await fetchNow();
    expect(back.status).toMatchObject({ imported: 2, stale: 0 });
    // Unchanged documents were revalidated with their ETag, not sent again.
    expect(origin.revalidated).toContain('/cards/two.json');
  });

  it('keeps the last good entries while the origin is down, without rewriting them', async () => {
    const before = (await storeConfigMaps()).map((cm) => cm.metadata?.resourceVersion);
    await origin.stop();
    const down = await fetchNow();
    expect(condition(down, 'Fetched')).toMatchObject({ status: 'False', reason: 'Unreachable' });
    expect(condition(down, 'Ready')?.status).toBe('False');
    expect(down.status).toMatchObject({ imported: 2, stale: 2 });
    expect(readImportedEntries(await storeConfigMaps())).toHaveLength(2);
    await origin.start();
    const up = await fetchNow();
    expect(condition(up, 'Ready')?.status).toBe('True');
    expect(up.status).toMatchObject({ imported: 2, stale: 0 });
    expect((await storeConfigMaps()).map((cm) => cm.metadata?.resourceVersion)).toEqual(before);
  });

  it('drops an agent removed at the origin', async () => {
    publish(['one', 'foreign']);
    const live = await fetchNow();
    expect(live.status).toMatchObject({ imported: 1, stale: 0 });
    expect(readImportedEntries(await storeConfigMaps()).map((e) => e.entry.identifier)).toEqual([
      'urn:air:a.example:agents:one',
    ]);
  });
});
