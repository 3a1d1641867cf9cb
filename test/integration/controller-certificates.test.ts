// Certificate signing keys against the real API server: a kubernetes.io/tls Secret (as
// cert-manager writes it) signs the v1.0 and the v0.3 card with its chain in the JWS x5c header;
// a JWKS key and a certificate sign side by side; a broken Secret is refused with its reason and
// the last good card stays served; a rotation re-signs within seconds; a certificate close to
// expiry is warned about (condition, Event, metric). No resync within the test (10 minutes).
import { X509Certificate } from 'node:crypto';
import * as jose from 'jose';
import { describe, expect, it } from 'vitest';
import { signingPayload } from '../../operator/card/jcs.ts';
import {
  condition,
  metricValue,
  operatorMetrics,
  privateJwk,
  sampleCard,
  useOperatorInNamespace,
  waitFor,
} from '../support/operator.ts';
import {
  createIntermediate,
  createRoot,
  tlsSecretEntries,
  type TlsEntries,
} from '../support/signing-certs.ts';

const { api, ns, op } = useOperatorInNamespace('controller-certs', { flags: ['--resync', '10m'] });

const SPIFFE = 'spiffe://cluster.local/ns/agents/sa/weather';
type Sig = { protected: string; signature: string };

async function putTlsSecret(name: string, entries: TlsEntries): Promise<void> {
  const body = {
    metadata: { name, namespace: ns.name },
    type: 'kubernetes.io/tls',
    stringData: { 'tls.crt': entries['tls.crt'], 'tls.key': entries['tls.key'], 'ca.crt': entries['ca.crt'] },
  };
  try {
    await api.core.createNamespacedSecret({ namespace: ns.name, body });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
    await api.core.replaceNamespacedSecret({ namespace: ns.name, name, body });
  }
}

/** replaceSpec, again on a 409 (the controller's status write moved the resourceVersion). */
async function setSpec(name: string, spec: Record<string, unknown>): Promise<void> {
  await waitFor(`spec of ${name} replaced`, async () => {
    try {
      await api.replaceSpec(ns.name, name, spec);
      return true;
    } catch (err) {
      if ((err as { code?: number }).code === 409) return false;
      throw err;
    }
  });
}

const header = (s: Sig) =>
  JSON.parse(Buffer.from(s.protected, 'base64url').toString('utf8')) as Record<string, unknown>;

/** Verifies one signature of a served card with the key of its x5c leaf; returns the leaf. */
async function verifyWithX5c(doc: Record<string, unknown>, sig: Sig, ca: string): Promise<X509Certificate> {
  const x5c = header(sig).x5c as string[];
  const chain = x5c.map((c) => new X509Certificate(Buffer.from(c, 'base64')));
  // The chain verifies up to the Secret's ca.crt (what a verifier's trust bundle would hold).
  for (let i = 0; i + 1 < chain.length; i++) expect(chain[i]!.verify(chain[i + 1]!.publicKey)).toBe(true);
  expect(chain.at(-1)!.verify(new X509Certificate(ca).publicKey)).toBe(true);
  const payload = Buffer.from(signingPayload(doc)).toString('base64url');
  const key = await jose.importJWK(chain[0]!.publicKey.export({ format: 'jwk' }), header(sig).alg as string);
  await jose.compactVerify(`${sig.protected}.${payload}.${sig.signature}`, key);
  return chain[0]!;
}

async function served(name: string) {
  const cm = await api.getConfigMap(ns.name, `${name}-agent-card`);
  if (!cm?.data?.['agent-card.json']) return undefined;
  return {
    v1: JSON.parse(cm.data['agent-card.json']) as Record<string, unknown> & { signatures?: Sig[] },
    v03: JSON.parse(cm.data['agent.json']!) as Record<string, unknown> & { signatures?: Sig[] },
    jwks: JSON.parse(cm.data['jwks.json']!) as jose.JSONWebKeySet,
    raw: cm.data['agent-card.json'],
  };
}

describe('certificate signing keys', () => {
  it('a TLS Secret signs the v1.0 and v0.3 cards with x5c; status, condition and metric say so; rotation re-signs', async () => {
    const root = await createRoot();
    const intermediate = await createIntermediate(root);
    const first = await tlsSecretEntries({ root, intermediate, uri: SPIFFE });
    await putTlsSecret('weather-tls', first);
    await api.createCard(ns.name, 'weather', {
      card: sampleCard('1.0.0'),
      signing: { keys: [{ certificate: { secretName: 'weather-tls' } }] },
    });
    const signed = await waitFor('Signed=True', async () => {
      const card = await api.getCard(ns.name, 'weather');
      return condition(card, 'Signed')?.status === 'True' && card?.status?.card ? card : undefined;
    });
    const sigStatus = (signed.status?.signatures as Array<Record<string, unknown>>)[0]!;
    expect(sigStatus.certificate).toEqual({
      subject: 'CN=agent',
      issuer: 'CN=signing intermediate CA',
      identities: [SPIFFE],
      verifiedIdentity: SPIFFE, // the chain verifies to the Secret's ca.crt
      notAfter: first.leaf.notAfter.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    });
    expect(condition(signed, 'CertificatesValid')).toMatchObject({ status: 'True', reason: 'Valid' });
    expect(condition(signed, 'Ready')?.status).not.toBe('False');

    const docs = (await served('weather'))!;
    for (const doc of [docs.v1, docs.v03]) {
      expect(doc.signatures).toHaveLength(1);
      const h = header(doc.signatures![0]!);
      expect(h.kid).toBe(sigStatus.kid);
      expect((h.x5c as string[]).length).toBe(2);
      const leaf = await verifyWithX5c(doc, doc.signatures![0]!, first['ca.crt']);
      expect(leaf.subjectAltName).toContain(SPIFFE);
    }
    // The JWKS still names the key (kid), so a JWKS verifier keeps working.
    expect(docs.jwks.keys.map((k) => k.kid)).toEqual([sigStatus.kid]);

    const metrics = await operatorMetrics(await op.metricsPort());
    expect(
      metricValue(metrics, 'agentcard_signing_certificate_expiration_timestamp_seconds', {
        namespace: ns.name,
        name: 'weather',
      }),
    ).toBe(Math.floor(first.leaf.notAfter.getTime() / 1000));

    // Rotation: a new certificate (as cert-manager renews it) re-signs within seconds.
    const second = await tlsSecretEntries({ root, intermediate, uri: SPIFFE, commonName: 'agent-renewed' });
    const rotated = Date.now();
    await putTlsSecret('weather-tls', second);
    // The wait outlasts the 30 s bound, so a slow re-signing fails on the bound, with the time it
    // took, instead of restating the bound as a timeout.
    const after = await waitFor(
      'signed with the renewed certificate',
      async () => {
        const d = await served('weather');
        const x5c = d?.v1.signatures?.[0] && (header(d.v1.signatures[0]).x5c as string[]);
        return x5c && x5c[0] === Buffer.from(second.leaf.rawData).toString('base64') ? d : undefined;
      },
      60_000,
    );
    const rotatedMs = Date.now() - rotated;
    expect(rotatedMs).toBeLessThan(30_000);
    await verifyWithX5c(after.v1, after.v1.signatures![0]!, second['ca.crt']);
    await verifyWithX5c(after.v03, after.v03.signatures![0]!, second['ca.crt']);
    console.info(`certificate rotation: re-signed ${rotatedMs} ms after the Secret changed`);
  });

  it('a JWKS key and a certificate sign the same card (migration)', async () => {
    await api.putSecret(ns.name, 'dual-jwk', { jwk: await privateJwk('legacy-key') }, true);
    const entries = await tlsSecretEntries({ uri: SPIFFE });
    await putTlsSecret('dual-tls', entries);
    await api.createCard(ns.name, 'dual', {
      card: sampleCard('1.0.0'),
      signing: {
        keys: [{ secretRef: { name: 'dual-jwk', key: 'jwk' } }, { certificate: { secretName: 'dual-tls' } }],
      },
    });
    const docs = await waitFor('two signatures', async () => {
      const d = await served('dual');
      return d?.v1.signatures?.length === 2 ? d : undefined;
    });
    const [jwksSig, certSig] = docs.v1.signatures!;
    expect(header(jwksSig!).x5c).toBeUndefined();
    expect(header(jwksSig!).kid).toBe('legacy-key');
    // The JWKS signature verifies against the published jwks.json; the other with its x5c leaf.
    const payload = Buffer.from(signingPayload(docs.v1)).toString('base64url');
    await jose.compactVerify(
      `${jwksSig!.protected}.${payload}.${jwksSig!.signature}`,
      jose.createLocalJWKSet(docs.jwks),
    );
    await verifyWithX5c(docs.v1, certSig!, entries['ca.crt']);
    const card = await api.getCard(ns.name, 'dual');
    const sigs = card?.status?.signatures as Array<Record<string, unknown>>;
    expect(sigs[0]).toEqual({ kid: 'legacy-key', alg: 'ES256' });
    expect(sigs[1]!.certificate).toBeDefined();
  });

  it('refuses a mismatched key, a foreign ca.crt and an expired certificate; the last good card stays served', async () => {
    const root = await createRoot();
    const intermediate = await createIntermediate(root);
    const good = await tlsSecretEntries({ root, intermediate, uri: SPIFFE });
    await putTlsSecret('refuse-tls', good);
    await api.createCard(ns.name, 'refuse', {
      card: sampleCard('1.0.0'),
      signing: { keys: [{ certificate: { secretName: 'refuse-tls' } }] },
    });
    const before = await waitFor('published', async () => served('refuse'));
    // Each refusal comes with its own reason; a change of spec makes new bytes due, so the kept
    // card proves the refusal kept the last good one.
    await setSpec('refuse', {
      card: sampleCard('1.0.1'),
      signing: { keys: [{ certificate: { secretName: 'refuse-tls' } }] },
    });
    await waitFor('1.0.1 published', async () => (await served('refuse'))?.v1.version === '1.0.1');

    const other = await tlsSecretEntries({ root, intermediate });
    const otherRoot = await createRoot('another root');
    const expired = await tlsSecretEntries({
      root,
      intermediate,
      notBefore: new Date(Date.now() - 10 * 86_400_000),
      notAfter: new Date(Date.now() - 60_000),
    });
    const cases: Array<[string, TlsEntries, RegExp]> = [
      [
        'a key of another certificate',
        { ...good, 'tls.key': other['tls.key'] },
        /does not match the certificate/,
      ],
      ['a foreign ca.crt', { ...good, 'ca.crt': otherRoot.pem }, /does not verify against ca\.crt/],
      ['an expired certificate', expired, /expired at/],
    ];
    const lastGood = (await served('refuse'))!.raw;
    for (const [what, entries, reason] of cases) {
      await putTlsSecret('refuse-tls', entries);
      await setSpec('refuse', {
        card: sampleCard(`1.0.2-${what.length}`),
        signing: { keys: [{ certificate: { secretName: 'refuse-tls' } }] },
      });
      const refused = await waitFor(`refusal of ${what}`, async () => {
        const card = await api.getCard(ns.name, 'refuse');
        const c = condition(card, 'Signed');
        return c?.reason === 'SigningCertificateInvalid' && reason.test(c.message) ? card : undefined;
      });
      expect(condition(refused, 'Signed')!.message).toContain('the last good card stays published');
      expect(condition(refused, 'Signed')!.message).not.toContain('PRIVATE KEY');
      expect((await served('refuse'))!.raw).toBe(lastGood);
    }
    const events = await api.events(ns.name, 'refuse');
    expect(events.filter((e) => e.reason === 'SigningCertificateInvalid').length).toBeGreaterThanOrEqual(1);
    expect(before.v1.version).toBe('1.0.0');
  });

  it('warns before expiry: CertificatesValid=False, a Warning Event and the metric', async () => {
    // Five and a half hours of life, half an hour left: inside the warning window (a sixth, 55 min).
    const entries = await tlsSecretEntries({
      uri: SPIFFE,
      notBefore: new Date(Date.now() - 5 * 3600_000),
      notAfter: new Date(Date.now() + 30 * 60_000),
    });
    await putTlsSecret('expiring-tls', entries);
    await api.createCard(ns.name, 'expiring', {
      card: sampleCard('1.0.0'),
      signing: { keys: [{ certificate: { secretName: 'expiring-tls' } }] },
    });
    const warned = await waitFor('CertificatesValid=False', async () => {
      const card = await api.getCard(ns.name, 'expiring');
      return condition(card, 'CertificatesValid')?.status === 'False' ? card : undefined;
    });
    expect(condition(warned, 'CertificatesValid')).toMatchObject({ reason: 'CertificateExpiring' });
    expect(condition(warned, 'CertificatesValid')!.message).toContain(
      entries.leaf.notAfter
        .toISOString()
        .replace(/\.\d{3}Z$/, '.000Z')
        .slice(0, 19),
    );
    // Still signed and served: the warning does not take the card down.
    expect(condition(warned, 'Signed')?.status).toBe('True');
    expect(await served('expiring')).toBeDefined();
    await waitFor('a Warning Event CertificateExpiring', async () =>
      (await api.events(ns.name, 'expiring')).some(
        (e) => e.type === 'Warning' && e.reason === 'CertificateExpiring',
      ),
    );
    const metrics = await operatorMetrics(await op.metricsPort());
    const notAfter = metricValue(metrics, 'agentcard_signing_certificate_expiration_timestamp_seconds', {
      namespace: ns.name,
      name: 'expiring',
    });
    expect(notAfter - Date.now() / 1000).toBeLessThan(31 * 60);
  });
});
