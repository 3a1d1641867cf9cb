/**
 * AgentCard status conditions (metav1.Condition shape) and the AgentCard's readiness policy; the
 * helpers and the rule that derives `Ready` are shared with the catalog controller
 * (../runtime/conditions.ts).
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
import type { CardReasons } from '../../api/reasons.ts';
import { CONDITION_TYPES } from '../../card/resource.ts';
import * as shared from '../../runtime/conditions.ts';
import type { ConditionInput, ReadinessPolicy, TypedCondition } from '../../runtime/conditions.ts';
import type { Condition } from '../../runtime/condition-types.ts';

export { formatTime, getCondition, keepCondition } from '../../runtime/conditions.ts';
export type { ConditionInput } from '../../runtime/conditions.ts';

export const CONDITION_ORDER = CONDITION_TYPES;
export type ConditionType = (typeof CONDITION_ORDER)[number];

/** An AgentCard condition with a reason its type can have (operator/api/reasons.ts). */
export type CardCondition = TypedCondition<CardReasons>;

/** Signing not configured and probes disabled are true statements that do not block Ready. */
export function cardExempt(c: ConditionInput): boolean {
  return (
    (c.type === 'Signed' && c.status === 'False' && c.reason === 'SigningNotConfigured') ||
    (c.type === 'InterfacesReachable' && c.status === 'Unknown' && c.reason === 'ProbesDisabled')
  );
}

export const CARD_READINESS: ReadinessPolicy = {
  prerequisites: ['Accepted', 'Signed', 'Published', 'InterfacesReachable'],
  exempt: cardExempt,
  readyMessage: (byType) => {
    const signed = byType.get('Signed')?.status === 'True' ? 'signed' : 'unsigned (no spec.signing)';
    const probed =
      byType.get('InterfacesReachable')?.status === 'True' ? 'interfaces reachable' : 'interfaces not probed';
    return `accepted, ${signed}, published, ${probed}`;
  },
};

/** setCondition in the AgentCard's condition order (../runtime/conditions.ts). */
export function setCondition(conditions: readonly Condition[], next: ConditionInput, now: Date): Condition[] {
  return shared.setCondition(conditions, next, now, CONDITION_ORDER);
}

/** The AgentCard's Ready condition from its four prerequisites (by type) for `generation`. */
export function deriveReady(conditions: readonly ConditionInput[], generation: number): ConditionInput {
  return shared.deriveReady(CARD_READINESS, conditions, generation);
}
