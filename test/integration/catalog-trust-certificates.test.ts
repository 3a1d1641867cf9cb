// A catalog that requires a trust policy, with cards the operator signs with certificates that
// cert-manager issued (its real controllers, a CA Issuer): AgentCards in two namespaces sign with
// their kubernetes.io/tls Secrets (x5c chains carrying a SPIFFE ID as URI SAN), and a
// ClusterAgentCatalog whose spec.trust holds the CA (a trust bundle ConfigMap) and the identity
// pattern of one namespace lists only that namespace's agent, counts and names the others (an
// identity outside the pattern, a chain to another CA), and its served page shows who signed.
//
// Its own operator rather than the shared set-up (useOperatorInNamespace): the operator watches three
// namespaces (two of cards, one it publishes the catalog in) with cert-manager started per
// namespace first, which one namespace per file cannot express.
import { mkdtempSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Digest, verifyTrustManifest } from '../../operator/catalog/trust-manifest.ts';
import type { CatalogEntry } from '../../operator/catalog/document.ts';
import { parseTrustBundle } from '../../operator/card/x5c.ts';
import { createLogger } from '../../operator/log.ts';
import { startSidecar, type Sidecar } from '../../operator/sidecar/server.ts';
import { kubeletWrite, tempDir } from '../support/card-files.ts';
import {
  caIssuer,
  startCertManager,
  waitForCertificateReady,
  type CaIssuer,
  type CertManager,
} from '../support/cert-manager.ts';
import { createTestNamespace, kubeConfig, kubeconfigPath, type TestNamespace } from '../support/cluster.ts';
import {
  Api,
  installCatalogCrds,
  privateJwk,
  sampleCard,
  startOperator,
  waitFor,
  type InProcessOperator,
} from '../support/operator.ts';
import { runTool } from '../support/tools.ts';
import { useClusterLock } from '../support/cluster-lock.ts';

// Beside any file but the others of its family: see vitest.config.ts.
useClusterLock('cluster-catalogs');

const kc = kubeConfig();
const api = new Api(kc);
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const G = { group: 'agentcard.dev', version: 'v1alpha1' };
const CM = { group: 'cert-manager.io', version: 'v1' };
const tmp = mkdtempSync(join(tmpdir(), 'agentcard-catalog-x5c-'));

let team: TestNamespace, other: TestNamespace, pub: TestNamespace;
let op: InProcessOperator | undefined;
const certManagers: CertManager[] = [];
let ca: CaIssuer;
let catalogServer: { sidecar: Sidecar; dir: string } | undefined;

const spiffe = (ns: string, sa: string) => `spiffe://example.org/ns/${ns}/sa/${sa}`;
const JKU = 'https://agents.example.org/.well-known/jwks.json';
const catalogName = () => `verified-${team.name}`;

interface CatalogStatus {
  entries?: number;
  unverified?: number;
  skipped?: string[];
  conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
}

/** A Certificate for a workload identity, issued by `issuer` into the Secret `<name>-tls`. */
async function certificate(ns: string, name: string, identity: string, issuer: string) {
  await custom.createNamespacedCustomObject({
    ...CM,
    namespace: ns,
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
        issuerRef: { name: issuer, kind: 'Issuer', group: 'cert-manager.io' },
      },
    },
  });
}

/** An AgentCard signed by the operator with the certificate Secret cert-manager issued. */
async function agentCard(ns: string, name: string) {
  await custom.createNamespacedCustomObject({
    ...G,
    plural: 'agentcards',
    namespace: ns,
    body: {
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'AgentCard',
      metadata: { name, namespace: ns },
      spec: {
        card: sampleCard('1.0.0', { name: `Agent ${name}`, description: `The ${name} agent.` }),
        signing: { keys: [{ certificate: { secretName: `${name}-tls` } }] },
      },
    },
  });
}

/** The CA Issuer of `ca` in another namespace: its Secret copied there, as a CA shared by teams. */
async function sameCaIn(ns: string) {
  const root = await core.readNamespacedSecret({ namespace: team.name, name: `${ca.name}-root` });
  await core.createNamespacedSecret({
    namespace: ns,
    body: { metadata: { name: `${ca.name}-root` }, type: root.type, data: root.data },
  });
  await custom.createNamespacedCustomObject({
    ...CM,
    namespace: ns,
    plural: 'issuers',
    body: {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Issuer',
      metadata: { name: ca.name },
      spec: { ca: { secretName: `${ca.name}-root` } },
    },
  });
}

async function labelNamespace(name: string, labels: Record<string, string>) {
  const args = Object.entries(labels).map(([k, v]) => `${k}=${v}`);
  const r = await runTool('kubectl', ['label', 'namespace', name, ...args, '--overwrite'], {
    kubeconfig: kubeconfigPath(),
  });
  if (r.code !== 0) throw new Error(r.stderr);
}

async function catalogStatus(): Promise<CatalogStatus> {
  const obj = (await custom.getClusterCustomObject({
    ...G,
    plural: 'clusteragentcatalogs',
    name: catalogName(),
  })) as { status?: CatalogStatus };
  return obj.status ?? {};
}

beforeAll(async () => {
  await installCatalogCrds(kc);
  team = await createTestNamespace('x5c-team');
  other = await createTestNamespace('x5c-other');
  pub = await createTestNamespace('x5c-pub');
  await labelNamespace(team.name, { 'catalog-test': team.name });
  await labelNamespace(other.name, { 'catalog-test': team.name });
  for (const ns of [team, other])
    certManagers.push(
      await startCertManager({ namespace: ns.name, logFile: join(tmp, `cert-manager-${ns.name}.log`) }),
    );
  ca = await caIssuer(team.name, { commonName: 'example.org workload CA' });
  const rogue = await caIssuer(team.name, { name: 'rogue-ca', commonName: 'rogue CA' });
  await sameCaIn(other.name);

  await certificate(team.name, 'recipes', spiffe(team.name, 'recipes'), ca.name);
  await certificate(other.name, 'billing', spiffe(other.name, 'billing'), ca.name);
  // An identity inside the pattern, but issued by a CA the trust bundle does not hold.
  await certificate(team.name, 'impostor', spiffe(team.name, 'impostor'), rogue.name);
  // The certificate an AgentCatalog of the team signs its catalog with.
  await certificate(team.name, 'catalog', spiffe(team.name, 'catalog'), ca.name);
  await Promise.all([
    waitForCertificateReady(team.name, 'catalog'),
    waitForCertificateReady(team.name, 'recipes'),
    waitForCertificateReady(other.name, 'billing'),
    waitForCertificateReady(team.name, 'impostor'),
  ]);

  op = await startOperator(pub.name, [
    '--namespace',
    team.name,
    '--namespace',
    other.name,
    '--cluster-catalogs',
    '--operator-namespace',
    pub.name,
    '--resync',
    '2s',
  ]);
  await agentCard(team.name, 'recipes');
  await agentCard(other.name, 'billing');
  await agentCard(team.name, 'impostor');
  const cards = () =>
    Promise.all([
      api.getCard(team.name, 'recipes'),
      api.getCard(other.name, 'billing'),
      api.getCard(team.name, 'impostor'),
    ]);
  await waitFor('the three AgentCards Ready', async () =>
    (await cards()).every((c) =>
      c?.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'),
    )
      ? true
      : undefined,
  ).catch(async (err: unknown) => {
    const ready = (await cards()).map((c) => c?.status?.conditions?.find((x) => x.type === 'Ready'));
    throw new Error(`${String(err)}; Ready conditions: ${JSON.stringify(ready)}`);
  });
}, 1_800_000); // a cold build of cert-manager's controller takes minutes

afterAll(async () => {
  if (team)
    await custom
      .deleteClusterCustomObject({ ...G, plural: 'clusteragentcatalogs', name: catalogName() })
      .catch(() => undefined);
  await op?.stop();
  for (const cm of certManagers) await cm.stop();
  await catalogServer?.sidecar.close();
  if (catalogServer) await rm(catalogServer.dir, { recursive: true, force: true });
  await Promise.all([team, other, pub].map((n) => (n as TestNamespace | undefined)?.cleanup()));
  rmSync(tmp, { recursive: true, force: true });
});

describe('a catalog that requires a trust bundle and an identity pattern, with cert-manager certificates', () => {
  it('lists only the verified agent of the trusted namespace, names the others, shows the signer', async () => {
    await core.createNamespacedConfigMap({
      namespace: pub.name,
      body: { metadata: { name: 'workload-ca' }, data: { 'ca.pem': ca.caPem } },
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
          namespaceSelector: { matchLabels: { 'catalog-test': team.name } },
          publisher: 'example.org',
          // A JWKS key: the trust manifests name the jku URL as the publisher's identity.
          signing: { keys: [{ secretRef: { name: 'catalog-key', key: 'jwk' } }], jku: JKU },
          trust: {
            trustBundle: { configMap: { name: 'workload-ca', key: 'ca.pem' } },
            identities: [`spiffe://example.org/ns/${team.name}/*`],
          },
        },
      },
    });
    const status = await waitFor('the catalog published with one verified entry', async () => {
      const s = await catalogStatus();
      return s.entries === 1 && s.unverified === 2 ? s : undefined;
    });
    const published = status.conditions?.find((c) => c.type === 'Published');
    expect(published).toMatchObject({ status: 'True', reason: 'Published' });
    expect(published!.message).toContain('2 selected AgentCard(s) left out (2 not verified by spec.trust)');
    const skipped = [...(status.skipped ?? [])].sort();
    expect(skipped).toHaveLength(2);
    // Another namespace's identity, from the same CA: refused by the identity pattern.
    expect(skipped.find((s) => s.startsWith(`${other.name}/billing: `))).toContain(
      `certificate chain refused: the leaf identity ${spiffe(other.name, 'billing')} matches none of the trusted identities (spiffe://example.org/ns/${team.name}/*)`,
    );
    // An identity inside the pattern from another CA: refused by the trust bundle.
    expect(skipped.find((s) => s.startsWith(`${team.name}/impostor: `))).toMatch(
      /certificate chain refused: leaf is not issued by a certificate of the trust bundle \(issuer CN=rogue CA\)/,
    );

    const cm = await api.getConfigMap(pub.name, `${catalogName()}-cluster-ai-catalog`);
    const doc = JSON.parse(cm!.data!['ai-catalog.json']!) as { entries: Array<{ identifier: string }> };
    expect(doc.entries.map((e) => e.identifier)).toEqual([`urn:air:example.org:${team.name}:recipes`]);

    // The page as the catalog server serves it: the verified agent with its signer, no other.
    const dir = await tempDir('agentcard-catalog-x5c-');
    const sidecar = await startSidecar({
      dir,
      port: 0,
      metricsPort: 0,
      host: '127.0.0.1',
      defaultMaxAgeSeconds: 60,
      logger: createLogger({}, { write: () => {} }),
      pollMs: 60_000,
    });
    catalogServer = { sidecar, dir };
    await kubeletWrite(dir, cm!.data!);
    await sidecar.reload();
    const page = await (await fetch(`http://127.0.0.1:${sidecar.port}/`)).text();
    expect(page).toContain('Agent recipes');
    expect(page).toContain(`signed by ${spiffe(team.name, 'recipes')}`);
    expect(page).not.toContain('Agent billing');
    expect(page).not.toContain('Agent impostor');
  });

  it("each entry's trust manifest names the publisher's identity, binds the served card, and verifies", async () => {
    const recipesCard = async () =>
      (await api.getConfigMap(team.name, 'recipes-agent-card'))!.data!['agent-card.json']!;
    const trust = {
      certificates: {
        roots: parseTrustBundle(ca.caPem, 'ca.pem'),
        identities: [`spiffe://example.org/ns/${team.name}/*`],
      },
    };

    // The ClusterAgentCatalog signed with a JWKS key and signing.jku: the identity is the jku URL.
    const cluster = await api.getConfigMap(pub.name, `${catalogName()}-cluster-ai-catalog`);
    const clusterDoc = JSON.parse(cluster!.data!['ai-catalog.json']!) as { entries: CatalogEntry[] };
    const jwks = JSON.parse(cluster!.data!['jwks.json']!) as { keys: [] };
    const [listed] = clusterDoc.entries;
    expect(listed!.trustManifest).toMatchObject({
      identity: JKU,
      identityType: 'url',
      subject: {
        identifier: `urn:air:example.org:${team.name}:recipes`,
        type: 'application/a2a-agent-card+json',
        url: listed!.url,
        digest: sha256Digest(await recipesCard()),
      },
    });
    expect(await verifyTrustManifest(listed!, await recipesCard(), jwks)).toMatchObject({
      ok: true,
      identity: JKU,
    });

    // An AgentCatalog of the team signed with a cert-manager certificate: its SPIFFE ID.
    await core.createNamespacedConfigMap({
      namespace: team.name,
      body: { metadata: { name: 'workload-ca' }, data: { 'ca.pem': ca.caPem } },
    });
    await custom.createNamespacedCustomObject({
      ...G,
      plural: 'agentcatalogs',
      namespace: team.name,
      body: {
        apiVersion: 'agentcard.dev/v1alpha1',
        kind: 'AgentCatalog',
        metadata: { name: 'team', namespace: team.name },
        spec: {
          publisher: 'example.org',
          signing: { keys: [{ certificate: { secretName: 'catalog-tls' } }] },
          trust: {
            trustBundle: { configMap: { name: 'workload-ca', key: 'ca.pem' } },
            identities: [`spiffe://example.org/ns/${team.name}/*`],
          },
        },
      },
    });
    const doc = await waitFor('the team catalog published with a trust manifest', async () => {
      const cm = await api.getConfigMap(team.name, 'team-ai-catalog');
      const text = cm?.data?.['ai-catalog.json'];
      const parsed = text ? (JSON.parse(text) as { entries: CatalogEntry[]; signature?: string }) : undefined;
      return parsed?.entries.length === 1 && parsed.entries[0]!.trustManifest ? parsed : undefined;
    });
    const [entry] = doc.entries;
    expect(entry!.identifier).toBe(`urn:air:example.org:${team.name}:recipes`);
    expect(entry!.trustManifest).toMatchObject({
      identity: spiffe(team.name, 'catalog'),
      identityType: 'spiffe',
      subject: { digest: sha256Digest(await recipesCard()) },
    });
    const header = JSON.parse(
      Buffer.from(entry!.trustManifest!.signature!.split('.')[0]!, 'base64url').toString('utf8'),
    ) as { x5c?: string[] };
    expect(header.x5c).toHaveLength(1); // the leaf; the CA is the trust bundle's
    expect(await verifyTrustManifest(entry!, await recipesCard(), { keys: [] }, trust)).toEqual({
      ok: true,
      identity: spiffe(team.name, 'catalog'),
      kid: expect.any(String) as string,
      message: `trust manifest verified: identity ${spiffe(team.name, 'catalog')} (its signing certificate)`,
    });
    // A card that is not the one the manifest binds is refused.
    expect(
      await verifyTrustManifest(
        entry!,
        (await recipesCard()).replace('recipes', 'Recipes'),
        { keys: [] },
        trust,
      ),
    ).toMatchObject({ ok: false, message: 'the card served at the url does not match subject.digest' });
  });
});
