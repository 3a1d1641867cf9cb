/**
 * The pure part of the import controller (controller.ts): the status a run gives a CatalogImport
 * (conditions, counts, times), whether it differs from the one written, and the Events of what
 * changed. Status is written only when something a reader cares about changed, and otherwise as a
 * heartbeat of lastSuccessTime every maxStaleness / 2 (the staleness of kept entries counts from
 * it after a restart): an unchanged import writes nothing between heartbeats.
 */
import type { ImportFetchedReason, ImportReasons, ImportRefusalReason } from '../../api/reasons.ts';
import type { Condition } from '../../runtime/condition-types.ts';
import {
  deriveReady,
  formatTime,
  setConditions,
  type ConditionInput,
  type ReadinessPolicy,
  type TypedCondition,
} from '../../runtime/conditions.ts';
import { sortedJson } from '../../runtime/sorted-json.ts';
import type { RefusedEntry } from '../../federation/crawl.ts';
import {
  IMPORT_CONDITION_TYPES,
  MAX_REFUSED_SHOWN,
  type CatalogImportStatus,
} from '../../federation/resource.ts';

type ImportCondition = TypedCondition<ImportReasons>;

export const IMPORT_READINESS: ReadinessPolicy = {
  prerequisites: ['Accepted', 'Fetched'],
  exempt: () => false,
  readyMessage: (byType) => byType.get('Fetched')?.message ?? 'imported',
};

/** What a reconcile learned, in the terms of the status. */
export type RunSummary =
  | { kind: 'invalid'; message: string }
  | { kind: 'untrusted'; message: string; stale: number; imported: number }
  | {
      kind: 'fetched';
      /** The run read the remote catalog; or why not (reason, message). */
      failure?: { reason: ImportFetchedReason; message: string };
      origin?: string;
      digest?: string;
      catalogs?: number;
      imported: number;
      stale: number;
      refused: readonly RefusedEntry[];
      configMaps: number;
    };

export interface StatusInput {
  generation: number;
  previous: CatalogImportStatus | undefined;
  run: RunSummary;
  now: Date;
  /** When the remote catalog last verified, if ever (ms). */
  lastSuccess?: number;
  maxStalenessMs: number;
}

const refusedLine = (r: RefusedEntry) => `${r.what}: ${r.reason}: ${r.message}`.slice(0, 1024);

function refusedCounts(refused: readonly RefusedEntry[]): Partial<Record<ImportRefusalReason, number>> {
  const out: Partial<Record<ImportRefusalReason, number>> = {};
  for (const r of refused) out[r.reason] = (out[r.reason] ?? 0) + 1;
  return out;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The status after a run; `changed` says whether it must be written. */
export function importStatus(input: StatusInput): { status: CatalogImportStatus; changed: boolean } {
  const { generation, previous, run, now } = input;
  const conditions: ImportCondition[] = [];
  const status: CatalogImportStatus = { observedGeneration: generation };
  if (run.kind === 'invalid') {
    conditions.push({
      type: 'Accepted',
      status: 'False',
      observedGeneration: generation,
      reason: 'InvalidSpec',
      message: run.message,
    });
    conditions.push({
      type: 'Fetched',
      status: 'Unknown',
      observedGeneration: generation,
      reason: 'Pending',
      message: 'not fetched: the spec is not accepted',
    });
  } else if (run.kind === 'untrusted') {
    conditions.push({
      type: 'Accepted',
      status: 'False',
      observedGeneration: generation,
      reason: 'TrustPolicyUnavailable',
      message: `${run.message}; nothing can be verified (${plural(run.stale, 'entry')} kept until spec.maxStaleness)`,
    });
    conditions.push({
      type: 'Fetched',
      status: 'Unknown',
      observedGeneration: generation,
      reason: 'Pending',
      message: 'not fetched: the trust policy cannot be used',
    });
    Object.assign(status, { imported: run.imported, stale: run.stale });
  } else {
    conditions.push({
      type: 'Accepted',
      status: 'True',
      observedGeneration: generation,
      reason: 'Valid',
      message: 'the spec is valid and its trust policy loaded',
    });
    const refused = refusedCounts(run.refused);
    const refusedTotal = run.refused.length;
    if (run.failure) {
      const kept =
        run.stale > 0
          ? `; ${plural(run.stale, 'entry')} kept from the last success until spec.maxStaleness after it`
          : '';
      conditions.push({
        type: 'Fetched',
        status: 'False',
        observedGeneration: generation,
        reason: run.failure.reason,
        message: `${run.failure.message}${kept}`,
      });
    } else {
      const parts = [`${plural(run.imported, 'entry')} imported`];
      if (refusedTotal) parts.push(`${refusedTotal} refused`);
      if (run.stale) parts.push(`${run.stale} kept stale`);
      conditions.push({
        type: 'Fetched',
        status: 'True',
        observedGeneration: generation,
        reason: 'Fetched',
        message: `${parts.join(', ')} from ${plural(run.catalogs ?? 1, 'catalog')}`,
      });
    }
    Object.assign(status, {
      ...(run.origin ? { origin: run.origin } : {}),
      imported: run.imported,
      stale: run.stale,
      ...(refusedTotal
        ? { refused, refusedEntries: run.refused.slice(0, MAX_REFUSED_SHOWN).map(refusedLine) }
        : {}),
      ...(run.catalogs !== undefined ? { catalogs: run.catalogs } : {}),
      ...(run.digest ? { digest: run.digest } : previous?.digest ? { digest: previous.digest } : {}),
      configMaps: run.configMaps,
    });
  }
  const inputs: ConditionInput[] = [...conditions];
  inputs.push(deriveReady(IMPORT_READINESS, inputs, generation));
  status.conditions = setConditions(
    (previous?.conditions as Condition[] | undefined) ?? [],
    inputs,
    now,
    IMPORT_CONDITION_TYPES,
  );
  if (run.kind === 'invalid') {
    // Nothing was fetched: what the last run said stays.
    for (const k of ['origin', 'imported', 'stale', 'digest', 'configMaps'] as const)
      if (previous?.[k] !== undefined) (status as Record<string, unknown>)[k] = previous[k];
  }

  // Times: carried over unless something else changed or the heartbeat is due.
  const { lastFetchTime: _f, lastSuccessTime: _s, ...before } = previous ?? {};
  const contentChanged = sortedJson(before) !== sortedJson(status);
  const previousSuccess = previous?.lastSuccessTime ? Date.parse(previous.lastSuccessTime) : undefined;
  const heartbeatDue =
    input.lastSuccess !== undefined &&
    (previousSuccess === undefined || input.lastSuccess - previousSuccess >= input.maxStalenessMs / 2);
  const writeTimes = contentChanged || heartbeatDue;
  const fetched = run.kind === 'fetched';
  if (writeTimes) {
    if (fetched) status.lastFetchTime = formatTime(now);
    else if (previous?.lastFetchTime) status.lastFetchTime = previous.lastFetchTime;
    if (input.lastSuccess !== undefined) status.lastSuccessTime = formatTime(new Date(input.lastSuccess));
  } else {
    if (previous?.lastFetchTime) status.lastFetchTime = previous.lastFetchTime;
    if (previous?.lastSuccessTime) status.lastSuccessTime = previous.lastSuccessTime;
  }
  return { status, changed: writeTimes };
}

export interface PlannedEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  action: string;
  message: string;
}

/** The most entry refusals reported as Events in one run; the rest are summed up in one more. */
export const MAX_REFUSAL_EVENTS = 10;

/**
 * The Events of a run: the Fetched condition's change of state (a failure once per distinct
 * problem, the recovery once), and each entry refused for a reason it was not refused for before
 * (`known`: the refusals already reported, updated in place).
 */
type ConditionView = { type: string; status: string; reason: string; message: string };

export function importEvents(
  before: readonly ConditionView[] | undefined,
  after: readonly ConditionView[] | undefined,
  refused: readonly RefusedEntry[],
  known: Set<string>,
): PlannedEvent[] {
  const events: PlannedEvent[] = [];
  const find = (list: readonly ConditionView[] | undefined, type: string) =>
    list?.find((c) => c.type === type);
  const [b, a] = [find(before, 'Fetched'), find(after, 'Fetched')];
  const acc = find(after, 'Accepted');
  const accBefore = find(before, 'Accepted');
  if (acc?.status === 'False' && (accBefore?.reason !== acc.reason || accBefore?.message !== acc.message))
    events.push({ type: 'Warning', reason: acc.reason, action: 'Validate', message: acc.message });
  if (a?.status === 'False' && (b?.status !== 'False' || b.reason !== a.reason))
    events.push({ type: 'Warning', reason: a.reason, action: 'Fetch', message: a.message });
  if (a?.status === 'True' && b?.status === 'False')
    events.push({ type: 'Normal', reason: 'Fetched', action: 'Fetch', message: a.message });
  const now = new Set(refused.map((r) => `${r.what}\u0000${r.reason}`));
  const fresh = refused.filter((r) => !known.has(`${r.what}\u0000${r.reason}`));
  for (const r of fresh.slice(0, MAX_REFUSAL_EVENTS))
    events.push({ type: 'Warning', reason: r.reason, action: 'Import', message: refusedLine(r) });
  if (fresh.length > MAX_REFUSAL_EVENTS)
    events.push({
      type: 'Warning',
      reason: 'Refused',
      action: 'Import',
      message: `${fresh.length - MAX_REFUSAL_EVENTS} more entries refused (status.refused counts them by reason)`,
    });
  known.clear();
  for (const k of now) known.add(k);
  return events;
}
