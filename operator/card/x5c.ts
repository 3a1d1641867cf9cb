/**
 * Trust in a signer's certificate chain instead of one key per agent: a JWS may carry its
 * signing certificate in the `x5c` protected header (RFC 7515 section 4.1.6: standard base64 DER,
 * leaf first, each certificate certified by the next; the root may be left out), and the signer's
 * workload identity is the leaf's URI subjectAltName, as in a SPIFFE X509-SVID (SPIFFE X509-SVID
 * specification, sections 2 and 4). A signature is trusted when:
 *
 * - the chain validates to a certificate of the trust bundle (RFC 5280 section 6, simplified: each
 *   certificate is signed by the next, every issuer is a CA allowed to sign certificates within
 *   its path length, no critical extension this code does not understand, every certificate
 *   valid at the current time give or take CLOCK_SKEW_MS);
 * - the leaf is an end-entity certificate whose KeyUsage allows digitalSignature (X509-SVID
 *   section 4.3 requires it of a leaf SVID; a leaf without KeyUsage is refused, not assumed to
 *   allow everything);
 * - the chain has at most MAX_CHAIN_LENGTH certificates;
 * - the leaf has exactly one URI SAN (X509-SVID section 2), and it matches an identity pattern.
 *
 * Name constraints and revocation are not evaluated: a chain whose CA marks name constraints (or
 * any other extension it does not understand) critical is refused instead. SVIDs are short-lived,
 * which is SPIFFE's answer to revocation. Pure: node:crypto X509Certificate, no I/O.
 */
import { X509Certificate, type KeyObject } from 'node:crypto';
import { certificateExtensions, OID, type CertificateExtensions } from './x509-extensions.ts';

/** How far a certificate's validity may be off the verifier's clock (both ends). */
export const CLOCK_SKEW_MS = 60_000;
/** Certificates an x5c header may carry: a leaf and up to three intermediates (and the root). */
export const MAX_CHAIN_LENGTH = 5;

export interface CertificateTrust {
  /** The trust bundle's certificates (trust anchors). */
  roots: readonly X509Certificate[];
  /** Identity patterns (parseIdentityPattern); a leaf's identity must match one. */
  identities: readonly string[];
  /** The verifier's clock (tests pin it). */
  now?: () => Date;
}

export type ChainResult =
  { ok: true; key: KeyObject; identity: string; leaf: X509Certificate } | { ok: false; error: string };

/** The extensions this code evaluates (or may safely ignore): a critical one outside is refused. */
const UNDERSTOOD = new Set<string>(Object.values(OID));

const PEM_CERT = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+)-----END CERTIFICATE-----/g;

/** The certificates of a PEM trust bundle (as trust-manager or cert-manager writes it). */
export function parseTrustBundle(pem: string, source: string): X509Certificate[] {
  const certs: X509Certificate[] = [];
  for (const match of pem.matchAll(PEM_CERT)) {
    try {
      certs.push(new X509Certificate(Buffer.from(match[1]!.replace(/\s+/g, ''), 'base64')));
    } catch {
      throw new Error(
        `${source}: certificate ${certs.length + 1} of the bundle is not a valid X.509 certificate`,
      );
    }
  }
  if (certs.length === 0)
    throw new Error(`${source}: no PEM certificate (-----BEGIN CERTIFICATE-----) in it`);
  return certs;
}

const SEGMENT = /^[A-Za-z0-9._-]+$/;
const TRUST_DOMAIN = /^[a-z0-9._-]+$/;

/**
 * Why a URI is not an identity this verifier accepts, or undefined. SPIFFE IDs follow the SPIFFE
 * ID specification section 2 (lowercase trust domain; path segments of letters, digits, `.`, `-`,
 * `_`; no empty, `.` or `..` segment; no query or fragment); other URIs get the same path rules, so
 * a prefix pattern cannot be escaped with `..` or percent-encoding.
 */
export function identityProblem(uri: string): string | undefined {
  const m = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)(\/[^?#]*)?$/i.exec(uri);
  if (!m) return 'is not an absolute URI of the form scheme://authority/path (no query or fragment)';
  const [, scheme, authority, path = ''] = m;
  if (!authority) return 'has no authority (trust domain)';
  if (scheme!.toLowerCase() === 'spiffe') {
    if (scheme !== 'spiffe') return 'must use the lowercase scheme spiffe://';
    if (!TRUST_DOMAIN.test(authority)) return `has an invalid trust domain '${authority}'`;
  }
  if (path === '' || path === '/') return path === '/' ? 'ends with /' : undefined;
  for (const segment of path.slice(1).split('/')) {
    if (segment === '') return 'has an empty path segment';
    if (segment === '.' || segment === '..') return 'has a . or .. path segment';
    if (!SEGMENT.test(segment))
      return `has a path segment '${segment}' with characters other than letters, digits, '.', '-', '_'`;
  }
  return undefined;
}

/**
 * Checks an identity pattern: an exact identity, or one whose last path segment is `*`, which
 * matches one or more further segments (`spiffe://example.org/ns/team-a/*` matches
 * `spiffe://example.org/ns/team-a/sa/agent`, not `spiffe://example.org/ns/team-b/sa/agent`).
 */
export function parseIdentityPattern(pattern: string): string {
  const wildcard = pattern.endsWith('/*');
  const base = wildcard ? pattern.slice(0, -2) : pattern;
  if (base.includes('*'))
    throw new Error(
      `identity pattern '${pattern}': '*' is only allowed as the whole last path segment (…/*)`,
    );
  const problem = identityProblem(base);
  if (problem) throw new Error(`identity pattern '${pattern}' ${problem}`);
  return pattern;
}

export function identityMatches(pattern: string, identity: string): boolean {
  if (!pattern.endsWith('/*')) return pattern === identity;
  const prefix = pattern.slice(0, -1); // keeps the trailing '/'
  return identity.length > prefix.length && identity.startsWith(prefix);
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function describeCert(cert: X509Certificate, index: number): string {
  const role = index === 0 ? 'leaf' : `x5c[${index}]`;
  const cn = /(?:^|\n)CN=([^\n]*)/.exec(cert.subject ?? '')?.[1];
  return cn ? `${role} (CN=${cn})` : role;
}

function timeProblem(cert: X509Certificate, what: string, now: Date): string | undefined {
  const t = now.getTime();
  if (cert.validFromDate.getTime() - CLOCK_SKEW_MS > t)
    return `${what} is not valid before ${cert.validFromDate.toISOString()}`;
  if (cert.validToDate.getTime() + CLOCK_SKEW_MS < t)
    return `${what} expired at ${cert.validToDate.toISOString()}`;
  return undefined;
}

/** Whether `issuer` signed `cert` (names match and the signature verifies). */
function issuedBy(cert: X509Certificate, issuer: X509Certificate): boolean {
  try {
    return cert.checkIssued(issuer) && cert.verify(issuer.publicKey);
  } catch {
    return false;
  }
}

/** Validates an x5c header value against the trust; on success, the leaf's key and identity. */
export function validateChain(x5c: unknown, trust: CertificateTrust): ChainResult {
  if (!Array.isArray(x5c) || x5c.length === 0) return { ok: false, error: 'x5c is not a non-empty array' };
  if (x5c.length > MAX_CHAIN_LENGTH) {
    return {
      ok: false,
      error: `x5c has ${x5c.length} certificates; at most ${MAX_CHAIN_LENGTH} are accepted (a leaf and its intermediates)`,
    };
  }
  const chain: X509Certificate[] = [];
  const exts: CertificateExtensions[] = [];
  for (const [i, entry] of x5c.entries()) {
    if (typeof entry !== 'string' || !BASE64.test(entry))
      return { ok: false, error: `x5c[${i}] is not a base64 string (RFC 7515 section 4.1.6)` };
    try {
      const der = Buffer.from(entry, 'base64');
      chain.push(new X509Certificate(der));
      exts.push(certificateExtensions(der));
    } catch {
      return { ok: false, error: `x5c[${i}] is not a DER X.509 certificate` };
    }
  }
  const now = (trust.now ?? (() => new Date()))();
  const isRoot = (c: X509Certificate) => trust.roots.some((r) => r.fingerprint256 === c.fingerprint256);

  // Walk up from the leaf: each certificate signed by the next, until a trust anchor.
  let anchor: { cert: X509Certificate; index: number } | undefined;
  for (let i = 0; i < chain.length && !anchor; i++) {
    const cert = chain[i]!;
    const what = describeCert(cert, i);
    const time = timeProblem(cert, what, now);
    if (time) return { ok: false, error: time };
    const critical = exts[i]!.critical.find((oid) => !UNDERSTOOD.has(oid));
    if (critical)
      return {
        ok: false,
        error: `${what} has a critical extension ${critical} this verifier does not evaluate`,
      };
    if (i > 0 && isRoot(cert)) {
      anchor = { cert, index: i };
      break;
    }
    const next = chain[i + 1];
    if (next) {
      if (!issuedBy(cert, next))
        return {
          ok: false,
          error: `${what} is not signed by ${describeCert(next, i + 1)}: the chain is broken`,
        };
      const problem = issuerProblem(next, exts[i + 1]!, describeCert(next, i + 1), i);
      if (problem) return { ok: false, error: problem };
      continue;
    }
    const root = trust.roots.find((r) => issuedBy(cert, r));
    if (!root) {
      return {
        ok: false,
        error: `${what} is not issued by a certificate of the trust bundle (issuer ${(cert.issuer ?? '').replace(/\n/g, ', ') || 'an empty name'})`,
      };
    }
    let rootExts: CertificateExtensions;
    try {
      rootExts = certificateExtensions(root.raw);
    } catch {
      return { ok: false, error: 'a trust bundle certificate cannot be read' };
    }
    const problem =
      timeProblem(
        root,
        `the trust bundle's root (${(root.subject ?? '').replace(/\n/g, ', ') || 'an empty subject'})`,
        now,
      ) ?? issuerProblem(root, rootExts, 'the trust bundle root', i);
    if (problem) return { ok: false, error: problem };
    anchor = { cert: root, index: i + 1 };
  }
  if (!anchor) return { ok: false, error: 'the chain does not lead to a certificate of the trust bundle' };

  const leaf = chain[0]!;
  const leafExts = exts[0]!;
  if (isRoot(leaf))
    return { ok: false, error: 'the leaf is itself a trust anchor; sign with an end-entity certificate' };
  if (leafExts.ca)
    return {
      ok: false,
      error:
        'the leaf is a CA certificate; a signing certificate must be an end-entity one (X509-SVID section 4.1)',
    };
  if (!leafExts.keyUsage)
    return {
      ok: false,
      error: 'the leaf has no KeyUsage extension; it must allow digitalSignature (X509-SVID section 4.3)',
    };
  if (!leafExts.keyUsage.has('digitalSignature'))
    return { ok: false, error: 'the leaf KeyUsage does not allow digitalSignature' };
  if (leafExts.uris.length !== 1) {
    return {
      ok: false,
      error: `the leaf has ${leafExts.uris.length} URI SANs; its identity must be exactly one (X509-SVID section 2)`,
    };
  }
  const identity = leafExts.uris[0]!;
  const problem = identityProblem(identity);
  if (problem)
    return { ok: false, error: `the leaf identity ${JSON.stringify(identity.slice(0, 200))} ${problem}` };
  if (!trust.identities.some((p) => identityMatches(p, identity))) {
    return {
      ok: false,
      error: `the leaf identity ${identity} matches none of the trusted identities (${trust.identities.join(', ') || 'none given'})`,
    };
  }
  return { ok: true, key: leaf.publicKey, identity, leaf };
}

/** Why `issuer` may not certify what is below it (`below` intermediates sit under it), or undefined. */
function issuerProblem(
  issuer: X509Certificate,
  ext: CertificateExtensions,
  what: string,
  below: number,
): string | undefined {
  if (!ext.ca) return `${what} is not a CA certificate (basicConstraints cA is not true)`;
  if (ext.keyUsage && !ext.keyUsage.has('keyCertSign')) return `${what} KeyUsage does not allow keyCertSign`;
  if (ext.pathLength !== undefined && below > ext.pathLength)
    return `${what} allows ${ext.pathLength} intermediate(s) below it (pathLenConstraint), the chain has ${below}`;
  return undefined;
}
