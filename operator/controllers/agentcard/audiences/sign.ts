/**
 * Rendering and signing the card of every audience for one reconcile. Each audience's card is
 * signed on its own (a signature covers the interface URLs and security of exactly one
 * audience), and each keeps its published signatures when they still certify exactly what would
 * be signed now (resign.ts), so that steady state rewrites nothing.
 */
import type { AudienceVariant } from '../../../card/variants.ts';
import { renderV03, renderV1 } from '../../../card/render.ts';
import { serializeCard } from '../../../card/serialize.ts';
import { signCard, type SigningKey } from '../../../card/sign.ts';
import { reusableSignedCard } from '../../../signing/resign.ts';
import { publishedCardKey, publishedLegacyCardKey, type VariantFiles } from './publish.ts';

export interface SignedVariants {
  /** In the order of `variants` (the default audience first). */
  files: VariantFiles[];
  /** Whether the default audience's signatures were kept, or why not (for debug logs). */
  note: string;
}

export async function signVariants(
  variants: readonly AudienceVariant[],
  keys: readonly SigningKey[],
  jku: string | undefined,
  live: Readonly<Record<string, string>> | undefined,
): Promise<SignedVariants> {
  // Every card of every audience at once: WebCrypto signs and verifies on libuv's thread pool, so
  // one after the other a reconcile waited for the event loop once per signature (about 1.5 ms
  // each at 10,000 cards, where four reconciles and the watch events share the main thread).
  const signed = await Promise.all(
    variants.map(async (v) => {
      const rendered = renderV1(v.card);
      // The v0.3 card is signed the same way (its AgentCard has the same `signatures`), each key
      // over its own canonical form, so a legacy client can verify what it reads.
      const legacy = renderV03(v.card);
      const [kept, keptLegacy] = await Promise.all([
        reusableSignedCard(live?.[publishedCardKey(v.hosts)], rendered, keys, jku),
        reusableSignedCard(live?.[publishedLegacyCardKey(v.hosts)], legacy, keys, jku),
      ]);
      const [card, legacyCard] = await Promise.all([
        kept.card ?? signedOrPlain(rendered, keys, jku),
        keptLegacy.card ?? signedOrPlain(legacy, keys, jku),
      ]);
      return { files: { name: v.name, hosts: v.hosts, card, legacyCard }, kept };
    }),
  );
  const first = signed[0]?.kept;
  const note = !first
    ? ''
    : first.card !== undefined
      ? 'kept the published signatures'
      : `signing: ${first.why}`;
  return { files: signed.map((s) => s.files), note };
}

async function signedOrPlain(
  card: Record<string, unknown>,
  keys: readonly SigningKey[],
  jku: string | undefined,
): Promise<string> {
  return serializeCard(keys.length > 0 ? await signCard(card, keys, { jku }) : card);
}
