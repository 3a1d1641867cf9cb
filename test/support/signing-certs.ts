/**
 * Signing certificates made on the fly: a root CA, an intermediate it signs, and leaves with a
 * URI SAN (a SPIFFE ID), a chosen key usage and validity, written as the entries of a
 * `kubernetes.io/tls` Secret (tls.crt with the chain, tls.key, ca.crt) as cert-manager does.
 */
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

type CryptoKeyPair = webcrypto.CryptoKeyPair;

x509.cryptoProvider.set(webcrypto as never);

const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY = 86_400_000;

export interface TlsEntries {
  'tls.crt': string;
  'tls.key': string;
  'ca.crt': string;
}

export interface Authority {
  cert: x509.X509Certificate;
  keys: CryptoKeyPair;
  pem: string;
}

async function keyPair(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as CryptoKeyPair;
}

export async function keyPem(keys: CryptoKeyPair): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n')}\n-----END PRIVATE KEY-----\n`;
}

export async function createRoot(name = 'signing root CA'): Promise<Authority> {
  const keys = await keyPair();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${name}`,
    keys,
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + 365 * DAY),
    signingAlgorithm: alg,
    extensions: [
      new x509.BasicConstraintsExtension(true, 1, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });
  return { cert, keys, pem: cert.toString('pem') };
}

export async function createIntermediate(
  root: Authority,
  name = 'signing intermediate CA',
  opts: { notAfter?: Date } = {},
): Promise<Authority> {
  const keys = await keyPair();
  const cert = await x509.X509CertificateGenerator.create({
    subject: `CN=${name}`,
    issuer: root.cert.subject,
    publicKey: keys.publicKey,
    signingKey: root.keys.privateKey,
    notBefore: new Date(Date.now() - DAY),
    notAfter: opts.notAfter ?? new Date(Date.now() + 180 * DAY),
    signingAlgorithm: alg,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });
  return { cert, keys, pem: cert.toString('pem') };
}

export interface LeafOptions {
  uri?: string;
  /** null: an empty subject (as cert-manager issues for a Certificate with only a URI SAN). */
  commonName?: string | null;
  notBefore?: Date;
  notAfter?: Date;
  /** Key usage flags; null: no key usage extension. Default digitalSignature. */
  usages?: number | null;
  ca?: boolean;
}

export async function issueLeaf(
  issuer: Authority,
  opts: LeafOptions = {},
): Promise<{ cert: x509.X509Certificate; keys: CryptoKeyPair }> {
  const keys = await keyPair();
  const usages = opts.usages === undefined ? x509.KeyUsageFlags.digitalSignature : opts.usages;
  const cert = await x509.X509CertificateGenerator.create({
    subject: opts.commonName === null ? '' : `CN=${opts.commonName ?? 'agent'}`,
    issuer: issuer.cert.subject,
    publicKey: keys.publicKey,
    signingKey: issuer.keys.privateKey,
    notBefore: opts.notBefore ?? new Date(Date.now() - DAY),
    notAfter: opts.notAfter ?? new Date(Date.now() + 30 * DAY),
    signingAlgorithm: alg,
    extensions: [
      new x509.BasicConstraintsExtension(opts.ca ?? false, undefined, true),
      ...(usages === null ? [] : [new x509.KeyUsagesExtension(usages, true)]),
      // RFC 5280 section 4.2.1.6: with an empty subject the SAN extension is critical.
      ...(opts.uri
        ? [
            new x509.SubjectAlternativeNameExtension(
              [{ type: 'url', value: opts.uri }],
              opts.commonName === null,
            ),
          ]
        : []),
    ],
  });
  return { cert, keys };
}

/**
 * The Secret entries of a leaf issued by an intermediate of a root: tls.crt = leaf +
 * intermediate, ca.crt = root (cert-manager's CA issuer layout with an intermediate CA).
 */
export async function tlsSecretEntries(
  opts: LeafOptions & { root?: Authority; intermediate?: Authority } = {},
): Promise<TlsEntries & { root: Authority; intermediate: Authority; leaf: x509.X509Certificate }> {
  const root = opts.root ?? (await createRoot());
  const intermediate = opts.intermediate ?? (await createIntermediate(root));
  const leaf = await issueLeaf(intermediate, opts);
  return {
    'tls.crt': leaf.cert.toString('pem') + '\n' + intermediate.pem + '\n',
    'tls.key': await keyPem(leaf.keys),
    'ca.crt': root.pem + '\n',
    root,
    intermediate,
    leaf: leaf.cert,
  };
}

export const KeyUsage = x509.KeyUsageFlags;
