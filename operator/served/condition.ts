/**
 * The Delivered condition from the verdicts of one round of a card's served-card check (pure).
 * The worst verdict decides: Rewritten, then SignatureBroken (False: clients get something else
 * than what was signed), then Unreachable (Unknown: nothing could be seen), else True. The message
 * names each host's verdict and the differing paths; it holds nothing that changes from one round
 * to the next with the same verdicts (no time, no latency), so an unchanged verdict writes nothing.
 */
import type { DeliveredReason } from '../api/reasons.ts';
import type { ServedComparison, ServedVerdictName } from './compare.ts';

export const DELIVERED_CONDITION = 'Delivered';

export interface DeliveredCondition {
  type: typeof DELIVERED_CONDITION;
  status: 'True' | 'False' | 'Unknown';
  reason: DeliveredReason;
  message: string;
  observedGeneration: number;
}

export interface HostVerdict {
  audience: string;
  host: string;
  comparison: ServedComparison;
}

/** Worst first. */
const RANK: Record<ServedVerdictName, number> = {
  Rewritten: 0,
  SignatureBroken: 1,
  Unreachable: 2,
  ServedAsPublished: 3,
  ServedAsSigned: 4,
};
const STATUS: Record<ServedVerdictName, DeliveredCondition['status']> = {
  Rewritten: 'False',
  SignatureBroken: 'False',
  Unreachable: 'Unknown',
  ServedAsPublished: 'True',
  ServedAsSigned: 'True',
};

/** Hosts named in a message at most; the rest are counted. */
const MAX_HOSTS_LISTED = 4;
/** A condition message is capped by the API at 32 KiB; this stays far below. */
const MAX_MESSAGE = 1024;

const describe = (h: HostVerdict) => `${h.host}: ${h.comparison.verdict}, ${h.comparison.detail}`;

export function deliveredCondition(
  verdicts: readonly HostVerdict[],
  skipped: readonly string[],
  generation: number,
): DeliveredCondition {
  const base = { type: DELIVERED_CONDITION, observedGeneration: generation } as const;
  const skippedNote = skipped.length
    ? `; not checked: ${skipped.slice(0, MAX_HOSTS_LISTED).join(', ')}${skipped.length > MAX_HOSTS_LISTED ? ` and ${skipped.length - MAX_HOSTS_LISTED} more` : ''} (wildcard or over the limit)`
    : '';
  if (verdicts.length === 0) {
    return {
      ...base,
      status: 'Unknown',
      reason: 'NothingToCheck',
      message: `no exact host to fetch the card from${skippedNote}`,
    };
  }
  const sorted = [...verdicts].sort(
    (a, b) => RANK[a.comparison.verdict] - RANK[b.comparison.verdict] || a.host.localeCompare(b.host),
  );
  const worst = sorted[0]!.comparison.verdict;
  const listed = sorted.slice(0, MAX_HOSTS_LISTED).map(describe);
  const more = sorted.length - listed.length;
  let message = listed.join('; ') + (more > 0 ? `; and ${more} more host${more === 1 ? '' : 's'}` : '');
  message += skippedNote;
  if (message.length > MAX_MESSAGE) message = `${message.slice(0, MAX_MESSAGE - 3)}...`;
  return { ...base, status: STATUS[worst], reason: worst, message };
}

export function pendingDelivered(generation: number): DeliveredCondition {
  return {
    type: DELIVERED_CONDITION,
    status: 'Unknown',
    reason: 'CheckPending',
    message: 'the card served at the public hosts has not been checked yet',
    observedGeneration: generation,
  };
}

export function disabledDelivered(generation: number): DeliveredCondition {
  return {
    type: DELIVERED_CONDITION,
    status: 'Unknown',
    reason: 'ChecksDisabled',
    message: 'probes are disabled on this operator (--no-probes): the served card is not checked',
    observedGeneration: generation,
  };
}
