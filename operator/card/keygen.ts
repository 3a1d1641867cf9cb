/** Generation of new signing keys (private JWKs), for `agentcard keygen`. */
import * as jose from 'jose';
import { UserError } from '../errors.ts';
import { SIGNING_ALGS, type SigningAlg } from './resource.ts';
import type { JWK } from './sign.ts';

/**
 * A new private JWK for `alg` with members kid (default: its RFC 7638 thumbprint), alg and
 * use "sig". RSA keys are 2048 bits.
 */
export async function generateSigningJwk(alg: string, kid?: string): Promise<JWK> {
  if (!(SIGNING_ALGS as readonly string[]).includes(alg)) {
    throw new UserError(`unsupported alg "${alg}" (supported: ${SIGNING_ALGS.join(', ')})`, 2);
  }
  const options =
    alg === 'EdDSA' ? { crv: 'Ed25519', extractable: true } : { modulusLength: 2048, extractable: true };
  const { privateKey } = await jose.generateKeyPair(alg as SigningAlg, options);
  const jwk = await jose.exportJWK(privateKey);
  const { kty, crv, x, y, n, e } = jwk;
  const publicParts = Object.fromEntries(
    Object.entries({ kty, crv, x, y, n, e }).filter(([, v]) => v !== undefined),
  );
  return { ...jwk, kid: kid ?? (await jose.calculateJwkThumbprint(publicParts)), alg, use: 'sig' };
}
