/**
 * Card changes in the cluster (pure, no I/O): what a reconcile that is about to publish a new card
 * makes of it (docs/changes.md, "In the cluster").
 *
 * - The card last published (the one the live ConfigMap serves) is compared with the new one by
 *   the change engine (operator/change/), and the change gets the class of its most severe item.
 * - With spec.changes.breaking Enforce, a breaking change without a new major `version`
 *   (operator/change/versions.ts) is held, unless the annotation agentcard.dev/accept-breaking-change
 *   names it: its digest is that of the card's content without its signatures, so it does not
 *   move when the held card is signed again, and names exactly one change.
 * - A published change becomes an entry of status.history (newest first, HISTORY_LIMIT entries),
 *   a CardChanged Event and a count in agentcard_card_changes_total.
 *
 * Everything is derived from status.card (what was recorded as published) and the live ConfigMap,
 * never from memory: a restarted operator finds the new card already published and recorded, and
 * adds nothing. A card whose bytes change without a change of content (signed again) is not a
 * change; neither is a reconcile that publishes nothing new.
 */
import { signingPayload } from '../../card/jcs.ts';
import {
  HISTORY_LIMIT,
  HISTORY_VERSION_LENGTH,
  type AgentCardSpec,
  type HistoryEntry,
} from '../../card/resource.ts';
import type { AgentCard } from '../../card/schema.ts';
import { validateCard } from '../../card/validate.ts';
import { diffCards, type CardChange } from '../../change/diff.ts';
import { summary } from '../../change/report.ts';
import type { ChangeClass } from '../../change/rules.ts';
import { majorBump, type MajorBump } from '../../change/versions.ts';
import { ACCEPT_BREAKING_ANNOTATION } from '../../api/names.ts';
import { digestOf } from '../../runtime/configmaps.ts';
import { formatTime } from './conditions.ts';
import type { PlannedEvent } from './events.ts';

export type BreakingPolicy = NonNullable<NonNullable<AgentCardSpec['changes']>['breaking']>;
export const DEFAULT_BREAKING_POLICY: BreakingPolicy = 'Audit';

// The status schema (card layer) lists the classes itself; this keeps the two lists the same.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
const _sameClasses: Same<NonNullable<HistoryEntry['class']>, ChangeClass> = true;
void _sameClasses;

/** A change about to be published: what status.history, the Event and the metric say of it. */
export interface PublishedChange {
  version: string;
  /** digestOf the published card (as status.card.digest). */
  digest: string;
  /** Undefined: there was no earlier card to compare with. */
  class?: ChangeClass;
  /** "3 changes: 1 breaking, ..." (change/report.ts). */
  summary?: string;
  breaking: CardChange[];
  /** How a breaking change passed spec.changes.breaking Enforce. */
  passed?: 'major-version' | 'accepted';
}

export type ChangeVerdict =
  | { action: 'none' }
  | { action: 'publish'; change: PublishedChange }
  | { action: 'hold'; digest: string; message: string };

export interface ChangeInput {
  /** The AgentCard (for the kubectl command of the held message). */
  name: string;
  namespace: string;
  /** status.card.digest: the card last recorded as published. */
  recordedDigest?: string;
  /** agent-card.json of the live ConfigMap (undefined: none is served). */
  liveCard?: string;
  /** agent-card.json about to be published. */
  nextCard: string;
  /**
   * The version of `nextCard`, when the caller rendered it from a validated card: a first publish
   * (nothing live to compare with) then needs neither parsing nor validating it again.
   */
  nextVersion?: string;
  policy?: BreakingPolicy;
  /** The value of the accept annotation, if set. */
  accept?: string;
}

/** A card as the engine compares it; undefined for bytes that are not a valid card. */
function parseCard(text: string): { card: AgentCard; raw: Record<string, unknown> } | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  const { card } = validateCard(raw);
  return card ? { card, raw: raw as Record<string, unknown> } : undefined;
}

/** The digest that names a held change: of the card without its signatures (A2A 1.0 section 8.4.1). */
export function heldChangeDigest(raw: Record<string, unknown>): string {
  return digestOf(signingPayload(raw));
}

const MAX_LISTED_ITEMS = 3;
const MAX_ITEM_LENGTH = 160;

/** The first breaking items, each `path: message`, bounded (for a condition and an Event). */
export function breakingItems(changes: readonly CardChange[]): string {
  const listed = changes.slice(0, MAX_LISTED_ITEMS).map((c) => {
    const line = `${c.path}: ${c.message}`;
    return line.length > MAX_ITEM_LENGTH ? `${line.slice(0, MAX_ITEM_LENGTH - 3)}...` : line;
  });
  const more = changes.length > MAX_LISTED_ITEMS ? ` (and ${changes.length - MAX_LISTED_ITEMS} more)` : '';
  return `${listed.join('; ')}${more}`;
}

function bumpNote(before: string, after: string, bump: Exclude<MajorBump, { bumped: true }>): string {
  const versions = `version ${JSON.stringify(before)} -> ${JSON.stringify(after)}`;
  switch (bump.why) {
    case 'same-major':
      return `${versions} keeps the major version`;
    case 'lower':
      return `${versions} lowers the major version`;
    case 'not-semver':
      return `${versions}: ${JSON.stringify(bump.version)} is not a semantic version, so no new major version can be seen`;
  }
}

/** What to do with the card about to be published (see the top of this file). */
export function decideChange(input: ChangeInput): ChangeVerdict {
  const digest = digestOf(input.nextCard);
  if (digest === input.recordedDigest) return { action: 'none' };
  // The live card is the one to compare with; when it already holds these bytes (a publish whose
  // status was not recorded) or holds none, or holds no valid card, there is nothing to compare.
  const live =
    input.liveCard !== undefined && digestOf(input.liveCard) !== digest
      ? parseCard(input.liveCard)
      : undefined;
  const next = live || input.nextVersion === undefined ? parseCard(input.nextCard) : undefined;
  const version = (input.nextVersion ?? next?.card.version ?? '').slice(0, HISTORY_VERSION_LENGTH);
  if (!next || !live) return { action: 'publish', change: { version, digest, breaking: [] } };

  const diff = diffCards(live.card, next.card);
  if (!diff.highest) return { action: 'none' }; // signed again: the same content
  const breaking = diff.changes.filter((c) => c.class === 'breaking');
  const change: PublishedChange = {
    version,
    digest,
    class: diff.highest,
    summary: summary(diff),
    breaking,
  };
  if (diff.highest !== 'breaking' || (input.policy ?? DEFAULT_BREAKING_POLICY) !== 'Enforce') {
    return { action: 'publish', change };
  }
  const bump = majorBump(live.card.version, next.card.version);
  if (bump.bumped) return { action: 'publish', change: { ...change, passed: 'major-version' } };
  const held = heldChangeDigest(next.raw);
  if (input.accept?.trim() === held) return { action: 'publish', change: { ...change, passed: 'accepted' } };
  return {
    action: 'hold',
    digest: held,
    message:
      `breaking change ${held} held (spec.changes.breaking is Enforce): ${bumpNote(live.card.version, next.card.version, bump)}; ` +
      `breaking: ${breakingItems(breaking)}; to publish it, give the card a new major version, or accept this change: ` +
      `kubectl annotate agentcard ${input.name} -n ${input.namespace} ${ACCEPT_BREAKING_ANNOTATION}=${held} --overwrite`,
  };
}

/** status.history with `change` first, at most HISTORY_LIMIT entries. */
export function appendHistory(
  history: readonly HistoryEntry[] | undefined,
  change: Pick<PublishedChange, 'version' | 'digest' | 'class'>,
  now: Date,
): HistoryEntry[] {
  const entry: HistoryEntry = {
    version: change.version,
    digest: change.digest,
    time: formatTime(now),
    ...(change.class ? { class: change.class } : {}),
  };
  // The same digest twice in a row is one publish recorded again: kept once.
  const rest = (history ?? []).filter((e, i) => !(i === 0 && e.digest === entry.digest));
  return [entry, ...rest].slice(0, HISTORY_LIMIT);
}

/** The CardChanged Event of a published change: Warning when it breaks callers. */
export function changeEvent(change: PublishedChange): PlannedEvent | undefined {
  if (!change.class) return undefined; // the first publish: the Published event says it
  const passed =
    change.passed === 'accepted'
      ? ` (accepted by ${ACCEPT_BREAKING_ANNOTATION})`
      : change.passed === 'major-version'
        ? ' (a new major version)'
        : '';
  const items = change.breaking.length > 0 ? `; breaking: ${breakingItems(change.breaking)}` : '';
  return {
    type: change.class === 'breaking' ? 'Warning' : 'Normal',
    reason: 'CardChanged',
    action: 'Publish',
    message: `published version ${change.version} (${change.digest.slice(0, 19)}), a ${change.class} change${passed}: ${change.summary ?? ''}${items}`,
  };
}
