import { createPrivateKey, X509Certificate } from 'node:crypto';
import * as jose from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { expiryWarningAt } from '../../../operator/card/certificate.ts';
import { renderV1 } from '../../../operator/card/render.ts';
import { signCatalog, verifyCatalog } from '../../../operator/catalog/signature.ts';
import {
  importCertificateSigningKey,
  importSigningKey,
  publicJwks,
  signCard,
} from '../../../operator/card/sign.ts';
import { signingPayload } from '../../../operator/card/jcs.ts';
import { validateCard } from '../../../operator/card/validate.ts';
import { verifyCard } from '../../../operator/card/verify.ts';
import { parseTrustBundle } from '../../../operator/card/x5c.ts';
import { UserError } from '../../../operator/errors.ts';
import { minimalCard } from '../../support/cards.ts';
import {
  createIntermediate,
  createRoot,
  issueLeaf,
  keyPem,
  KeyUsage,
  tlsSecretEntries,
  type Authority,
} from '../../support/signing-certs.ts';

const SPIFFE = 'spiffe://cluster.local/ns/agents/sa/weather';
const DAY = 86_400_000;
const material = (e: { 'tls.crt': string; 'tls.key': string; 'ca.crt'?: string }) => ({
  certificate: e['tls.crt'],
  privateKey: e['tls.key'],
  ...(e['ca.crt'] !== undefined ? { ca: e['ca.crt'] } : {}),
});
const header = (p: string) =>
  JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Record<string, unknown>;

let root: Authority;
let intermediate: Authority;
beforeAll(async () => {
  root = await createRoot();
  intermediate = await createIntermediate(root);
});

async function refusal(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UserError);
  const message = (err as Error).message;
  expect(message).not.toContain('PRIVATE KEY');
  return message;
}

describe('certificate signing keys', () => {
  it('signs with x5c (leaf, intermediate; no root) and kid; the signature verifies with the leaf key', async () => {
    const e = await tlsSecretEntries({ root, intermediate, uri: SPIFFE });
    const key = await importCertificateSigningKey(material(e));
    expect(key.alg).toBe('ES256');
    expect(key.certificate).toMatchObject({
      subject: 'CN=agent',
      issuer: 'CN=signing intermediate CA',
      identities: [SPIFFE],
    });
    expect(Date.parse(key.certificate!.notAfter)).toBe(e.leaf.notAfter.getTime());
    const card = renderV1(validateCard(minimalCard()).card!);
    const signed = await signCard(card, [key]);
    const [sig] = signed.signatures as { protected: string; signature: string }[];
    const h = header(sig!.protected);
    expect(Object.keys(h)).toEqual(['alg', 'kid', 'typ', 'x5c']);
    expect(h.kid).toBe(key.kid);
    const x5c = h.x5c as string[];
    expect(x5c).toHaveLength(2);
    // RFC 7515 section 4.1.6: base64 (not base64url) DER, leaf first.
    expect(x5c[0]).toBe(Buffer.from(e.leaf.rawData).toString('base64'));
    expect(x5c[1]).toBe(Buffer.from(intermediate.cert.rawData).toString('base64'));
    expect(x5c.join('')).not.toMatch(/[-_]/);
    // The signature verifies with the public key of the x5c leaf, outside our verifier.
    const leaf = new X509Certificate(Buffer.from(x5c[0]!, 'base64'));
    expect(leaf.verify(new X509Certificate(Buffer.from(x5c[1]!, 'base64')).publicKey)).toBe(true);
    const jwk = leaf.publicKey.export({ format: 'jwk' });
    const payload = Buffer.from(signingPayload(signed)).toString('base64url');
    await jose.compactVerify(
      `${sig!.protected}.${payload}.${sig!.signature}`,
      await jose.importJWK(jwk, 'ES256'),
    );
    // ...and with the card verifier, through the JWKS.
    expect((await verifyCard(signed, publicJwks([key]))).verified).toBe(true);
  });

  it('signs with what cert-manager issues for a URI SAN only: an empty subject and a SEC1 key', async () => {
    const e = await tlsSecretEntries({ root, intermediate, uri: SPIFFE, commonName: null });
    const sec1 = createPrivateKey(e['tls.key']).export({ type: 'sec1', format: 'pem' }).toString();
    expect(sec1).toMatch(/^-----BEGIN EC PRIVATE KEY-----/);
    const key = await importCertificateSigningKey({ ...material(e), privateKey: sec1 });
    expect(key.certificate).toMatchObject({
      subject: '(empty subject)',
      issuer: 'CN=signing intermediate CA',
      identities: [SPIFFE],
    });
    const signed = await signCard(renderV1(validateCard(minimalCard()).card!), [key]);
    const verdict = await verifyCard(
      signed,
      { keys: [] },
      { certificates: { roots: parseTrustBundle(e['ca.crt'], 'ca.crt'), identities: [SPIFFE] } },
    );
    expect(verdict).toMatchObject({ verified: true, identity: SPIFFE });
  });

  it('keeps a lone self-signed leaf in x5c, and drops a self-signed root at the end of tls.crt', async () => {
    const e = await tlsSecretEntries({ root, intermediate });
    const withRoot = await importCertificateSigningKey(
      material({ ...e, 'tls.crt': e['tls.crt'] + root.pem }),
    );
    expect(withRoot.x5c).toHaveLength(2);
    // A leaf issued directly by the root with only ca.crt: x5c holds the leaf alone.
    const direct = await issueLeaf(root);
    const key = await importCertificateSigningKey({
      certificate: direct.cert.toString('pem'),
      privateKey: await keyPem(direct.keys),
      ca: root.pem,
    });
    expect(key.x5c).toEqual([Buffer.from(direct.cert.rawData).toString('base64')]);
  });

  it('dual signatures: a JWKS key and a certificate key sign the same card', async () => {
    const e = await tlsSecretEntries({ root, intermediate, uri: SPIFFE });
    const cert = await importCertificateSigningKey(material(e));
    const { generateSigningJwk } = await import('../../../operator/card/keygen.ts');
    const jwk = await importSigningKey(JSON.stringify(await generateSigningJwk('ES256', 'jwks-key')));
    const signed = await signCard(renderV1(validateCard(minimalCard()).card!), [jwk, cert]);
    const sigs = signed.signatures as { protected: string }[];
    expect(header(sigs[0]!.protected).x5c).toBeUndefined();
    expect(header(sigs[1]!.protected).x5c).toHaveLength(2);
    const result = await verifyCard(signed, publicJwks([jwk, cert]));
    expect(result.results.map((r) => r.ok)).toEqual([true, true]);
  });

  it('signs a catalog with x5c in its compact JWS header', async () => {
    const e = await tlsSecretEntries({ root, intermediate, uri: SPIFFE });
    const key = await importCertificateSigningKey(material(e));
    const signed = await signCatalog({ specVersion: '1.0', entries: [] }, key);
    const [protectedPart] = (signed.signature as string).split('.');
    expect(header(protectedPart!).x5c).toEqual(key.x5c);
    expect((await verifyCatalog(signed, publicJwks([key]))).verified).toBe(true);
  });

  it('refuses a key that does not match its certificate', async () => {
    const e = await tlsSecretEntries({ root, intermediate });
    const other = await tlsSecretEntries({ root, intermediate });
    const message = await refusal(
      importCertificateSigningKey(material({ ...e, 'tls.key': other['tls.key'] })),
    );
    expect(message).toMatch(
      /the private key in tls\.key does not match the certificate in tls\.crt \(CN=agent\)/,
    );
  });

  it('refuses an expired certificate, and one not valid yet', async () => {
    const expired = await tlsSecretEntries({
      root,
      intermediate,
      notBefore: new Date(Date.now() - 10 * DAY),
      notAfter: new Date(Date.now() - DAY),
    });
    expect(await refusal(importCertificateSigningKey(material(expired)))).toMatch(
      /^the certificate \(CN=agent\) expired at \d{4}-\d\d-\d\dT/,
    );
    const future = await tlsSecretEntries({ root, intermediate, notBefore: new Date(Date.now() + DAY) });
    expect(await refusal(importCertificateSigningKey(material(future)))).toMatch(/is not valid before/);
    // `now` decides: the same certificate is refused once its time has passed.
    const valid = await tlsSecretEntries({ root, intermediate });
    expect(
      await refusal(importCertificateSigningKey(material(valid), { now: new Date(Date.now() + 60 * DAY) })),
    ).toMatch(/expired at/);
  });

  it('refuses an expired intermediate', async () => {
    const oldIntermediate = await createIntermediate(root, 'old intermediate', {
      notAfter: new Date(Date.now() - 1000),
    });
    const e = await tlsSecretEntries({ root, intermediate: oldIntermediate });
    expect(await refusal(importCertificateSigningKey(material(e)))).toMatch(
      /tls\.crt: certificate 2 \(CN=old intermediate\) expired at/,
    );
  });

  it('refuses a chain that does not verify against its own ca.crt', async () => {
    const e = await tlsSecretEntries({ root, intermediate });
    const otherRoot = await createRoot('another root');
    expect(await refusal(importCertificateSigningKey(material({ ...e, 'ca.crt': otherRoot.pem })))).toBe(
      'the chain in tls.crt does not verify against ca.crt: CN=signing intermediate CA is not issued by CN=another root',
    );
  });

  it('refuses a chain out of order or with a foreign certificate', async () => {
    const e = await tlsSecretEntries({ root, intermediate });
    const otherIntermediate = await createIntermediate(await createRoot('r2'), 'foreign intermediate');
    const leafPem = e.leaf.toString('pem');
    expect(
      await refusal(
        importCertificateSigningKey(material({ ...e, 'tls.crt': leafPem + otherIntermediate.pem })),
      ),
    ).toMatch(/certificate 1 \(CN=agent\) is not issued by certificate 2 \(CN=foreign intermediate\)/);
    expect(
      await refusal(importCertificateSigningKey(material({ ...e, 'tls.crt': intermediate.pem + leafPem }))),
    ).toMatch(/does not match the certificate|CA certificate/);
  });

  it('refuses a certificate without the digital signature key usage, or without key usage', async () => {
    const noSig = await tlsSecretEntries({ root, intermediate, usages: KeyUsage.keyEncipherment });
    expect(await refusal(importCertificateSigningKey(material(noSig)))).toMatch(
      /\(CN=agent\) lacks the digital signature key usage/,
    );
    const none = await tlsSecretEntries({ root, intermediate, usages: null });
    expect(await refusal(importCertificateSigningKey(material(none)))).toMatch(/has no key usage extension/);
    const both = await tlsSecretEntries({
      root,
      intermediate,
      usages: KeyUsage.digitalSignature | KeyUsage.keyEncipherment,
    });
    await expect(importCertificateSigningKey(material(both))).resolves.toBeDefined();
  });

  it('refuses a CA certificate as the signing certificate', async () => {
    const e = await tlsSecretEntries({ root, intermediate, ca: true });
    expect(await refusal(importCertificateSigningKey(material(e)))).toMatch(/is a CA certificate/);
  });

  it('refuses missing or unreadable entries with the entry named', async () => {
    const e = await tlsSecretEntries({ root, intermediate });
    expect(await refusal(importCertificateSigningKey(material({ ...e, 'tls.crt': 'garbage' })))).toBe(
      'tls.crt holds no PEM certificate',
    );
    expect(
      await refusal(
        importCertificateSigningKey(
          material({ ...e, 'tls.crt': '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' }),
        ),
      ),
    ).toBe('tls.crt: certificate 1 cannot be parsed');
    expect(await refusal(importCertificateSigningKey(material({ ...e, 'tls.key': e['tls.crt'] })))).toBe(
      'tls.key does not hold a PEM private key',
    );
    expect(await refusal(importCertificateSigningKey(material({ ...e, 'ca.crt': 'nope' })))).toBe(
      'ca.crt holds no PEM certificate',
    );
  });

  it('warns min(7 days, a sixth of the lifetime) before notAfter', () => {
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    const at = (lifetimeMs: number) =>
      expiryWarningAt({
        notBefore: new Date(t0).toISOString(),
        notAfter: new Date(t0 + lifetimeMs).toISOString(),
      }).getTime() - t0;
    expect(at(90 * DAY)).toBe(83 * DAY);
    expect(at(3_600_000)).toBe(3_000_000);
  });
});
