/**
 * AgentCard status conditions (metav1.Condition shape) and the one rule that derives `Ready`.
 *
 * `Ready` is True exactly when, for the AgentCard's current metadata.generation:
 * - `Accepted` is True (spec.card passed the card engine's validation), and
 * - `Signed` is True, or `Signed` is False with reason `SigningNotConfigured` (the spec asks for
 *   an unsigned card; the Signed column then truthfully shows False), and
 * - `Published` is True (the ConfigMap holds the bytes rendered from this generation), and
 * - `InterfacesReachable` is True, or it is Unknown with reason `ProbesDisabled` (probing is off
 *   for this card or for the whole operator; nothing was checked, so nothing is claimed).
 * Otherwise `Ready` is False when one of them is False (reason and message copied from the first
 * such condition in the order above) and Unknown when none is False but one is still Unknown
 * (for example `InterfacesReachable=Unknown` with reason `ProbesPending` before the first probe).
 */
import type { Condition, ConditionStatus } from './types.ts';

export const CONDITION_ORDER = ['Accepted', 'Signed', 'Published', 'InterfacesReachable', 'Ready'] as const;
export type ConditionType = (typeof CONDITION_ORDER)[number];
type Prerequisite = Exclude<ConditionType, 'Ready'>;
const PREREQUISITES: readonly Prerequisite[] = ['Accepted', 'Signed', 'Published', 'InterfacesReachable'];

/** A condition as a reconcile computes it; `setCondition` stamps lastTransitionTime. */
export type ConditionInput = Omit<Condition, 'lastTransitionTime'>;

/** metav1.Time: RFC 3339 in UTC with whole seconds, as the API server prints it. */
export function formatTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export function getCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/**
 * Returns a new list with `next` in place of the condition of the same type. The
 * lastTransitionTime moves only when the status changes (reason or message changes keep it),
 * as the metav1.Condition contract says. Known types are kept in CONDITION_ORDER.
 */
export function setCondition(conditions: readonly Condition[], next: ConditionInput, now: Date): Condition[] {
  const previous = getCondition(conditions, next.type);
  const lastTransitionTime =
    previous && previous.status === next.status ? previous.lastTransitionTime : formatTime(now);
  const updated: Condition = { ...next, lastTransitionTime };
  const others = conditions.filter((c) => c.type !== next.type);
  return sortConditions([...others, updated]);
}

function rank(type: string): number {
  const i = (CONDITION_ORDER as readonly string[]).indexOf(type);
  return i === -1 ? CONDITION_ORDER.length : i;
}

export function sortConditions(conditions: Condition[]): Condition[] {
  return conditions.sort((a, b) => rank(a.type) - rank(b.type) || a.type.localeCompare(b.type));
}

/** Whether a prerequisite of Ready is met (see the module comment for the two exemptions). */
export function satisfiesReady(c: ConditionInput | undefined, generation: number): boolean {
  if (!c || c.observedGeneration < generation) return false;
  if (c.status === 'True') return true;
  if (c.type === 'Signed' && c.status === 'False' && c.reason === 'SigningNotConfigured') return true;
  if (c.type === 'InterfacesReachable' && c.status === 'Unknown' && c.reason === 'ProbesDisabled')
    return true;
  return false;
}

/** Derives the Ready condition from the four prerequisites (by type) for `generation`. */
export function deriveReady(conditions: readonly ConditionInput[], generation: number): ConditionInput {
  const byType = new Map(conditions.map((c) => [c.type, c]));
  const blocking = PREREQUISITES.map((t) => ({ type: t, c: byType.get(t) })).filter(
    ({ c }) => !satisfiesReady(c, generation),
  );
  if (blocking.length === 0) {
    const signed = byType.get('Signed')?.status === 'True' ? 'signed' : 'unsigned (no spec.signing)';
    const probed =
      byType.get('InterfacesReachable')?.status === 'True' ? 'interfaces reachable' : 'interfaces not probed';
    return {
      type: 'Ready',
      status: 'True',
      observedGeneration: generation,
      reason: 'Ready',
      message: `accepted, ${signed}, published, ${probed}`,
    };
  }
  const firstFalse = blocking.find(({ c }) => c?.status === 'False');
  const pick = firstFalse ?? blocking[0]!;
  const status: ConditionStatus = firstFalse ? 'False' : 'Unknown';
  if (!pick.c) {
    return {
      type: 'Ready',
      status,
      observedGeneration: generation,
      reason: 'Reconciling',
      message: `${pick.type} is not evaluated yet`,
    };
  }
  if (pick.c.observedGeneration < generation && pick.c.status === 'True') {
    return {
      type: 'Ready',
      status: 'Unknown',
      observedGeneration: generation,
      reason: 'Reconciling',
      message: `${pick.type} still describes generation ${pick.c.observedGeneration}`,
    };
  }
  return {
    type: 'Ready',
    status,
    observedGeneration: generation,
    reason: pick.c.reason,
    message: `${pick.type}: ${pick.c.message}`,
  };
}
