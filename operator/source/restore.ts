/**
 * The last good card of an adopted AgentCard after a restart (pure). The source tracker keeps
 * what it fetched in memory only; what survives a restart or a leader change is what the
 * controller published: the signed card in the AgentCard's ConfigMap and status.source (the
 * source's URL, digest, shape, times and signature verdict). When the first fetch of a new
 * process fails, that published card is the last good state: the tracker adopts it as it is
 * (spec.remove and spec.card were applied before it was published, so they are not applied
 * again), the controller renders the same card, finds the ConfigMap up to date and writes
 * nothing, and SourceAvailable=False carries the fetch error. Without status.source (nothing was
 * ever adopted) or without a parsable published card, there is nothing to restore.
 */
import type { SourceStatus } from '../card/resource.ts';
import type { ConvertedCard } from './convert.ts';

type SignatureStatus = NonNullable<SourceStatus['signature']>;

/** A card adopted from its source: what the tracker keeps of the last good fetch. */
export interface Adopted {
  converted: ConvertedCard;
  /**
   * Restored after a restart from the published card (this module): `converted.card` is the card
   * as published, spec.remove and spec.card already applied, so they are not applied again.
   */
  restored?: boolean;
  digest: string;
  url: string;
  fetchTime: string;
  changeTime?: string;
  changes: number;
  signature: SignatureStatus;
}

/** What the controller reads for a restore: the published card's text and status.source. */
export interface PublishedSource {
  /** The ConfigMap's `agent-card.json` (the default audience's signed card). */
  card: string | undefined;
  status: SourceStatus | undefined;
}

export function restoredAdoption(published: PublishedSource | undefined): Adopted | undefined {
  const status = published?.status;
  if (!published?.card || !status?.digest || !status.url || !status.fetchTime) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(published.card);
  } catch {
    return undefined;
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
  // The operator's own signatures: the card is signed again (or kept, resign.ts) on publishing.
  const { signatures: _signatures, ...card } = parsed as Record<string, unknown>;
  return {
    converted: { card, protocolVersion: status.protocolVersion ?? '1.0' },
    restored: true,
    digest: status.digest,
    url: status.url,
    fetchTime: status.fetchTime,
    ...(status.changeTime ? { changeTime: status.changeTime } : {}),
    changes: status.changes ?? 0,
    signature: status.signature ?? { result: 'NotChecked' },
  };
}
