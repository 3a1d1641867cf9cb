/**
 * A catalog's trust policy (spec.trust): which card signatures a catalog accepts before it lists
 * an agent. The policy's documents (a PEM trust bundle such as trust-manager distributes, and/or
 * a JWKS) come from ConfigMaps the controller reads; this module only parses them and verifies
 * each published card (../card/verify.ts, ../card/x5c.ts). Pure: texts in, verdicts out.
 */
import { parseJwks } from '../card/jwks.ts';
import { verifyCard, type JWKS, type VerifyOptions } from '../card/verify.ts';
import { parseTrustBundle } from '../card/x5c.ts';
import { describeError } from '../errors.ts';
import type { CatalogTrust } from './resource.ts';

/** The documents the policy references, as read: text, or why it could not be read. */
export type TrustDocument = { text: string } | { error: string };

export interface TrustSources {
  trustBundle?: TrustDocument;
  jwks?: TrustDocument;
}

export interface LoadedTrust {
  jwks: JWKS;
  options: VerifyOptions;
}

const where = (ref: { configMap: { name: string; key: string } }) =>
  `ConfigMap ${ref.configMap.name} key ${ref.configMap.key}`;

/** The policy ready to verify with, or why it cannot be used (every card would be left out). */
export function loadTrust(
  policy: CatalogTrust,
  sources: TrustSources,
): { ok: true; trust: LoadedTrust } | { ok: false; error: string } {
  const trust: LoadedTrust = { jwks: { keys: [] }, options: {} };
  if (policy.trustBundle) {
    const doc = sources.trustBundle;
    if (!doc || 'error' in doc)
      return { ok: false, error: `trust bundle ${where(policy.trustBundle)}: ${doc?.error ?? 'not read'}` };
    try {
      trust.options.certificates = {
        roots: parseTrustBundle(doc.text, `trust bundle ${where(policy.trustBundle)}`),
        identities: policy.identities ?? [],
      };
    } catch (err) {
      return { ok: false, error: describeError(err) };
    }
  }
  if (policy.jwks) {
    const doc = sources.jwks;
    if (!doc || 'error' in doc)
      return { ok: false, error: `JWKS ${where(policy.jwks)}: ${doc?.error ?? 'not read'}` };
    try {
      trust.jwks = parseJwks(doc.text, `JWKS ${where(policy.jwks)}`);
    } catch (err) {
      return { ok: false, error: describeError(err) };
    }
  }
  return { ok: true, trust };
}

/** Who signed a published card, or why it does not verify. */
export async function verifyPublishedCard(
  text: string | undefined,
  trust: LoadedTrust,
): Promise<{ ok: true; signer: string } | { ok: false; reason: string }> {
  if (text === undefined) return { ok: false, reason: 'no published card to verify yet' };
  let card: unknown;
  try {
    card = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'the published card is not JSON' };
  }
  const result = await verifyCard(card, trust.jwks, trust.options);
  if (result.verified) return { ok: true, signer: result.identity ?? `kid ${result.kid}` };
  const reasons = result.results.map((r) => `${r.kid ? `kid ${r.kid}: ` : ''}${r.error ?? 'not verified'}`);
  return { ok: false, reason: `signature not verified (${reasons.join('; ').slice(0, 300)})` };
}
