/**
 * The status shapes the controller writes, derived from the AgentCard resource schema
 * (operator/card/resource.ts). The controller always sets a condition's observedGeneration.
 */
import type { Condition as ResourceCondition } from '../card/resource.ts';

export type Condition = ResourceCondition & { observedGeneration: number };
export type ConditionStatus = ResourceCondition['status'];
