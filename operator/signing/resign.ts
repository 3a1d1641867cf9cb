/**
 * Keeping a valid signature instead of signing again. ES256, ES384 and PS256 signatures are
 * randomized: signing the same card twice gives different bytes, so re-signing on every reconcile
 * would rewrite the ConfigMap (and change the digest and ETag) each time. The live signed card is
 * kept when it is exactly what a fresh signature would certify:
 * - the same payload (the newly rendered card with the live signatures serializes to the live
 *   bytes, so nothing but the signatures could differ);
 * - one signature per configured key, in order, whose protected header names that key's kid and
 *   alg, the configured jku and, for a certificate key, exactly its current chain (x5c): a renewed
 *   certificate with the same key (cert-manager's rotationPolicy: Never) is signed again;
 * - every signature valid under the current public key (A2A spec section 8.4.3 verification).
 * A rotated key, a changed jku or an edited ConfigMap all fail one of these, and the card is
 * signed again.
 */
import type { SigningKey } from '../card/sign.ts';
import { publicJwks } from '../card/sign.ts';
import { serializeCard } from '../card/serialize.ts';
import { verifyCard } from '../card/verify.ts';

function protectedHeader(entry: unknown): Record<string, unknown> | undefined {
  const p = (entry as { protected?: unknown } | null)?.protected;
  if (typeof p !== 'string') return undefined;
  try {
    const header = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as unknown;
    return header && typeof header === 'object' ? (header as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a header's x5c is exactly the key's chain (both absent for a key without certificate). */
export function sameChain(x5c: unknown, chain: readonly string[] | undefined): boolean {
  if (chain === undefined) return x5c === undefined;
  return Array.isArray(x5c) && x5c.length === chain.length && x5c.every((c, i) => c === chain[i]);
}

/** The live card text when it can be published again unchanged; else why it cannot. */
export async function reusableSignedCard(
  liveText: string | undefined,
  rendered: Record<string, unknown>,
  keys: readonly SigningKey[],
  jku: string | undefined,
): Promise<{ card: string } | { card?: undefined; why: string }> {
  if (keys.length === 0) return { why: 'unsigned' };
  if (!liveText) return { why: 'nothing published yet' };
  let live: Record<string, unknown>;
  try {
    live = JSON.parse(liveText) as Record<string, unknown>;
  } catch {
    return { why: 'the published card is not JSON' };
  }
  const signatures = live?.signatures;
  if (!Array.isArray(signatures) || signatures.length !== keys.length)
    return { why: 'the number of keys changed' };
  if (serializeCard({ ...rendered, signatures }) !== liveText) return { why: 'the card changed' };
  for (const [i, key] of keys.entries()) {
    const header = protectedHeader(signatures[i]);
    if (
      !header ||
      header.kid !== key.kid ||
      header.alg !== key.alg ||
      header.jku !== jku ||
      !sameChain(header.x5c, key.x5c)
    ) {
      return { why: `signature ${i} does not name key ${key.kid} (${key.alg}) and the configured jku` };
    }
  }
  const result = await verifyCard(live, publicJwks(keys));
  const bad = result.results.findIndex((r, i) => !r.ok || r.kid !== keys[i]!.kid);
  if (result.results.length !== keys.length || bad !== -1)
    return { why: `signature ${bad} does not verify with the current key` };
  return { card: liveText };
}
