/**
 * A test PKI for x5c-signed cards (no files, no openssl CLI): a root CA, intermediates, and
 * workload leaves whose URI SAN is a SPIFFE ID, as a SPIFFE X509-SVID; and a signer that signs a
 * card (RFC 8785 payload, as the operator does) with a leaf, putting the chain in the protected
 * `x5c` header (RFC 7515 section 4.1.6: base64 DER, leaf first, root left out). Each knob lets a
 * test build one kind of bad chain: expired, wrong root, no KeyUsage, a CA leaf, too long, ...
 */
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import * as jose from 'jose';
import { signingPayload } from '../../operator/card/jcs.ts';

type CryptoKeyPair = webcrypto.CryptoKeyPair;

x509.cryptoProvider.set(webcrypto as never);

const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY = 86_400_000;

export interface TestCert {
  cert: x509.X509Certificate;
  keys: CryptoKeyPair;
  /** PEM of the certificate. */
  pem: string;
  /** Standard base64 DER, as in x5c. */
  b64: string;
}

const wrap = (cert: x509.X509Certificate, keys: CryptoKeyPair): TestCert => ({
  cert,
  keys,
  pem: cert.toString('pem'),
  b64: Buffer.from(cert.rawData).toString('base64'),
});

const newKeys = async () =>
  (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as CryptoKeyPair;

export async function createRoot(name = 'test root CA', opts: { notAfter?: Date } = {}): Promise<TestCert> {
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${name}`,
    keys,
    notBefore: new Date(Date.now() - DAY),
    notAfter: opts.notAfter ?? new Date(Date.now() + 30 * DAY),
    signingAlgorithm: alg,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });
  return wrap(cert, keys);
}

export async function createIntermediate(
  issuer: TestCert,
  name: string,
  opts: { pathLength?: number } = {},
): Promise<TestCert> {
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.create({
    subject: `CN=${name}`,
    issuer: issuer.cert.subject,
    publicKey: keys.publicKey,
    signingKey: issuer.keys.privateKey,
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + 30 * DAY),
    signingAlgorithm: alg,
    extensions: [
      new x509.BasicConstraintsExtension(true, opts.pathLength, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });
  return wrap(cert, keys);
}

export interface LeafOptions {
  /** URI SANs; default one SPIFFE ID. */
  uris?: string[];
  notBefore?: Date;
  notAfter?: Date;
  /** KeyUsage flags; null: no KeyUsage extension. Default digitalSignature. */
  keyUsage?: number | null;
  ca?: boolean;
}

export async function createLeaf(issuer: TestCert, opts: LeafOptions = {}): Promise<TestCert> {
  const keys = await newKeys();
  const uris = opts.uris ?? ['spiffe://example.org/ns/team-a/sa/agent'];
  const keyUsage = opts.keyUsage === undefined ? x509.KeyUsageFlags.digitalSignature : opts.keyUsage;
  const cert = await x509.X509CertificateGenerator.create({
    subject: 'O=SPIRE',
    issuer: issuer.cert.subject,
    publicKey: keys.publicKey,
    signingKey: issuer.keys.privateKey,
    notBefore: opts.notBefore ?? new Date(Date.now() - DAY),
    notAfter: opts.notAfter ?? new Date(Date.now() + DAY),
    signingAlgorithm: alg,
    extensions: [
      new x509.BasicConstraintsExtension(opts.ca ?? false, undefined, true),
      ...(keyUsage === null ? [] : [new x509.KeyUsagesExtension(keyUsage, true)]),
      new x509.ExtendedKeyUsageExtension([
        x509.ExtendedKeyUsage.serverAuth,
        x509.ExtendedKeyUsage.clientAuth,
      ]),
      new x509.SubjectAlternativeNameExtension(uris.map((value) => ({ type: 'url' as const, value }))),
    ],
  });
  return wrap(cert, keys);
}

export { x509 };

/**
 * Signs a card with `leaf`'s key, the chain (leaf first, then `chain`) in the x5c header, and a
 * kid; the signature is appended to any the card already has.
 */
export async function signWithChain(
  card: Record<string, unknown>,
  leaf: TestCert,
  chain: TestCert[],
  opts: { kid?: string; x5c?: string[] } = {},
): Promise<Record<string, unknown>> {
  const { signatures: previous, ...unsigned } = card;
  const payload = new TextEncoder().encode(signingPayload(unsigned));
  const header = {
    alg: 'ES256',
    ...(opts.kid === '' ? {} : { kid: opts.kid ?? 'svid' }),
    typ: 'JOSE',
    x5c: opts.x5c ?? [leaf.b64, ...chain.map((c) => c.b64)],
  };
  const jws = await new jose.FlattenedSign(payload).setProtectedHeader(header).sign(leaf.keys.privateKey);
  const signatures = Array.isArray(previous) ? [...(previous as unknown[])] : [];
  signatures.push({ protected: jws.protected, signature: jws.signature });
  return { ...unsigned, signatures };
}
