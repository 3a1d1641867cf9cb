/**
 * The exact bytes that are published and served for a card: its RFC 8785 canonical JSON.
 * Canonical form makes the bytes (and so the digest and ETag) a function of the card's content
 * alone, whatever the key order of the object, and keeps the file small: registries reject card
 * files over 10 KB. Without the `signatures` member these bytes are the signed payload itself.
 */
import { canonicalJson } from './jcs.ts';

export function serializeCard(card: Record<string, unknown>): string {
  return canonicalJson(card);
}
