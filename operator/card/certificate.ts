/**
 * Certificate signing keys: a `kubernetes.io/tls` Secret (`tls.crt` with its chain, `tls.key`,
 * optional `ca.crt`), as cert-manager writes it. The signature's protected header then carries
 * `x5c` (RFC 7515 section 4.1.6: base64 (not base64url) DER, leaf first, each certificate
 * certifying the one before it), so a verifier can check the signing key against a trust bundle
 * and an identity (the certificate's URI SAN, e.g. a SPIFFE ID) instead of pinning a key.
 *
 * Refused, each with its own reason (and never with key material in the message):
 * - a private key that is not the key of the leaf certificate;
 * - a leaf or intermediate certificate that is expired or not valid yet;
 * - a chain out of order (RFC 5246 section 7.4.2 order: each certificate issued by the next);
 * - a chain that does not verify against the Secret's own `ca.crt` (when present);
 * - a leaf without the digitalSignature key usage (RFC 5280 section 4.2.1.3), or a CA leaf.
 * The key usage extension is required, not only honoured when present: the certificate is the
 * statement that this key signs, and cert-manager always writes it.
 */
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { UserError } from '../errors.ts';

/** The public facts of a signing certificate, for status and messages. */
export interface CertificateFacts {
  subject: string;
  issuer: string;
  /** URI SANs (such as SPIFFE IDs) first, then DNS names. */
  identities: string[];
  notBefore: string;
  notAfter: string;
  serialNumber: string;
}

export interface CheckedCertificate {
  /** The chain as the JWS `x5c` header carries it: leaf first, without a self-signed root. */
  x5c: string[];
  facts: CertificateFacts;
  privateKey: KeyObject;
  /**
   * The certificates of the Secret's `ca.crt` (base64 DER; empty without one): the trust anchors
   * a policy verifies the chain's identity against (operator/policy/signer.ts).
   */
  anchors: string[];
}

const PEM_CERT = /-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]+?-----END CERTIFICATE-----/g;

/** Every certificate of a PEM bundle, in order; `what` names the file in errors. */
export function parseCertificates(pem: string, what: string): X509Certificate[] {
  const blocks = pem.match(PEM_CERT) ?? [];
  if (blocks.length === 0) throw new UserError(`${what} holds no PEM certificate`);
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch {
      throw new UserError(`${what}: certificate ${i + 1} cannot be parsed`);
    }
  });
}

/**
 * A short, readable distinguished name ("CN=agent, O=example"). node leaves `subject` undefined
 * for an empty name, which is what cert-manager issues for a Certificate with only a URI SAN (an
 * X509-SVID needs no subject: SPIFFE X509-SVID specification section 3).
 */
function dn(text: string | undefined): string {
  return (text ?? '').split('\n').filter(Boolean).join(', ') || '(empty subject)';
}

/** The SANs of a certificate: URIs first, then DNS names (node's subjectAltName text). */
export function identitiesOf(cert: X509Certificate): string[] {
  const text = cert.subjectAltName ?? '';
  const uris: string[] = [];
  const dns: string[] = [];
  // Entries are "TYPE:value", comma separated; a value with a comma is JSON-quoted.
  for (const m of text.matchAll(/(URI|DNS):("(?:[^"\\]|\\.)*"|[^,]*)/g)) {
    let value = m[2]!.trim();
    if (value.startsWith('"')) {
      try {
        value = JSON.parse(value) as string;
      } catch {
        continue;
      }
    }
    (m[1] === 'URI' ? uris : dns).push(value);
  }
  return [...uris, ...dns];
}

// --- A minimal DER reader, enough to find one extension of a certificate. ---

type Tlv = { tag: number; start: number; end: number };

function readTlv(der: Uint8Array, at: number): Tlv {
  if (at + 2 > der.length) throw new Error('truncated');
  const tag = der[at]!;
  let len = der[at + 1]!;
  let start = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4 || start + n > der.length) throw new Error('bad length');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + der[start + i]!;
    start += n;
  }
  if (start + len > der.length) throw new Error('truncated');
  return { tag, start, end: start + len };
}

function children(der: Uint8Array, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let at = parent.start; at < parent.end;) {
    const t = readTlv(der, at);
    out.push(t);
    at = t.end;
  }
  return out;
}

const KEY_USAGE_OID = [0x55, 0x1d, 0x0f]; // 2.5.29.15
const BASIC_CONSTRAINTS_OID = [0x55, 0x1d, 0x13]; // 2.5.29.19

/** The DER value (inside the OCTET STRING) of one extension, or undefined when absent. */
function extensionValue(
  cert: X509Certificate,
  oid: readonly number[],
): { der: Uint8Array; tlv: Tlv } | undefined {
  const der = new Uint8Array(cert.raw);
  const tbs = children(der, readTlv(der, 0))[0]!;
  // extensions [3] EXPLICIT Extensions (RFC 5280 section 4.1)
  const explicit = children(der, tbs).find((t) => t.tag === 0xa3);
  const list = explicit ? children(der, explicit)[0] : undefined;
  if (!list) return undefined;
  for (const ext of children(der, list)) {
    const [id, ...rest] = children(der, ext);
    if (!id || id.tag !== 0x06 || id.end - id.start !== oid.length) continue;
    if (!oid.every((b, i) => der[id.start + i] === b)) continue;
    const value = rest.find((t) => t.tag === 0x04);
    return value ? { der, tlv: readTlv(der, value.start) } : undefined;
  }
  return undefined;
}

/**
 * The key usage bits of a certificate (RFC 5280 section 4.2.1.3) as the first two bytes of the
 * BIT STRING, or undefined when the extension is absent.
 */
export function keyUsageBits(cert: X509Certificate): number | undefined {
  const ext = extensionValue(cert, KEY_USAGE_OID);
  if (!ext) return undefined;
  const { der, tlv } = ext;
  if (tlv.tag !== 0x03 || tlv.end - tlv.start < 2) return 0;
  const first = der[tlv.start + 1]!;
  const second = tlv.end - tlv.start > 2 ? der[tlv.start + 2]! : 0;
  return (first << 8) | second;
}

/** Whether basicConstraints says cA (RFC 5280 section 4.2.1.9). */
export function isCaCertificate(cert: X509Certificate): boolean {
  const ext = extensionValue(cert, BASIC_CONSTRAINTS_OID);
  if (!ext || ext.tlv.tag !== 0x30) return false;
  const first = children(ext.der, ext.tlv)[0];
  return !!first && first.tag === 0x01 && ext.der[first.start] !== 0;
}

/** digitalSignature is bit 0: the most significant bit of the first byte. */
const DIGITAL_SIGNATURE = 0x8000;

function selfSigned(cert: X509Certificate): boolean {
  return cert.checkIssued(cert) && cert.verify(cert.publicKey);
}

function issuedBy(cert: X509Certificate, issuer: X509Certificate): boolean {
  return cert.checkIssued(issuer) && cert.verify(issuer.publicKey);
}

function checkValidity(cert: X509Certificate, what: string, now: Date): void {
  if (now < cert.validFromDate) {
    throw new UserError(
      `${what} (${dn(cert.subject)}) is not valid before ${cert.validFromDate.toISOString()}`,
    );
  }
  if (now > cert.validToDate) {
    throw new UserError(`${what} (${dn(cert.subject)}) expired at ${cert.validToDate.toISOString()}`);
  }
}

/**
 * Checks a certificate signing key and returns what signing needs. `material` is the text of
 * the Secret's entries; `now` decides expiry.
 */
export function checkCertificateKey(
  material: { certificate: string; privateKey: string; ca?: string },
  now: Date,
): CheckedCertificate {
  const chain = parseCertificates(material.certificate, 'tls.crt');
  const leaf = chain[0]!;
  let privateKey: KeyObject;
  const keyText = material.privateKey.trim();
  if (!/-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----/.test(keyText))
    throw new UserError('tls.key does not hold a PEM private key');
  try {
    privateKey = createPrivateKey({ key: keyText, format: 'pem' });
  } catch {
    throw new UserError('tls.key cannot be read as a PEM private key (an encrypted key is not supported)');
  }
  if (!leaf.checkPrivateKey(privateKey)) {
    throw new UserError(
      `the private key in tls.key does not match the certificate in tls.crt (${dn(leaf.subject)}); a Secret caught mid-rotation, or entries from two different certificates`,
    );
  }
  if (isCaCertificate(leaf)) {
    throw new UserError(
      `the certificate in tls.crt (${dn(leaf.subject)}) is a CA certificate, not a signing certificate`,
    );
  }
  const usage = keyUsageBits(leaf);
  if (usage === undefined || (usage & DIGITAL_SIGNATURE) === 0) {
    throw new UserError(
      `the certificate in tls.crt (${dn(leaf.subject)}) ${usage === undefined ? 'has no key usage extension' : 'lacks the digital signature key usage'}; issue it with the "digital signature" usage (cert-manager: spec.usages)`,
    );
  }
  checkValidity(leaf, 'the certificate', now);
  for (let i = 1; i < chain.length; i++) {
    if (!issuedBy(chain[i - 1]!, chain[i]!)) {
      throw new UserError(
        `tls.crt: certificate ${i} (${dn(chain[i - 1]!.subject)}) is not issued by certificate ${i + 1} (${dn(chain[i]!.subject)}); the chain must be leaf first, each certificate followed by its issuer`,
      );
    }
    checkValidity(chain[i]!, `tls.crt: certificate ${i + 1}`, now);
  }
  let roots: X509Certificate[] = [];
  if (material.ca !== undefined && material.ca.trim() !== '') {
    roots = parseCertificates(material.ca, 'ca.crt');
    const top = chain[chain.length - 1]!;
    const anchored = roots.some((r) => r.fingerprint256 === top.fingerprint256 || issuedBy(top, r));
    if (!anchored) {
      throw new UserError(
        `the chain in tls.crt does not verify against ca.crt: ${dn(top.subject)} is not issued by ${roots.length === 1 ? dn(roots[0]!.subject) : `any of the ${roots.length} certificates in ca.crt`}`,
      );
    }
  }
  // x5c: the root is left out (a verifier must already trust it; RFC 5246 section 7.4.2 lets a
  // self-signed root be omitted). A lone self-signed leaf is kept: it is the signing certificate.
  const sent = chain.length > 1 && selfSigned(chain[chain.length - 1]!) ? chain.slice(0, -1) : chain;
  return {
    x5c: sent.map((c) => c.raw.toString('base64')),
    privateKey,
    anchors: roots.map((c) => c.raw.toString('base64')),
    facts: {
      subject: dn(leaf.subject),
      issuer: dn(leaf.issuer),
      identities: identitiesOf(leaf),
      notBefore: leaf.validFromDate.toISOString(),
      notAfter: leaf.validToDate.toISOString(),
      serialNumber: leaf.serialNumber,
    },
  };
}

/**
 * When an expiry warning is due: min(7 days, one sixth of the certificate's lifetime) before
 * notAfter. cert-manager renews at two thirds of the lifetime by default (one third left), so a
 * certificate it manages is renewed well before the warning; one that reaches it is not being
 * renewed. Short-lived certificates (an hour) are warned about minutes before expiry, not always.
 */
export function expiryWarningAt(facts: Pick<CertificateFacts, 'notBefore' | 'notAfter'>): Date {
  const notBefore = Date.parse(facts.notBefore);
  const notAfter = Date.parse(facts.notAfter);
  const lead = Math.min(7 * 24 * 3600_000, Math.max(0, notAfter - notBefore) / 6);
  return new Date(notAfter - lead);
}
