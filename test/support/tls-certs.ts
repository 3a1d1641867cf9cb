/**
 * Test certificates made on the fly (no files, no openssl CLI): a CA and leaves it signs, with
 * chosen names and validity, so that TLS probes can meet valid, expired, untrusted and
 * wrong-name certificates.
 */
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

x509.cryptoProvider.set(webcrypto as never);

const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

export interface Pem {
  cert: string;
  key: string;
}

async function keyPem(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n')}\n-----END PRIVATE KEY-----\n`;
}

export interface TestCa {
  cert: string;
  issue(opts: { dns?: string[]; ips?: string[]; notBefore?: Date; notAfter?: Date }): Promise<Pem>;
}

const DAY = 86_400_000;

export async function createTestCa(name = 'probe test CA'): Promise<TestCa> {
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as CryptoKeyPair;
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${name}`,
    keys,
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + 30 * DAY),
    signingAlgorithm: alg,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
    ],
  });
  return {
    cert: ca.toString('pem'),
    async issue(opts) {
      const leafKeys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as CryptoKeyPair;
      const names = [
        ...(opts.dns ?? []).map((value) => ({ type: 'dns' as const, value })),
        ...(opts.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
      ];
      const leaf = await x509.X509CertificateGenerator.create({
        subject: `CN=${opts.dns?.[0] ?? opts.ips?.[0] ?? 'leaf'}`,
        issuer: ca.subject,
        publicKey: leafKeys.publicKey,
        signingKey: keys.privateKey,
        notBefore: opts.notBefore ?? new Date(Date.now() - DAY),
        notAfter: opts.notAfter ?? new Date(Date.now() + 7 * DAY),
        signingAlgorithm: alg,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
          new x509.SubjectAlternativeNameExtension(names),
        ],
      });
      return { cert: leaf.toString('pem'), key: await keyPem(leafKeys.privateKey) };
    },
  };
}

/** A self-signed leaf: its own issuer, trusted by nobody (DEPTH_ZERO_SELF_SIGNED_CERT). */
export async function selfSignedCert(opts: { dns?: string[]; ips?: string[] }): Promise<Pem> {
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as CryptoKeyPair;
  const names = [
    ...(opts.dns ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(opts.ips ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${opts.dns?.[0] ?? opts.ips?.[0] ?? 'self-signed'}`,
    keys,
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + 7 * DAY),
    signingAlgorithm: alg,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(names),
    ],
  });
  return { cert: cert.toString('pem'), key: await keyPem(keys.privateKey) };
}
