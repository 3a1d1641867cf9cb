/**
 * Reading a trusted key set: a JWKS (`{"keys": [...]}`, RFC 7517 section 5) or a single public
 * JWK, from text that came from a file or a URL. Only the public members are kept, so a private
 * JWK given by mistake still works as a trusted key and its secret never travels further.
 */
import { UserError } from '../errors.ts';
import type { JWK } from './sign.ts';
import { publicPart, type JWKS } from './verify.ts';

/** Parses a JWKS or one JWK; `source` names the file or URL in error messages. */
export function parseJwks(text: string, source: string): JWKS {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UserError(`${source}: not valid JSON (expected a JWKS)`);
  }
  const obj = value as { keys?: unknown; kty?: unknown } | null;
  const keys =
    obj && typeof obj === 'object'
      ? Array.isArray(obj.keys)
        ? obj.keys
        : obj.kty
          ? [obj]
          : undefined
      : undefined;
  if (!keys) throw new UserError(`${source}: not a JWKS (expected {"keys": [...]})`);
  keys.forEach((k, i) => {
    if (!k || typeof k !== 'object' || typeof (k as JWK).kty !== 'string') {
      throw new UserError(`${source}: keys[${i}] is not a JWK (no "kty")`);
    }
  });
  return { keys: (keys as JWK[]).map(publicPart) };
}
