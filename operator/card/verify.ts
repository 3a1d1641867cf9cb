/**
 * Verification (A2A spec section 8.4.3): recompute the payload (RFC 8785 canonical JSON of the
 * card without `signatures`, exactly as received), then check each signature against the keys of
 * a trusted JWKS selected by the header's `kid`, or, when the caller trusts certificates and the
 * header carries an `x5c` chain (RFC 7515 section 4.1.6), against the chain's leaf key once the
 * chain validates to the trust bundle and the leaf's identity matches (x5c.ts). One valid
 * signature suffices; the result names the kid and, for a chain, the identity that signed. The
 * `jku` header is never fetched unless the caller passes `resolveJku` (a key source it trusts).
 */
import type { KeyObject } from 'node:crypto';
import * as jose from 'jose';
import { describeError } from '../errors.ts';
import { signingPayload } from './jcs.ts';
import { SIGNING_ALGS } from './resource.ts';
import type { JWK } from './sign.ts';
import { type CertificateTrust, validateChain } from './x5c.ts';

export type JWKS = { keys: JWK[] };
export type SignatureResult = {
  kid?: string;
  alg?: string;
  /** The signer's identity (the leaf's URI SAN), when a certificate chain verified it. */
  identity?: string;
  ok: boolean;
  error?: string;
};
export type VerifyResult = { verified: boolean; kid?: string; identity?: string; results: SignatureResult[] };
export type VerifyOptions = {
  /** Called with a header's jku to get more trusted keys; without it, jku is ignored. */
  resolveJku?: (jku: string) => Promise<JWKS>;
  /** A trust bundle and identity patterns: signatures with an x5c chain are checked against them. */
  certificates?: CertificateTrust;
};

const encoder = new TextEncoder();
const MISMATCH = 'signature does not match';
const PRIVATE_MEMBERS = new Set(['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k']);

/** The public members of a JWK: a verifier needs (and should trust) no more. */
export function publicPart(jwk: JWK): JWK {
  return Object.fromEntries(Object.entries(jwk).filter(([name]) => !PRIVATE_MEMBERS.has(name))) as JWK;
}

/**
 * Imported public keys, per trusted JWK object and algorithm: importing costs about as much as a
 * verification, and a verifier checking many cards (agentcard discover) meets the same few keys
 * over and over. Keyed weakly, so a key set that is dropped takes its imports with it.
 */
const importedKeys = new WeakMap<JWK, Map<string, Promise<jose.CryptoKey | Uint8Array>>>();

function importVerifyKey(jwk: JWK, alg: string): Promise<jose.CryptoKey | Uint8Array> {
  let byAlg = importedKeys.get(jwk);
  if (!byAlg) importedKeys.set(jwk, (byAlg = new Map()));
  let key = byAlg.get(alg);
  if (!key) {
    key = jose.importJWK(publicPart(jwk), alg);
    // A key that fails to import is not remembered: the error is reported each time.
    key.catch(() => byAlg.delete(alg));
    byAlg.set(alg, key);
  }
  return key;
}

function usableFor(jwk: JWK, kid: string, alg: string): boolean {
  if (jwk.kid !== kid) return false;
  if (jwk.use !== undefined && jwk.use !== 'sig') return false;
  if (jwk.alg !== undefined && jwk.alg !== alg) return false;
  if (jwk.key_ops !== undefined && !jwk.key_ops.includes('verify')) return false;
  return true;
}

async function verifyOne(
  entry: unknown,
  encodedPayload: string,
  jwks: JWKS,
  opts: VerifyOptions,
): Promise<SignatureResult> {
  if (!entry || typeof entry !== 'object') return { ok: false, error: 'signature entry is not an object' };
  const sig = entry as Record<string, unknown>;
  if (typeof sig.protected !== 'string' || typeof sig.signature !== 'string') {
    return { ok: false, error: 'signature entry needs "protected" and "signature" strings' };
  }
  let header: jose.ProtectedHeaderParameters;
  try {
    header = jose.decodeProtectedHeader({ protected: sig.protected, payload: '', signature: '' });
  } catch {
    return { ok: false, error: 'protected header is not base64url JSON' };
  }
  const { kid, alg } = header;
  if (typeof alg !== 'string' || !(SIGNING_ALGS as readonly string[]).includes(alg)) {
    return { kid, ok: false, error: `unsupported or missing alg${alg ? ` ${String(alg)}` : ''}` };
  }
  const unprotected =
    sig.header && typeof sig.header === 'object' ? { header: sig.header as jose.JWSHeaderParameters } : {};
  const check = async (key: jose.CryptoKey | Uint8Array | KeyObject): Promise<string | undefined> => {
    try {
      await jose.flattenedVerify(
        {
          protected: sig.protected as string,
          payload: encodedPayload,
          signature: sig.signature as string,
          ...unprotected,
        },
        key,
        { algorithms: [...SIGNING_ALGS] },
      );
      return undefined;
    } catch (err) {
      return err instanceof jose.errors.JWSSignatureVerificationFailed ? MISMATCH : describeError(err);
    }
  };

  // A certificate chain, when the caller trusts certificates: the chain and identity decide.
  let chainError: string | undefined;
  if (header.x5c !== undefined && opts.certificates) {
    const chain = validateChain(header.x5c, opts.certificates);
    if (chain.ok) {
      const error = await check(chain.key);
      if (!error) return { ...(kid ? { kid } : {}), alg, identity: chain.identity, ok: true };
      // A key the trust vouches for, but not this payload: changed after signing.
      return { ...(kid ? { kid } : {}), alg, identity: chain.identity, ok: false, error };
    }
    chainError = `certificate chain refused: ${chain.error}`;
  }

  if (typeof kid !== 'string' || !kid)
    return { alg, ok: false, error: chainError ?? 'protected header has no kid' };
  let candidates = jwks.keys.filter((k) => usableFor(k, kid, alg));
  if (candidates.length === 0 && typeof header.jku === 'string' && opts.resolveJku) {
    try {
      candidates = (await opts.resolveJku(header.jku)).keys.filter((k) => usableFor(k, kid, alg));
    } catch (err) {
      return {
        kid,
        alg,
        ok: false,
        error: chainError ?? `cannot get the jku key set: ${describeError(err)}`,
      };
    }
  }
  if (candidates.length === 0) {
    if (chainError) return { kid, alg, ok: false, error: chainError };
    return {
      kid,
      alg,
      ok: false,
      error:
        header.x5c !== undefined
          ? `no trusted key with kid "${kid}" for ${alg}, and its certificate chain (x5c) is not checked without a trust bundle`
          : `no trusted key with kid "${kid}" for ${alg}`,
    };
  }

  let lastError = MISMATCH;
  for (const jwk of candidates) {
    let key: jose.CryptoKey | Uint8Array;
    try {
      key = await importVerifyKey(jwk, alg);
    } catch (err) {
      lastError = describeError(err);
      continue;
    }
    const error = await check(key);
    if (!error) return { kid, alg, ok: true };
    lastError = error;
  }
  return { kid, alg, ok: false, error: lastError };
}

/**
 * Verifies one detached JWS (`{protected, signature}`) over a payload (canonical JSON text)
 * against the trusted keys: the primitive behind verifyCard, shared with AI Catalog signatures.
 */
export async function verifyDetached(
  entry: unknown,
  payload: string,
  jwks: JWKS,
  opts: VerifyOptions = {},
): Promise<SignatureResult> {
  return verifyOne(entry, jose.base64url.encode(encoder.encode(payload)), jwks, opts);
}

/** Verifies the signatures of a card against a trusted JWKS; reports which kid verified. */
export async function verifyCard(card: unknown, jwks: JWKS, opts: VerifyOptions = {}): Promise<VerifyResult> {
  if (!card || typeof card !== 'object' || Array.isArray(card)) {
    return { verified: false, results: [{ ok: false, error: 'the card is not a JSON object' }] };
  }
  const signatures = (card as Record<string, unknown>).signatures;
  if (!Array.isArray(signatures) || signatures.length === 0) {
    return { verified: false, results: [{ ok: false, error: 'the card has no signatures' }] };
  }
  let encodedPayload: string;
  try {
    encodedPayload = jose.base64url.encode(encoder.encode(signingPayload(card as Record<string, unknown>)));
  } catch (err) {
    return { verified: false, results: [{ ok: false, error: describeError(err) }] };
  }
  const results: SignatureResult[] = [];
  for (const entry of signatures) results.push(await verifyOne(entry, encodedPayload, jwks, opts));
  const first = results.find((r) => r.ok);
  return first
    ? {
        verified: true,
        ...(first.kid ? { kid: first.kid } : {}),
        ...(first.identity ? { identity: first.identity } : {}),
        results,
      }
    : { verified: false, results };
}
