/**
 * The webhook's own small PKI, as pure functions: a self-signed CA, a serving certificate it
 * signs for the webhook Service's DNS names, and the renewal rule. X.509 generation uses
 * @peculiar/x509 over WebCrypto (node:crypto can parse certificates but not create them);
 * inspection uses node:crypto's X509Certificate.
 */
// @peculiar/x509 resolves its algorithm providers through tsyringe, which needs this polyfill
// loaded before it.
import 'reflect-metadata';
import { X509Certificate, createPrivateKey, webcrypto } from 'node:crypto';
import { isIP } from 'node:net';
import * as x509 from '@peculiar/x509';

type CryptoKey = webcrypto.CryptoKey;
const subtle = webcrypto.subtle;
x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/** What the Secret holds (PEM). `caBundle` may hold the previous CA too during a CA rotation. */
export interface CertBundle {
  caCert: string;
  caKey: string;
  cert: string;
  key: string;
  caBundle: string;
}

/** Secret keys of the bundle. */
export const SECRET_KEYS = {
  caCert: 'ca.crt',
  caKey: 'ca.key',
  cert: 'tls.crt',
  key: 'tls.key',
  caBundle: 'ca-bundle.crt',
} as const;

const DAY = 86_400_000;
export const CA_VALIDITY_DAYS = 3650;
export const SERVING_VALIDITY_DAYS = 365;
const ALG = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGNING = { name: 'ECDSA', hash: 'SHA-256' } as const;

/** The names a Service is reached by, inside the cluster. */
export function serviceHosts(service: string, namespace: string): string[] {
  return [
    service,
    `${service}.${namespace}`,
    `${service}.${namespace}.svc`,
    `${service}.${namespace}.svc.cluster.local`,
  ];
}

async function keyPair(): Promise<webcrypto.CryptoKeyPair> {
  return (await subtle.generateKey(ALG, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
}

async function pkcs8Pem(key: CryptoKey): Promise<string> {
  const der = await subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

async function importPkcs8(pem: string): Promise<CryptoKey> {
  const der = createPrivateKey(pem).export({ type: 'pkcs8', format: 'der' });
  return subtle.importKey('pkcs8', der, ALG, false, ['sign']);
}

/** Backdated a little so that clocks running slightly behind accept a fresh certificate. */
const notBefore = (now: Date) => new Date(now.getTime() - 5 * 60_000);

export async function createCA(
  now: Date,
  cn = 'agentcard-operator webhook CA',
): Promise<{ cert: string; key: string }> {
  const keys = await keyPair();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${cn}`,
    notBefore: notBefore(now),
    notAfter: new Date(now.getTime() + CA_VALIDITY_DAYS * DAY),
    signingAlgorithm: SIGNING,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: cert.toString('pem'), key: await pkcs8Pem(keys.privateKey) };
}

/** A serving certificate for `hosts` (DNS names and IP addresses), signed by the CA. */
export async function issueServingCert(
  ca: { cert: string; key: string },
  hosts: string[],
  now: Date,
): Promise<{ cert: string; key: string }> {
  const caCert = new x509.X509Certificate(ca.cert);
  const keys = await keyPair();
  const cert = await x509.X509CertificateGenerator.create({
    subject: `CN=${hosts[0] ?? 'agentcard-webhook'}`,
    issuer: caCert.subject,
    notBefore: notBefore(now),
    notAfter: new Date(now.getTime() + SERVING_VALIDITY_DAYS * DAY),
    signingAlgorithm: SIGNING,
    publicKey: keys.publicKey,
    signingKey: await importPkcs8(ca.key),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(
        hosts.map((h) => ({ type: isIP(h) ? 'ip' : 'dns', value: h })),
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(caCert),
    ],
  });
  return { cert: cert.toString('pem'), key: await pkcs8Pem(keys.privateKey) };
}

/** A certificate must be renewed once less than a third of its lifetime is left. */
export function renewalDue(pem: string, now: Date): boolean {
  const c = new X509Certificate(pem);
  const from = Date.parse(c.validFrom);
  const to = Date.parse(c.validTo);
  return now.getTime() >= to - (to - from) / 3;
}

/**
 * Why a stored bundle cannot be used as it is: 'ca' (a new CA is needed), 'serving' (a new
 * serving certificate from the same CA is enough) or undefined (good). Never throws.
 */
export function bundleProblem(
  bundle: Partial<CertBundle>,
  hosts: string[],
  now: Date,
): 'ca' | 'serving' | undefined {
  if (!bundle.caCert || !bundle.caKey) return 'ca';
  let ca: X509Certificate;
  try {
    ca = new X509Certificate(bundle.caCert);
    if (!ca.ca || !ca.checkPrivateKey(createPrivateKey(bundle.caKey)) || renewalDue(bundle.caCert, now))
      return 'ca';
  } catch {
    return 'ca';
  }
  if (!bundle.cert || !bundle.key) return 'serving';
  try {
    const cert = new X509Certificate(bundle.cert);
    if (!cert.verify(ca.publicKey) || !cert.checkPrivateKey(createPrivateKey(bundle.key))) return 'serving';
    if (renewalDue(bundle.cert, now)) return 'serving';
    const covers = hosts.every((h) => (isIP(h) ? cert.checkIP(h) : cert.checkHost(h, { wildcards: false })));
    return covers ? undefined : 'serving';
  } catch {
    return 'serving';
  }
}

/** Makes a usable bundle from what is stored (possibly nothing), renewing what is due. */
export async function renewBundle(
  stored: Partial<CertBundle>,
  hosts: string[],
  now: Date,
): Promise<{ bundle: CertBundle; changed: boolean }> {
  const problem = bundleProblem(stored, hosts, now);
  if (!problem) return { bundle: stored as CertBundle, changed: false };
  let ca = { cert: stored.caCert ?? '', key: stored.caKey ?? '' };
  let caBundle = stored.caBundle || ca.cert;
  if (problem === 'ca') {
    const previous = stored.caCert && stillValid(stored.caCert, now) ? stored.caCert : undefined;
    ca = await createCA(now);
    // While API servers may still hold the old caBundle, trust both CAs.
    caBundle = previous ? ca.cert + previous : ca.cert;
  }
  const serving = await issueServingCert(ca, hosts, now);
  return {
    bundle: { caCert: ca.cert, caKey: ca.key, cert: serving.cert, key: serving.key, caBundle },
    changed: true,
  };
}

function stillValid(pem: string, now: Date): boolean {
  try {
    return Date.parse(new X509Certificate(pem).validTo) > now.getTime();
  } catch {
    return false;
  }
}
