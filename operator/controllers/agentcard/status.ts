/**
 * The part of AgentCard.status the controller owns, and the comparison that decides whether a
 * status write is needed. The controller applies exactly these fields with server-side apply, so
 * fields other writers might add are neither copied nor removed.
 */
import type { AgentCardStatus } from '../../card/resource.ts';
import type { Condition } from '../../runtime/condition-types.ts';
import { sortedJson } from '../../runtime/sorted-json.ts';

export const OWNED_STATUS_FIELDS = [
  'observedGeneration',
  'conditions',
  'card',
  'signatures',
  'interfaces',
  'reachableInterfaces',
  'audiences',
  'serving',
  'source',
  'history',
] as const;

/** The controller-owned part of AgentCard.status (the schema's fields, conditions always with observedGeneration). */
export type ControllerStatus = Omit<
  Pick<AgentCardStatus, (typeof OWNED_STATUS_FIELDS)[number]>,
  'conditions'
> & {
  conditions?: Condition[];
};
export type CardStatus = NonNullable<AgentCardStatus['card']>;

/** Picks the controller-owned fields of a live status (anything else is ignored). */
export function ownedStatus(status: unknown): ControllerStatus {
  const out: Record<string, unknown> = {};
  if (status && typeof status === 'object') {
    for (const field of OWNED_STATUS_FIELDS) {
      const value = (status as Record<string, unknown>)[field];
      if (value !== undefined && value !== null) out[field] = value;
    }
  }
  return out as ControllerStatus;
}

/** Whether applying `desired` would change the controller-owned part of `live`. */
export function statusChanged(live: unknown, desired: ControllerStatus): boolean {
  return sortedJson(ownedStatus(live)) !== sortedJson(ownedStatus(desired));
}

/** The server-side apply body for the status subresource. */
export function statusApplyBody(
  ref: { apiVersion: string; kind: string; name: string; namespace: string },
  status: ControllerStatus,
): Record<string, unknown> {
  return {
    apiVersion: ref.apiVersion,
    kind: ref.kind,
    metadata: { name: ref.name, namespace: ref.namespace },
    status: ownedStatus(status),
  };
}
