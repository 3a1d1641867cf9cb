/**
 * Whose signature a card is about to carry, as a trust rule may rely on it: the identity of a
 * certificate key counts only when its chain (the `x5c` the signature carries) validates to the
 * key's trust anchors, the `ca.crt` of its Secret (what cert-manager writes: the issuing CA), by
 * the rules every verifier of the operator applies (../card/x5c.ts: each issuer a CA allowed to
 * sign certificates, validity, exactly one well-formed URI SAN, an end-entity leaf that may sign).
 *
 * Without that, a leaf's URI SAN is only a claim: a self-signed certificate, or one "issued" by
 * another end-entity certificate, can name any identity. Such a key still signs (the Signed
 * condition is about the key, not about who it claims to be), but its identity matches no
 * pattern, and the rule's report says why the chain does not verify. Pure: no I/O.
 */
import { X509Certificate } from 'node:crypto';
import type { SigningKey } from '../card/sign.ts';
import { validateChain } from '../card/x5c.ts';
import type { Facts, UnverifiedSigner } from './evaluate.ts';

/** A URI SAN (a SPIFFE ID), not a DNS name: it has a scheme. */
const isUri = (id: string) => /^[a-z][a-z0-9+.-]*:/i.test(id);

/** The identity one certificate key proves, or why it proves none. */
export function verifySignerIdentity(
  key: SigningKey,
  now: Date,
): { identity: string } | { unverified: UnverifiedSigner } {
  const claimed = (key.certificate?.identities ?? []).filter(isUri);
  const unverified = (reason: string) => ({
    unverified: { kid: key.kid, ...(claimed[0] ? { claimed: claimed[0] } : {}), reason },
  });
  const anchors = key.anchors ?? [];
  if (anchors.length === 0)
    return unverified('its Secret has no ca.crt, so the chain cannot be verified to an issuing CA');
  let roots: X509Certificate[];
  try {
    roots = anchors.map((der) => new X509Certificate(Buffer.from(der, 'base64')));
  } catch {
    return unverified("a certificate of its Secret's ca.crt cannot be read");
  }
  // The chain must certify exactly one URI SAN (validateChain refuses any other count before it
  // matches), so matching it against the claimed identity itself only asks "is it proven?".
  const result = validateChain(key.x5c ?? [], { roots, identities: claimed.slice(0, 1), now: () => now });
  if (!result.ok) return unverified(`the chain does not verify to its Secret's ca.crt: ${result.error}`);
  return { identity: result.identity };
}

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
