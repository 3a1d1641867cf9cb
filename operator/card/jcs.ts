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

/** Drops "", null, [] and {} recursively (an emptied container is dropped too). */
function dropEmpty(value: unknown): unknown {
  if (value === '' || value === null || value === undefined) return undefined;
  if (Array.isArray(value)) {
    const items = value.map(dropEmpty).filter((v) => v !== undefined);
    return items.length ? items : undefined;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value)
      .map(([k, v]) => [k, dropEmpty(v)] as const)
      .filter(([, v]) => v !== undefined);
    return entries.length ? Object.fromEntries(entries) : undefined;
  }
  return value;
}

/**
 * The payload as protobuf-JSON based signers make it (a2a-js `canonicalizeAgentCard`, a2a-python's
 * `MessageToDict`): default values left out, i.e. every "", null, [] and {} (recursively), and
 * `false` in the one non-optional bool of the card, `capabilities.extensions[].required`. Spec
 * section 8.4.1 says REQUIRED fields stay even when empty, so this is NOT how this project signs;
 * verifiers may accept it as a second reading while the question is open (A2A #2249, #2122,
 * a2a-js #627). Leaving out a default value does not change what the card means, so accepting
 * it lets no one change a signed card's meaning. Members outside the schema stay in the payload
 * (the SDK drops them, leaving them unsigned), so they remain covered by the signature here.
 */
export function defaultsOmittedPayload(card: Record<string, unknown>): string {
  const { signatures: _signatures, ...unsigned } = card;
  const copy = structuredClone(unsigned) as Record<string, unknown>;
  const capabilities = copy.capabilities as { extensions?: unknown } | undefined;
  if (capabilities && Array.isArray(capabilities.extensions)) {
    for (const ext of capabilities.extensions as Record<string, unknown>[]) {
      if (ext && typeof ext === 'object' && ext.required === false) delete ext.required;
    }
  }
  return canonicalJson(dropEmpty(copy) ?? {});
}
