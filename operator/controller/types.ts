/**
 * The shapes the controller reads and writes.
 * TODO(card-engine): derive these from operator/card/resource.ts (AgentCardStatusSchema) once it
 * lands on main; until then they mirror the cross-team contract field by field.
 */
export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface Condition {
  type: string;
  status: ConditionStatus;
  observedGeneration: number;
  reason: string;
  message: string;
  lastTransitionTime: string;
}
