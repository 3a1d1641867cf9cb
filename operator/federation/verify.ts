/**
 * What an import trusts (spec.trust and spec.catalogSignature), applied to one remote document at
 * a time: the catalog's own signature, an entry's Trust Manifest, a card. Each verdict is either
 * what verified (the signer) or a refusal reason of operator/api/reasons.ts with a message that
 * says why. Only the keys of the trust policy count: a `jku` in a header is never followed (AI
 * Catalog spec "Trust Anchoring": a document cannot name its own trust anchor). No I/O.
 */
import type { ImportFetchedReason, ImportRefusalReason } from '../api/reasons.ts';
import type { CatalogEntry } from '../catalog/document.ts';
import { verifyCatalog } from '../catalog/signature.ts';
import { verifyTrustManifest } from '../catalog/trust-manifest.ts';
import type { LoadedTrust } from '../catalog/trust.ts';
import { cardProblems, checkSignatures, notVerified } from '../discover/check.ts';
import type { Trust } from '../discover/trust.ts';
import type { SignatureResult } from '../card/verify.ts';
import { formatProblem } from '../card/problem.ts';
import type { CatalogSignaturePolicy } from './resource.ts';

/** The discover checks' view of an import's trust: its keys and bundle, no jku ever followed. */
export function discoverTrust(trust: LoadedTrust): Trust {
  return {
    jwks: trust.jwks,
    ...(trust.options.certificates ? { certificates: trust.options.certificates } : {}),
    trustJku: false,
    fetchJwks: () => Promise.reject(new Error('jku is not followed by imports')),
  };
}

export type Refusal = { reason: ImportRefusalReason; message: string };
export type CardVerdict = ({ ok: true; signer: string } | ({ ok: false } & Refusal)) & {};

/** A chain that validated but whose leaf identity is not one of spec.trust.identities. */
const IDENTITY_NOT_ALLOWED = /matches none of the trusted identities/;

function untrustedReason(results: readonly SignatureResult[]): ImportRefusalReason {
  return results.some((r) => r.error !== undefined && IDENTITY_NOT_ALLOWED.test(r.error))
    ? 'IdentityNotAllowed'
    : 'SignerNotTrusted';
}

const short = (text: string, max = 400) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/**
 * Verifies a card (the parsed JSON of its bytes): a valid A2A card, with a signature that verifies
 * against the trust policy. `source` is where it came from (messages only).
 */
export async function verifyImportedCard(
  card: unknown,
  source: string,
  trust: LoadedTrust,
): Promise<CardVerdict> {
  const errors = cardProblems(card).filter((p) => p.severity === 'error');
  if (errors.length > 0) {
    const shown = errors.slice(0, 3).map(formatProblem).join('; ');
    return { ok: false, reason: 'Invalid', message: short(`not a valid A2A card: ${shown}`) };
  }
  const report = await checkSignatures(card, source, discoverTrust(trust));
  switch (report.status) {
    case 'verified':
      return { ok: true, signer: report.identity ?? `kid ${report.kid ?? '(none)'}` };
    case 'unsigned':
      return { ok: false, reason: 'Unsigned', message: 'the card has no signatures' };
    case 'invalid':
      return { ok: false, reason: 'SignatureInvalid', message: short(report.message) };
    default:
      return { ok: false, reason: untrustedReason(report.results), message: short(report.message) };
  }
}

/**
 * The verdict on an entry's Trust Manifest (AI Catalog spec "Verifying Artifact Integrity"): one
 * that contradicts its entry or card (changed after signing, another digest, expired) refuses
 * the entry; one signed by a key outside the trust policy says nothing either way (the card's own
 * signature decides); one that verifies names the catalog publisher's identity.
 */
export async function checkManifest(
  entry: CatalogEntry,
  cardText: string | undefined,
  trust: LoadedTrust,
): Promise<{ ok: true; identity?: string } | ({ ok: false } & Refusal)> {
  if (!entry.trustManifest) return { ok: true };
  const verdict = await verifyTrustManifest(entry, cardText, trust.jwks, trust.options);
  if (verdict.ok) return { ok: true, identity: verdict.identity };
  if (verdict.invalid)
    return { ok: false, reason: 'ManifestInvalid', message: short(`trust manifest: ${verdict.message}`) };
  return { ok: true };
}

export type CatalogSignatureVerdict =
  | { ok: true; signer?: string }
  | {
      ok: false;
      reason: Extract<ImportFetchedReason, 'CatalogUnsigned' | 'CatalogSignatureInvalid'>;
      message: string;
    };

/** Checks a catalog's own signature as spec.catalogSignature asks. */
export async function checkCatalogSignature(
  catalog: Record<string, unknown>,
  policy: CatalogSignaturePolicy,
  trust: LoadedTrust,
): Promise<CatalogSignatureVerdict> {
  if (policy === 'Ignore') return { ok: true };
  if (catalog.signature === undefined) {
    return policy === 'Required'
      ? {
          ok: false,
          reason: 'CatalogUnsigned',
          message: 'the catalog is not signed, and spec.catalogSignature is Required',
        }
      : { ok: true };
  }
  const result = await verifyCatalog(catalog, trust.jwks, trust.options);
  if (result.verified) return { ok: true, signer: result.identity ?? `kid ${result.kid ?? '(none)'}` };
  const report = notVerified(result.results, 'catalog');
  return {
    ok: false,
    reason: 'CatalogSignatureInvalid',
    message: short(`catalog signature: ${report.message}`),
  };
}
