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
  const files: VariantFiles[] = [];
  let note = '';
  for (const [i, v] of variants.entries()) {
    const rendered = renderV1(v.card);
    const kept = await reusableSignedCard(live?.[publishedCardKey(v.hosts)], rendered, keys, jku);
    if (i === 0) note = kept.card !== undefined ? 'kept the published signatures' : `signing: ${kept.why}`;
    // The v0.3 card is signed the same way (its AgentCard has the same `signatures`), each key
    // over its own canonical form, so a legacy client can verify what it reads.
    const legacy = renderV03(v.card);
    const keptLegacy = await reusableSignedCard(live?.[publishedLegacyCardKey(v.hosts)], legacy, keys, jku);
    files.push({
      name: v.name,
      hosts: v.hosts,
      card: kept.card ?? serializeCard(keys.length > 0 ? await signCard(rendered, keys, { jku }) : rendered),
      legacyCard:
        keptLegacy.card ?? serializeCard(keys.length > 0 ? await signCard(legacy, keys, { jku }) : legacy),
    });
  }
  return { files, note };
}
