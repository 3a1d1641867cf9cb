/**
 * Checking one discovered card: the card engine's validation (schema, lint, credentials) and
 * signature verification against the keys the user trusts, summed up in a report a table or
 * JSON can show. Members this code does not know are warnings here, not errors: a client must
 * tolerate a newer card (they stay covered by the signature, see jcs.ts).
 */
import { defaultsOmittedPayload } from '../card/jcs.ts';
import type { Problem } from '../card/problem.ts';
import { validateCard } from '../card/validate.ts';
import { type SignatureResult, verifyCard, verifyDetached } from '../card/verify.ts';
import { type Trust, verifyOptions } from './trust.ts';

export type SignatureStatus = 'verified' | 'unsigned' | 'untrusted' | 'invalid';

export interface SignatureReport {
  status: SignatureStatus;
  /** The kid that verified. */
  kid?: string;
  /** The signer's identity, when a certificate chain (x5c) verified it. */
  identity?: string;
  /**
   * How the payload was read: `jcs` is A2A spec section 8.4.1 (the card as received, without
   * `signatures`); `defaults-omitted` is the protobuf-JSON reading some SDKs sign (see jcs.ts).
   */
  canonicalization?: 'jcs' | 'defaults-omitted';
  /** One line: what verified, or why nothing did. */
  message: string;
  results: SignatureResult[];
}

const MISMATCH = 'signature does not match';

/** Who signed, for a message: the identity of a chain, else the kid. */
export function signerOf(r: { kid?: string; identity?: string }): string {
  return r.identity ? `identity ${r.identity}${r.kid ? ` (kid ${r.kid})` : ''}` : `kid ${r.kid}`;
}

function describeResults(results: SignatureResult[]): string {
  return results
    .map(
      (r) =>
        `${r.identity ? `identity ${r.identity}` : r.kid ? `kid ${r.kid}` : 'a signature'}: ${r.error ?? 'not verified'}`,
    )
    .join('; ');
}

/**
 * The report of a document (card or catalog) that no trusted signature verified: `invalid` when a
 * trusted key's signature does not match (changed after signing), `untrusted` otherwise.
 */
export function notVerified(results: SignatureResult[], what: 'card' | 'catalog'): SignatureReport {
  return results.some((r) => r.error === MISMATCH)
    ? {
        status: 'invalid',
        message: `the ${what} was changed after it was signed (${describeResults(results)})`,
        results,
      }
    : {
        status: 'untrusted',
        message: `no signature from a trusted key (${describeResults(results)})`,
        results,
      };
}

/** Verifies a card's signatures; `source` is where it came from (for the jku rule). */
export async function checkSignatures(card: unknown, source: string, trust: Trust): Promise<SignatureReport> {
  const signatures = (card as { signatures?: unknown } | null)?.signatures;
  if (!Array.isArray(signatures) || signatures.length === 0) {
    return { status: 'unsigned', message: 'the card has no signatures', results: [] };
  }
  const options = verifyOptions(trust, source);
  const first = await verifyCard(card, trust.jwks, options);
  if (first.verified) {
    return {
      status: 'verified',
      ...(first.kid ? { kid: first.kid } : {}),
      ...(first.identity ? { identity: first.identity } : {}),
      canonicalization: 'jcs',
      message: `verified: ${signerOf(first)}`,
      results: first.results,
    };
  }
  if (first.results.some((r) => r.error === MISMATCH)) {
    // A trusted key, but not over the spec's payload: try the reading protobuf-JSON signers use.
    let payload: string | undefined;
    try {
      payload = defaultsOmittedPayload(card as Record<string, unknown>);
    } catch {
      payload = undefined;
    }
    if (payload !== undefined) {
      for (const entry of signatures) {
        const result = await verifyDetached(entry, payload, trust.jwks, options);
        if (result.ok) {
          return {
            status: 'verified',
            ...(result.kid ? { kid: result.kid } : {}),
            ...(result.identity ? { identity: result.identity } : {}),
            canonicalization: 'defaults-omitted',
            message: `verified: ${signerOf(result)} (signed with default values left out, as protobuf-JSON signers do)`,
            results: [result],
          };
        }
      }
    }
  }
  return notVerified(first.results, 'card');
}

/** validateCard's problems, with unknown members as warnings (a consumer ignores them). */
export function cardProblems(card: unknown): Problem[] {
  return validateCard(card).problems.map((p) =>
    p.severity === 'error' && p.message.startsWith('unknown field')
      ? { ...p, severity: 'warning' as const }
      : p,
  );
}
