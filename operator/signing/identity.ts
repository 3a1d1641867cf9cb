/**
 * The identity a certificate signing key proves: its leaf's URI SAN counts only when the chain
 * (the `x5c` its signatures carry) validates to the key's trust anchors, the `ca.crt` of its
 * Secret (what cert-manager writes: the issuing CA), by the rules every verifier of the operator
 * applies (../card/x5c.ts: each issuer a CA allowed to sign certificates, validity, exactly one
 * well-formed URI SAN, an end-entity leaf that may sign).
 *
 * Without that, a leaf's URI SAN is only a claim: a self-signed certificate, or one "issued" by
 * another end-entity certificate, can name any identity. Such a key still signs (the Signed
 * condition is about the key, not about whom it claims to be), but policy trust rules do not
 * count its identity (operator/policy/signer.ts), and status.signatures[] shows no
 * verifiedIdentity for it. Pure: no I/O.
 */
import { X509Certificate } from 'node:crypto';
import type { SigningKey } from '../card/sign.ts';
import { validateChain } from '../card/x5c.ts';

/** A certificate key whose identity is not proven, and why (for a rule's report). */
export interface UnverifiedSigner {
  kid: string;
  /** The URI SAN the leaf claims, when it has one. */
  claimed?: string;
  reason: string;
}

/** A URI SAN (a SPIFFE ID), not a DNS name: it has a scheme. */
const isUri = (id: string) => /^[a-z][a-z0-9+.-]*:/i.test(id);

export type SignerIdentity = { identity: string } | { unverified: UnverifiedSigner };

/**
 * A verdict is reused for this long: every reconcile asks again, and parsing and checking the
 * chain each time would cost at scale; a minute is within the verifiers' clock skew (x5c.ts).
 */
const REUSE_MS = 60_000;
const verdicts = new WeakMap<SigningKey, { at: number; result: SignerIdentity }>();

/** The identity one certificate key proves, or why it proves none. */
export function verifySignerIdentity(key: SigningKey, now: Date): SignerIdentity {
  const cached = verdicts.get(key);
  if (cached && Math.abs(cached.at - now.getTime()) < REUSE_MS) return cached.result;
  const result = verify(key, now);
  verdicts.set(key, { at: now.getTime(), result });
  return result;
}

function verify(key: SigningKey, now: Date): SignerIdentity {
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
