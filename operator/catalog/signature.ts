/**
 * Catalog-level signatures (AI Catalog spec, top-level `signature` and "Trust Manifest
 * Signatures"): a detached JWS (RFC 7515 appendix F) in compact serialization,
 * `<protected>..<signature>`, over the RFC 8785 canonical form of the catalog without its
 * `signature` member. The payload is built, signed and checked by the card engine's JCS and JWS
 * code (operator/card), so a catalog and a card are signed the same way, with the same keys and
 * the same algorithm allowlist (no `none`, no MAC: spec "Signature Algorithms").
 *
 * Verification uses only keys the caller trusts; a `jku` in the header is followed only through
 * `opts.resolveJku` (spec "Trust Anchoring": the catalog cannot name its own trust anchor).
 */
import { UserError } from '../errors.ts';
import { canonicalWithout } from '../card/jcs.ts';
import { signDetached, type SigningKey } from '../card/sign.ts';
import { verifyDetached, type JWKS, type VerifyOptions, type VerifyResult } from '../card/verify.ts';

const SIGNATURE_MEMBER = 'signature';

/** The signed payload of a catalog: its JCS form without `signature`. */
export function catalogPayload(catalog: Record<string, unknown>): string {
  return canonicalWithout(catalog, SIGNATURE_MEMBER);
}

/** Returns a copy of the catalog with `signature` set (an existing one is replaced). */
export async function signCatalog(
  catalog: Record<string, unknown>,
  key: SigningKey,
  opts: { jku?: string } = {},
): Promise<Record<string, unknown>> {
  if (opts.jku !== undefined && !/^https:\/\/[^\s]+$/.test(opts.jku))
    throw new UserError('jku must be an https URL');
  const { [SIGNATURE_MEMBER]: _old, ...unsigned } = catalog;
  const jws = await signDetached(catalogPayload(unsigned), key, opts.jku);
  return { ...unsigned, [SIGNATURE_MEMBER]: `${jws.protected}..${jws.signature}` };
}

/**
 * Splits a compact detached JWS into its protected header and signature; undefined when the text
 * is not `<header>..<signature>` (an attached payload is refused: the payload is the catalog).
 */
export function parseCompactDetached(jws: string): { protected: string; signature: string } | undefined {
  const parts = jws.split('.');
  if (parts.length !== 3 || parts[1] !== '' || !parts[0] || !parts[2]) return undefined;
  return { protected: parts[0], signature: parts[2] };
}

/** Verifies a catalog's `signature` against trusted keys; the result has the shape of verifyCard's. */
export async function verifyCatalog(
  catalog: unknown,
  jwks: JWKS,
  opts: VerifyOptions = {},
): Promise<VerifyResult> {
  if (!catalog || typeof catalog !== 'object' || Array.isArray(catalog)) {
    return { verified: false, results: [{ ok: false, error: 'the catalog is not a JSON object' }] };
  }
  const doc = catalog as Record<string, unknown>;
  const signature = doc[SIGNATURE_MEMBER];
  if (signature === undefined)
    return { verified: false, results: [{ ok: false, error: 'the catalog is not signed' }] };
  if (typeof signature !== 'string') {
    return { verified: false, results: [{ ok: false, error: 'the catalog signature is not a string' }] };
  }
  const parts = parseCompactDetached(signature);
  if (!parts) {
    return {
      verified: false,
      results: [
        { ok: false, error: 'the catalog signature is not a detached compact JWS (<header>..<signature>)' },
      ],
    };
  }
  let payload: string;
  try {
    payload = catalogPayload(doc);
  } catch (err) {
    return {
      verified: false,
      results: [{ ok: false, error: err instanceof Error ? err.message : String(err) }],
    };
  }
  const result = await verifyDetached(parts, payload, jwks, opts);
  return result.ok
    ? {
        verified: true,
        ...(result.kid ? { kid: result.kid } : {}),
        ...(result.identity ? { identity: result.identity } : {}),
        results: [result],
      }
    : { verified: false, results: [result] };
}
