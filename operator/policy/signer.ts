/**
 * Whose signature a card is about to carry, as a trust rule may rely on it: the identities its
 * certificate keys prove (../signing/identity.ts: a chain that verifies to the Secret's ca.crt),
 * and the claims they do not prove, with why, for the rule's report. Pure: no I/O.
 */
import type { SigningKey } from '../card/sign.ts';
import { verifySignerIdentity, type UnverifiedSigner } from '../signing/identity.ts';
import type { Facts } from './evaluate.ts';

/**
 * The facts a trust rule judges the signature about to be published by: signed or not, the
 * identities proven by a verified chain, and the certificate keys whose identity is not proven.
 */
export function signerFacts(
  keys: readonly SigningKey[],
  now: Date,
): Pick<Facts, 'signed' | 'signerIdentities' | 'unverifiedSigners'> {
  const identities: string[] = [];
  const unverifiedSigners: UnverifiedSigner[] = [];
  for (const key of keys) {
    if (!key.x5c) continue; // a JWKS key proves a key, not an identity
    const result = verifySignerIdentity(key, now);
    if ('identity' in result) identities.push(result.identity);
    else unverifiedSigners.push(result.unverified);
  }
  return {
    signed: keys.length > 0,
    signerIdentities: identities,
    ...(unverifiedSigners.length ? { unverifiedSigners } : {}),
  };
}
