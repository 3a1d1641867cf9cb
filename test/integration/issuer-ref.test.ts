/**
 * spec.signing.keys[].issuerRef end to end, with cert-manager v1.21's real controllers and a CA
 * Issuer: the operator (--cert-manager, trust domain example.org) creates and owns a Certificate
 * whose URI SAN is the card's workload identity, signs the card with the Secret cert-manager
 * issues (x5c chain), the real `agentcard discover --trust-bundle ca.pem --identity` verifies
 * team-a's card and refuses team-b's, a forced renewal re-signs within seconds, and deleting the
 * AgentCard deletes the Certificate (the control plane's garbage collector).
 *
 * team-a and team-b each run their own cert-manager (the harness confines one to a namespace);
 * team-b's CA Issuer signs with team-a's CA, so that only the identity tells their cards apart.
 *
 * Its own operator rather than the shared set-up (useOperatorInNamespace): it watches both teams'
 * namespaces, each with its cert-manager started first, which one namespace per file cannot
 * express.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  caIssuer,
  renewCertificate,
  startCertManager,
  waitForCertificateReady,
  type CaIssuer,
  type CertManager,
} from '../support/cert-manager.ts';
import { agentcard } from '../support/cli.ts';
import { kubeConfig, testNamespace } from '../support/cluster.ts';
import { startFileServer, type FileServer } from '../support/discover-servers.ts';
import {
  condition,
  controllerQueue,
  installCrd,
  sampleCard,
  startOperator,
  waitFor,
  Api,
  type InProcessOperator,
} from '../support/operator.ts';

const kc = kubeConfig();
const api = new Api(kc);
const custom = kc.makeApiClient(CustomObjectsApi);
const teamA = testNamespace('team-a', kc);
const teamB = testNamespace('team-b', kc);
const tmp = mkdtempSync(join(tmpdir(), 'agentcard-issuer-ref-'));
const managers: CertManager[] = [];
let issuer: CaIssuer;
let op: InProcessOperator;
let files: FileServer;
const CERT = { group: 'cert-manager.io', version: 'v1', plural: 'certificates' };
type Sig = { protected: string; signature: string };

beforeAll(async () => {
  await installCrd(kc);
  await Promise.all([teamA.create(), teamB.create()]);
  managers.push(await startCertManager({ namespace: teamA.name, logFile: join(tmp, 'cm-a.log') }));
  managers.push(await startCertManager({ namespace: teamB.name, logFile: join(tmp, 'cm-b.log') }));
  issuer = await caIssuer(teamA.name);
  // team-b's CA Issuer signs with the same CA: a verifier's bundle accepts both chains.
  const root = await api.core.readNamespacedSecret({ namespace: teamA.name, name: `${issuer.name}-root` });
  await api.core.createNamespacedSecret({
    namespace: teamB.name,
    body: { metadata: { name: 'shared-ca' }, type: 'kubernetes.io/tls', data: root.data },
  });
  await custom.createNamespacedCustomObject({
    ...CERT,
    plural: 'issuers',
    namespace: teamB.name,
    body: {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Issuer',
      metadata: { name: issuer.name },
      spec: { ca: { secretName: 'shared-ca' } },
    },
  });
  writeFileSync(join(tmp, 'ca.pem'), issuer.caPem);
  op = await startOperator(teamA.name, [
    '--namespace',
    teamB.name,
    '--cert-manager',
    '--trust-domain',
    'example.org',
  ]);
  files = await startFileServer();
}, 1_800_000); // a cold build of cert-manager takes minutes

afterAll(async () => {
  await op?.stop();
  await files?.close();
  await Promise.all(managers.map((m) => m.stop()));
  await Promise.all([teamA.cleanup(), teamB.cleanup()]);
  rmSync(tmp, { recursive: true, force: true });
});

const issued = (name: string) => ({
  card: sampleCard(),
  signing: { keys: [{ issuerRef: { name: 'test-ca' }, kid: name }] },
});

const header = (s: Sig) =>
  JSON.parse(Buffer.from(s.protected, 'base64url').toString('utf8')) as { x5c?: string[]; kid?: string };

async function servedCard(namespace: string, name: string) {
  const cm = await api.getConfigMap(namespace, `${name}-agent-card`);
  const text = cm?.data?.['agent-card.json'];
  return text ? { text, card: JSON.parse(text) as { signatures?: Sig[] } } : undefined;
}

function leafOf(card: { signatures?: Sig[] }): X509Certificate {
  const x5c = header(card.signatures![0]!).x5c!;
  return new X509Certificate(Buffer.from(x5c[0]!, 'base64'));
}

async function getCertificate(namespace: string, name: string) {
  try {
    return (await custom.getNamespacedCustomObject({ ...CERT, namespace, name })) as {
      metadata: { ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean }[] };
      spec: Record<string, unknown>;
    };
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

describe('spec.signing.keys[].issuerRef with cert-manager and a CA Issuer', () => {
  it('signs with an x5c chain carrying the workload identity; discover verifies team-a and refuses team-b', async () => {
    await api.createCard(teamA.name, 'recipes', issued('recipes'));
    await api.createCard(teamB.name, 'billing', issued('billing'));

    // The owned Certificate: the identity from the operator's template, nothing the user wrote.
    const cert = await waitFor('the Certificate of team-a', () =>
      getCertificate(teamA.name, 'recipes-signing'),
    );
    const card = await api.getCard(teamA.name, 'recipes');
    expect(cert.metadata.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'AgentCard',
        name: 'recipes',
        uid: card!.metadata.uid,
        controller: true,
      }),
    ]);
    expect(cert.spec).toMatchObject({
      secretName: 'recipes-signing',
      uris: [`spiffe://example.org/ns/${teamA.name}/sa/default`],
      usages: ['digital signature'],
      privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
      issuerRef: { name: 'test-ca', kind: 'Issuer', group: 'cert-manager.io' },
    });

    await waitFor(
      'team-a Signed=True',
      async () => {
        const c = await api.getCard(teamA.name, 'recipes');
        const s = condition(c, 'Signed');
        if (s?.status !== 'True') throw new Error(`Signed: ${s?.reason}: ${s?.message}`);
        return true;
      },
      90_000,
    );
    const a = await waitFor(
      'team-a signed',
      async () =>
        (await servedCard(teamA.name, 'recipes'))?.card.signatures && servedCard(teamA.name, 'recipes'),
      90_000,
    );
    const b = await waitFor(
      'team-b signed',
      async () =>
        (await servedCard(teamB.name, 'billing'))?.card.signatures && servedCard(teamB.name, 'billing'),
      90_000,
    );
    const leaf = leafOf(a!.card);
    expect(leaf.subjectAltName).toBe(`URI:spiffe://example.org/ns/${teamA.name}/sa/default`);
    expect(leaf.verify(new X509Certificate(issuer.caPem).publicKey)).toBe(true);
    // The root is not in the chain (RFC 7515 section 4.1.6 allows it; the verifier brings it).
    expect(header(a!.card.signatures![0]!).x5c).toHaveLength(1);
    const live = await api.getCard(teamA.name, 'recipes');
    expect(condition(live, 'Signed')).toMatchObject({ status: 'True', reason: 'Signed' });

    files.routes.set('/a.json', { body: a!.text });
    files.routes.set('/b.json', { body: b!.text });
    const discover = (path: string) =>
      agentcard([
        'discover',
        `${files.origin}${path}`,
        '--trust-bundle',
        join(tmp, 'ca.pem'),
        '--identity',
        `spiffe://example.org/ns/${teamA.name}/*`,
        '--allow-cidr',
        '127.0.0.0/8',
      ]);
    const [ok, refused] = await Promise.all([discover('/a.json'), discover('/b.json')]);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toContain(`verified spiffe://example.org/ns/${teamA.name}/sa/default`);
    expect(refused.code, refused.stdout + refused.stderr).toBe(1);
    expect(refused.stdout).toContain(
      `the leaf identity spiffe://example.org/ns/${teamB.name}/sa/default matches none of the trusted identities`,
    );
  }, 240_000);

  it('re-signs the card within seconds of a forced renewal', async () => {
    const before = leafOf((await servedCard(teamA.name, 'recipes'))!.card);
    const status = await waitForCertificateReady(teamA.name, 'recipes-signing');
    const started = Date.now();
    await renewCertificate(teamA.name, 'recipes-signing');
    await waitForCertificateReady(teamA.name, 'recipes-signing', {
      revision: (status.revision ?? 1) + 1,
      timeoutMs: 60_000,
    });
    const issuedAt = Date.now();
    const after = await waitFor(
      're-signed with the renewed certificate',
      async () => {
        const served = await servedCard(teamA.name, 'recipes');
        const leaf = served && leafOf(served.card);
        return leaf && leaf.serialNumber !== before.serialNumber ? leaf : undefined;
      },
      30_000,
    );
    const resigned = Date.now();
    // The figure the docs quote (docs/signing.md): from the renewal asked to the card re-signed.
    console.log(
      `issuerRef renewal: Certificate re-issued after ${issuedAt - started} ms, card re-signed ${resigned - issuedAt} ms later (${resigned - started} ms in all)`,
    );
    expect(after.publicKey.export({ format: 'jwk' })).not.toEqual(before.publicKey.export({ format: 'jwk' }));
    expect(after.subjectAltName).toBe(before.subjectAltName);
    expect(resigned - issuedAt).toBeLessThan(15_000);
  }, 120_000);

  it('puts a Certificate edited by hand back, and never signs with a certificate naming more', async () => {
    const cert = (await getCertificate(teamA.name, 'recipes-signing'))!;
    const identity = `URI:spiffe://example.org/ns/${teamA.name}/sa/default`;
    await waitForCertificateReady(teamA.name, 'recipes-signing');
    // Every version of the served card from the edit on: its leaf never names the added SAN.
    const seen = new Set<string>();
    let watching = true;
    let samples = 0;
    const watcher = (async () => {
      while (watching) {
        const served = await servedCard(teamA.name, 'recipes');
        if (served) seen.add(leafOf(served.card).subjectAltName ?? '');
        samples++;
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    await custom.patchNamespacedCustomObject({
      ...CERT,
      namespace: teamA.name,
      name: 'recipes-signing',
      body: [{ op: 'add', path: '/spec/dnsNames', value: ['evil.example.org'] }],
    });
    await waitFor('the hand edit undone', async () => {
      const now = await getCertificate(teamA.name, 'recipes-signing');
      return (
        now &&
        now.spec.dnsNames === undefined &&
        JSON.stringify(now.spec.uris) === JSON.stringify(cert.spec.uris)
      );
    });
    // Whether cert-manager issues again depends on whether it saw the edit before the operator
    // undid it (it issues for a spec that differs from the issued certificate): either way the
    // Certificate ends Ready and the card signed with a certificate that names the identity only.
    await waitForCertificateReady(teamA.name, 'recipes-signing');
    await waitFor('Signed=True again', async () => {
      const c = await api.getCard(teamA.name, 'recipes');
      return condition(c, 'Signed')?.status === 'True';
    });
    // Nothing signed after that, observed rather than waited out: once the operator's card and
    // certificate queues are both idle, no reconcile that could sign is under way or queued; the
    // watcher then reads the served card once more, from its start.
    await waitFor('the card and certificate queues idle', async () => {
      const queues = await Promise.all(
        ['agentcard', 'issuer'].map((c) => controllerQueue(op.metricsPort(), c)),
      );
      return queues.every((q) => q.idle);
    });
    const sampled = samples;
    await waitFor('one more reading of the served card', async () => samples > sampled + 1);
    watching = false;
    await watcher;
    expect([...seen]).toEqual([identity]);
  }, 120_000);

  it('a card whose issuer does not exist: CertificatePending, and no unsigned card is published', async () => {
    await api.createCard(teamB.name, 'pending', {
      card: sampleCard(),
      signing: { keys: [{ issuerRef: { name: 'no-such-issuer' } }] },
    });
    const pending = await waitFor('CertificatePending', async () => {
      const c = await api.getCard(teamB.name, 'pending');
      const signed = condition(c, 'Signed');
      return signed?.reason === 'CertificatePending' && signed.message.includes('not issued yet')
        ? signed
        : undefined;
    });
    expect(pending.status).toBe('False');
    expect(pending.message).toContain('Certificate "pending-signing"');
    expect(pending.message).toContain('nothing is published yet');
    expect(await api.getConfigMap(teamB.name, 'pending-agent-card')).toBeUndefined();
  }, 120_000);

  it('deleting the AgentCard deletes its Certificate (garbage collection)', async () => {
    await api.deleteCard(teamA.name, 'recipes');
    await waitFor(
      'the Certificate deleted',
      async () => (await getCertificate(teamA.name, 'recipes-signing')) === undefined,
      60_000,
    );
  }, 90_000);
});
