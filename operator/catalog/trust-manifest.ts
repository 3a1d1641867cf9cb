/**
 * Trust Manifests of a catalog's entries (AI Catalog spec, "Trust Manifest"): next to each A2A
 * card entry, the catalog publisher states who it is (`identity`) and binds the statement to the
 * card it lists (`subject`: the entry's identifier, type, version and url, and the digest of the
 * card bytes served there, or of the JCS form of inline `data`), signed as the spec's "Trust
 * Manifest Signatures" say: a detached compact JWS over the RFC 8785 form of the manifest without
 * `signature`, by the catalog's signing key (the same algorithm allowlist as every signature here).
 *
 * The identity is one the signature proves (spec "Key Resolution"):
 * - a certificate signing key: the leaf certificate's URI SAN (a SPIFFE ID); the JWS carries the
 *   chain in `x5c`, so a verifier takes the key from the leaf it validated;
 * - a JWKS key with `spec.signing.jku`: that https URL (an HTTPS URL identity resolves to the JWK
 *   Set at the URL, the key chosen by `kid`).
 * Without either, the catalog has no identity a verifier could check, and no manifest is written
 * (an identity alone is not substantive, spec "Manifest Validity").
 *
 * The spec makes consumers reject a manifest whose identity's domain does not align with the
 * `urn:air` publisher domain of the entry: manifests are written only when the identity's domain
 * (SPIFFE trust domain, URL host) is `spec.publisher` or below it.
 *
 * Pure, apart from the signing and verifying primitives of ../card.
 */
import { createHash } from 'node:crypto';
import { canonicalJson, canonicalWithout } from '../card/jcs.ts';
import { publicJwks, signDetached, type SigningKey } from '../card/sign.ts';
import { verifyDetached, type JWKS, type VerifyOptions } from '../card/verify.ts';
import { describeError } from '../errors.ts';
import { isAgentCardEntry, type CatalogEntry, type TrustManifest, type TrustSubject } from './document.ts';
import type { BuiltEntry } from './entries.ts';
import { publishedEntries } from './build.ts';
import { parseCompactDetached } from './signature.ts';

export interface PublisherIdentity {
  identity: string;
  /** The spec's type hint ("spiffe", "url"). */
  identityType: 'spiffe' | 'url';
}

/** The identity a catalog's signatures prove, or undefined when they prove none. */
export function publisherIdentity(key: SigningKey | undefined, jku?: string): PublisherIdentity | undefined {
  if (!key) return undefined;
  if (key.certificate) {
    const uri = key.certificate.identities.find((i) => /^[a-z][a-z0-9+.-]*:\/\//i.test(i));
    if (!uri) return undefined;
    return { identity: uri, identityType: uri.startsWith('spiffe://') ? 'spiffe' : 'url' };
  }
  return jku ? { identity: jku, identityType: 'url' } : undefined;
}

/** The domain of an identity: a SPIFFE trust domain or a URL host (lower case). */
export function identityDomain(identity: string): string | undefined {
  try {
    const host = new URL(identity).hostname.toLowerCase();
    return host || undefined;
  } catch {
    return undefined;
  }
}

/** The publisher domain of a `urn:air:{publisher}:{namespace}:{name}` identifier. */
export function urnPublisher(identifier: string): string | undefined {
  const m = /^urn:air:([^:]+):/i.exec(identifier);
  return m ? m[1]!.toLowerCase() : undefined;
}

/** Whether an identity's domain is the publisher domain or one below it (spec "Identity"). */
export function identityAligns(identity: string, publisher: string): boolean {
  const domain = identityDomain(identity);
  const p = publisher.toLowerCase();
  return domain !== undefined && (domain === p || domain.endsWith(`.${p}`));
}

/** `sha256:<hex>` of text (UTF-8 bytes, as served). */
export const sha256Digest = (text: string) =>
  `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;

/** The subject that binds a manifest to an entry and its artifact (spec "Subject Binding"). */
export function manifestSubject(
  entry: CatalogEntry,
  servedText: string | undefined,
): TrustSubject | undefined {
  let digest: string;
  if (entry.data !== undefined) digest = sha256Digest(canonicalJson(entry.data));
  else if (servedText !== undefined) digest = sha256Digest(servedText);
  else return undefined;
  return {
    identifier: entry.identifier,
    type: entry.type,
    digest,
    ...(entry.version !== undefined ? { version: entry.version } : {}),
    ...(entry.url !== undefined ? { url: entry.url } : {}),
  };
}

/** The signed payload of a manifest: its JCS form without `signature`. */
export const manifestPayload = (manifest: Record<string, unknown>) => canonicalWithout(manifest, 'signature');

const headerOf = (jws: string): Record<string, unknown> | undefined => {
  const parts = parseCompactDetached(jws);
  if (!parts) return undefined;
  try {
    return JSON.parse(Buffer.from(parts.protected, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
};

const sameX5c = (a: unknown, b: readonly string[] | undefined) =>
  JSON.stringify(a ?? null) === JSON.stringify(b ? [...b] : null);

export interface ManifestInput {
  key: SigningKey;
  publisher: PublisherIdentity;
  jku?: string;
  /** RFC 3339 (whole seconds): issuedAt of a new manifest. */
  now: string;
  /** The card bytes served at each url entry, by identifier. */
  served: ReadonlyMap<string, string>;
  /** The manifests published before, by identifier: kept (bytes and issuedAt) while still true. */
  previous: ReadonlyMap<string, TrustManifest>;
}

/**
 * The entry with its signed Trust Manifest (A2A card entries whose artifact is known), or the
 * entry as it was. A previous manifest is kept while it states the same thing with the same key:
 * ES256 signatures are randomized, and a new one on each reconcile would rewrite the catalog.
 */
export async function withTrustManifest(entry: CatalogEntry, input: ManifestInput): Promise<CatalogEntry> {
  if (!isAgentCardEntry(entry)) return entry;
  const subject = manifestSubject(entry, input.served.get(entry.identifier));
  if (!subject) return entry;
  const { trustManifest: _old, ...bare } = entry;
  const unsigned = (issuedAt: string): TrustManifest => ({
    identity: input.publisher.identity,
    identityType: input.publisher.identityType,
    subject,
    issuedAt,
  });
  const prev = input.previous.get(entry.identifier);
  if (prev?.signature && prev.issuedAt) {
    const header = headerOf(prev.signature);
    const same =
      header &&
      header.kid === input.key.kid &&
      header.alg === input.key.alg &&
      header.jku === input.jku &&
      sameX5c(header.x5c, input.key.x5c) &&
      manifestPayload(prev) === manifestPayload(unsigned(prev.issuedAt));
    // Kept only if it still verifies with this key: a manifest edited in the ConfigMap is replaced.
    if (same) {
      const parts = parseCompactDetached(prev.signature)!;
      const check = await verifyDetached(parts, manifestPayload(prev), publicJwks([input.key]));
      if (check.ok) return { ...bare, trustManifest: prev };
    }
  }
  const manifest = unsigned(input.now);
  const jws = await signDetached(manifestPayload(manifest), input.key, input.jku);
  return { ...bare, trustManifest: { ...manifest, signature: `${jws.protected}..${jws.signature}` } };
}

/** The Trust Manifests of published catalog documents, by entry identifier (bad documents give none). */
export function previousManifests(documents: Iterable<string | undefined>): Map<string, TrustManifest> {
  const out = new Map<string, TrustManifest>();
  for (const e of publishedEntries(documents)) {
    const m = e?.trustManifest;
    if (m && typeof m === 'object' && typeof e.identifier === 'string') out.set(e.identifier, m);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Verification (the consumer side: agentcard discover)

export type ManifestVerdict =
  | { ok: true; identity: string; kid?: string; message: string }
  | { ok: false; invalid: boolean; message: string };

/** Digest algorithms accepted: SHA-256 or stronger (spec "Digest Format"). */
const DIGESTS: Record<string, string> = { sha256: 'sha256', sha384: 'sha384', sha512: 'sha512' };

/**
 * Verifies an entry's Trust Manifest (spec "Verifying Artifact Integrity"): the signature with a
 * trusted key; the identity is the one the signature proves (the certificate's identity for an
 * x5c chain; for a JWKS key, an https URL identity that is the header's jku when there is one); it
 * aligns with the entry's urn:air publisher; the subject matches the entry; the artifact (the
 * bytes fetched from the entry's url, or the entry's data) matches the digest.
 * `invalid` marks a manifest that contradicts its entry or artifact (changed after signing).
 */
export async function verifyTrustManifest(
  entry: CatalogEntry,
  artifactText: string | undefined,
  jwks: JWKS,
  opts: VerifyOptions & { now?: Date } = {},
): Promise<ManifestVerdict> {
  const m = entry.trustManifest;
  const bad = (message: string): ManifestVerdict => ({ ok: false, invalid: true, message });
  if (!m) return { ok: false, invalid: false, message: 'the entry has no trust manifest' };
  if (!m.signature) return { ok: false, invalid: false, message: 'the trust manifest is not signed' };
  if (!m.subject || !m.issuedAt) return bad('a signed trust manifest needs subject and issuedAt');
  const parts = parseCompactDetached(m.signature);
  if (!parts)
    return bad('the trust manifest signature is not a detached compact JWS (<header>..<signature>)');
  let payload: string;
  try {
    payload = manifestPayload(m);
  } catch (err) {
    return bad(describeError(err));
  }
  const result = await verifyDetached(parts, payload, jwks, opts);
  if (!result.ok) {
    const why = `${result.kid ? `kid ${result.kid}: ` : ''}${result.error ?? 'not verified'}`;
    return { ok: false, invalid: result.error === 'signature does not match', message: `signature: ${why}` };
  }
  // The identity must be what the signature proves, not just what the manifest claims.
  if (result.identity !== undefined) {
    if (result.identity !== m.identity)
      return bad(
        `the manifest names identity ${m.identity}, but its signing certificate is ${result.identity}`,
      );
  } else {
    const jku = headerOf(m.signature)?.jku;
    if (!/^https:\/\//i.test(m.identity))
      return {
        ok: false,
        invalid: false,
        message: `identity ${m.identity} is not proven by a trusted JWKS key (kid ${result.kid}); a ${m.identity.split(':')[0]} identity needs a certificate chain (--trust-bundle and --identity)`,
      };
    if (jku !== undefined && jku !== m.identity)
      return bad(`the manifest names identity ${m.identity}, but its signature's jku is ${String(jku)}`);
  }
  const publisher = urnPublisher(entry.identifier);
  if (publisher && !identityAligns(m.identity, publisher))
    return bad(`identity ${m.identity} does not align with the entry's publisher domain ${publisher}`);
  const s = m.subject;
  if (s.identifier !== entry.identifier)
    return bad(`subject.identifier ${s.identifier} is not the entry's ${entry.identifier}`);
  if (s.type !== entry.type) return bad(`subject.type ${s.type} is not the entry's ${entry.type}`);
  if (s.version !== entry.version)
    return bad(`subject.version ${s.version ?? '(none)'} is not the entry's ${entry.version ?? '(none)'}`);
  if (s.url !== undefined && s.url !== entry.url)
    return bad(`subject.url ${s.url} is not the entry's ${entry.url ?? '(none)'}`);
  if (m.expiresAt && Date.parse(m.expiresAt) < (opts.now ?? new Date()).getTime())
    return bad(`the trust manifest expired at ${m.expiresAt}`);
  const [alg, hex] = s.digest.split(':') as [string, string];
  const hash = DIGESTS[alg];
  if (!hash) return bad(`subject.digest uses ${alg}; SHA-256 or stronger is required`);
  const artifact = entry.data !== undefined ? canonicalJson(entry.data) : artifactText;
  if (artifact === undefined) return { ok: false, invalid: false, message: 'the artifact was not fetched' };
  const actual = createHash(hash).update(artifact, 'utf8').digest('hex');
  if (actual !== hex)
    return bad(
      `the ${entry.data !== undefined ? 'inline card' : 'card served at the url'} does not match subject.digest`,
    );
  return {
    ok: true,
    identity: m.identity,
    ...(result.kid ? { kid: result.kid } : {}),
    message: `trust manifest verified: identity ${m.identity}${result.identity ? ' (its signing certificate)' : ` (kid ${result.kid})`}`,
  };
}

export interface CatalogManifests {
  entries: BuiltEntry[];
  /** Why the entries carry no manifest although the catalog is signed (for status), if so. */
  note?: string;
}

/**
 * The entries of a signed catalog with their Trust Manifests. `served` maps an entry identifier
 * to the card text published for it; `previousDocs` are the catalog documents published before.
 */
export async function addTrustManifests(
  entries: BuiltEntry[],
  opts: {
    key: SigningKey | undefined;
    jku?: string;
    publisher: string;
    served: ReadonlyMap<string, string>;
    previousDocs: Iterable<string | undefined>;
    now: string;
  },
): Promise<CatalogManifests> {
  if (!opts.key) return { entries };
  const publisher = publisherIdentity(opts.key, opts.jku);
  if (!publisher)
    return {
      entries,
      note: 'no trust manifests: the signing key proves no identity (sign with a certificate, or set signing.jku)',
    };
  if (!identityAligns(publisher.identity, opts.publisher))
    return {
      entries,
      note: `no trust manifests: the signing identity ${publisher.identity} is not in the publisher domain ${opts.publisher} (spec.publisher), so consumers would reject them`,
    };
  const input: ManifestInput = {
    key: opts.key,
    publisher,
    ...(opts.jku ? { jku: opts.jku } : {}),
    now: opts.now,
    served: opts.served,
    previous: previousManifests(opts.previousDocs),
  };
  const out: BuiltEntry[] = [];
  for (const b of entries) out.push({ ...b, entry: await withTrustManifest(b.entry, input) });
  return { entries: out };
}
