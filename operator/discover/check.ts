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
import { type Trust, jkuResolver } from './trust.ts';

export type SignatureStatus = 'verified' | 'unsigned' | 'untrusted' | 'invalid';

export interface SignatureReport {
  status: SignatureStatus;
  /** The kid that verified. */
  kid?: string;
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

function describeResults(results: SignatureResult[]): string {
  return results
    .map((r) => `${r.kid ? `kid ${r.kid}` : 'a signature'}: ${r.error ?? 'not verified'}`)
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
  const resolveJku = jkuResolver(trust, source);
  const first = await verifyCard(card, trust.jwks, { resolveJku });
  if (first.verified) {
    return {
      status: 'verified',
      kid: first.kid,
      canonicalization: 'jcs',
      message: `verified: kid ${first.kid}`,
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
        const result = await verifyDetached(entry, payload, trust.jwks, { resolveJku });
        if (result.ok) {
          return {
            status: 'verified',
            kid: result.kid,
            canonicalization: 'defaults-omitted',
            message: `verified: kid ${result.kid} (signed with default values left out, as protobuf-JSON signers do)`,
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
