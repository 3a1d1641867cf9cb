/**
 * RFC 8785 JSON Canonicalization Scheme: keys sorted by UTF-16 code units, numbers printed the
 * ECMAScript way (100.0 -> 100, -0 -> 0), strings as literal UTF-8 with the minimal JSON escapes.
 */
import canonicalize from 'canonicalize';
import { UserError } from '../errors.ts';

/** The canonical JSON text of a JSON value; throws UserError for values JCS cannot represent. */
export function canonicalJson(value: unknown): string {
  let text: string | undefined;
  try {
    text = canonicalize(value);
  } catch (err) {
    // e.g. a lone surrogate in a string, NaN or Infinity: none has a canonical form (RFC 8785 3.2).
    throw new UserError(`cannot canonicalize the card: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (text === undefined) throw new UserError('cannot canonicalize the card: not a JSON value');
  return text;
}

/**
 * The JCS form of a document without one member: how a detached signature's payload is made when
 * the signature lives inside the document it signs (a card's `signatures`, a catalog's `signature`).
 */
export function canonicalWithout(doc: Record<string, unknown>, member: string): string {
  if (!(member in doc)) return canonicalJson(doc);
  const { [member]: _signature, ...unsigned } = doc;
  return canonicalJson(unsigned);
}

/** The JWS payload of a card (spec section 8.4.1): its JCS form without the `signatures` member. */
export function signingPayload(card: Record<string, unknown>): string {
  return canonicalWithout(card, 'signatures');
}
