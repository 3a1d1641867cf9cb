/**
 * From probe results to the AgentCard's status.interfaces, reachableInterfaces and the
 * InterfacesReachable condition (pure: the clock is an argument). It also says whether the
 * change is worth an API write: only when a verdict, a reason or a certificate changes, or
 * when lastProbeTime would otherwise be older than `refreshAfterMs` (10 minutes), so that
 * healthy interfaces cost no steady-state writes.
 */
import type { AgentCardStatus, Condition } from '../card/resource.ts';
import type { ProbeReason, ProbeResult } from './types.ts';

/** One entry of status.interfaces[], from the resource schema, with the probe's own reasons. */
export type InterfaceStatus = Omit<NonNullable<AgentCardStatus['interfaces']>[number], 'reason'> & {
  reason: ProbeReason;
};

export type { Condition };

export const INTERFACES_REACHABLE = 'InterfacesReachable';
export const DEFAULT_REFRESH_AFTER_MS = 10 * 60_000;

export interface InterfacesStatusInput {
  /**
   * status.interfaces as last written to the API server (not the last computed value: when no
   * write happens, keep passing what is stored, so the 10-minute refresh counts from the write).
   */
  previous?: readonly InterfaceStatus[];
  /** The InterfacesReachable condition as last written. */
  previousCondition?: Condition;
  /** Results in spec.card.supportedInterfaces order. */
  results: readonly ProbeResult[];
  now: Date;
  /** metadata.generation of the AgentCard the results belong to. */
  generation?: number;
  /** Age of lastProbeTime that forces a write (default 10 minutes; Infinity: never). */
  refreshAfterMs?: number;
}

export interface InterfacesStatusOutput {
  interfaces: InterfaceStatus[];
  /** "reachable/total", Unsupported interfaces left out of both. */
  reachableInterfaces: string;
  condition: Condition;
  /** True when the status should be written to the API server. */
  writeNeeded: boolean;
}

const sameInterface = (a: { url: string; protocolBinding: string; protocolVersion: string }, b: typeof a) =>
  a.url === b.url && a.protocolBinding === b.protocolBinding && a.protocolVersion === b.protocolVersion;

export function nextInterfacesStatus(input: InterfacesStatusInput): InterfacesStatusOutput {
  const now = input.now.toISOString();
  const refreshAfterMs = input.refreshAfterMs ?? DEFAULT_REFRESH_AFTER_MS;
  const previous = input.previous ?? [];

  // Previous entries are matched by identity, not position, so reordering keeps history.
  const interfaces: InterfaceStatus[] = input.results.map((r) => {
    const prev = previous.find((p) => sameInterface(p, r));
    const changed = !prev || prev.reachable !== r.reachable || prev.reason !== r.reason;
    const entry: InterfaceStatus = {
      url: r.url,
      protocolBinding: r.protocolBinding,
      protocolVersion: r.protocolVersion,
      reachable: r.reachable,
      reason: r.reason,
      message: r.message,
      latencyMs: r.latencyMs,
      lastProbeTime: now,
      lastTransitionTime: changed ? now : prev.lastTransitionTime,
    };
    if (r.tlsNotAfter) entry.tlsNotAfter = r.tlsNotAfter;
    return entry;
  });

  const probed = interfaces.filter((i) => i.reason !== 'Unsupported');
  const up = probed.filter((i) => i.reachable);
  const unsupported = interfaces.length - probed.length;
  const reachableInterfaces = `${up.length}/${probed.length}`;
  const firstDown = probed.find((i) => !i.reachable);
  const note = unsupported ? `; ${unsupported} with a binding the probe cannot check` : '';
  const conditionCore: Omit<Condition, 'lastTransitionTime'> = firstDown
    ? {
        type: INTERFACES_REACHABLE,
        status: 'False',
        reason: firstDown.reason,
        message: `${reachableInterfaces} reachable${note}; ${firstDown.url} (${firstDown.protocolBinding} ${firstDown.protocolVersion}): ${firstDown.message}`,
      }
    : {
        type: INTERFACES_REACHABLE,
        status: 'True',
        reason: probed.length ? 'AllReachable' : 'NothingToProbe',
        message: `${reachableInterfaces} reachable${note}`,
      };
  if (input.generation !== undefined) conditionCore.observedGeneration = input.generation;
  const prevCond = input.previousCondition;
  const condition: Condition = {
    ...conditionCore,
    lastTransitionTime:
      prevCond && prevCond.status === conditionCore.status ? prevCond.lastTransitionTime : now,
  };

  const writeNeeded =
    previous.length !== interfaces.length ||
    interfaces.some((cur, i) => {
      const prev = previous[i]!;
      return (
        !sameInterface(prev, cur) ||
        prev.reachable !== cur.reachable ||
        prev.reason !== cur.reason ||
        prev.tlsNotAfter !== cur.tlsNotAfter ||
        !(input.now.getTime() - Date.parse(prev.lastProbeTime) < refreshAfterMs)
      );
    }) ||
    !prevCond ||
    prevCond.status !== condition.status ||
    prevCond.reason !== condition.reason ||
    prevCond.observedGeneration !== condition.observedGeneration;

  // Without a write the previous entries stay as they are (the caller keeps what it has).
  return { interfaces, reachableInterfaces, condition, writeNeeded };
}
