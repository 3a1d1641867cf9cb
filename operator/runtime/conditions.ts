/**
 * Condition helpers every controller shares (metav1.Condition semantics), and the one rule that
 * derives `Ready` from a kind's prerequisites. Each kind states its readiness policy as a value
 * (ReadinessPolicy: its prerequisites in order, the non-True states that do not block, and the
 * words of the Ready=True message); `deriveReady` applies it.
 *
 * The rule: `Ready` is True exactly when every prerequisite is satisfied for the object's current
 * metadata.generation (True, or one of the policy's exempt states). Otherwise `Ready` is False
 * when a prerequisite is False (reason and message copied from the first such one in the policy's
 * order) and Unknown when none is False but one is still Unknown, missing, or True for an older
 * generation (reason `Reconciling`).
 */
import type { Condition, ConditionStatus } from './condition-types.ts';

/** A condition as a reconcile computes it; `setCondition` stamps lastTransitionTime. */
export type ConditionInput = Omit<Condition, 'lastTransitionTime'>;

/**
 * A condition of a kind whose reasons are typed per condition type (operator/api/reasons.ts):
 * `{ type: 'Signed', reason: 'SigningKeyNotFound' }` compiles, a misspelt reason does not.
 */
export type TypedCondition<Reasons> = {
  [T in keyof Reasons & string]: Omit<ConditionInput, 'type' | 'reason'> & { type: T; reason: Reasons[T] };
}[keyof Reasons & string];

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
 * lastTransitionTime moves only when the status changes (reason, message or observedGeneration
 * changes keep it), as the metav1.Condition contract says. Types in `order` come first, in that
 * order; any other type (another writer's) follows, by name.
 */
export function setCondition(
  conditions: readonly Condition[],
  next: ConditionInput,
  now: Date,
  order: readonly string[],
): Condition[] {
  const previous = getCondition(conditions, next.type);
  const lastTransitionTime =
    previous && previous.status === next.status ? previous.lastTransitionTime : formatTime(now);
  const updated: Condition = { ...next, lastTransitionTime };
  const others = conditions.filter((c) => c.type !== next.type);
  return sortConditions([...others, updated], order);
}

/** Sets each condition in turn (see setCondition). */
export function setConditions(
  conditions: readonly Condition[],
  next: readonly ConditionInput[],
  now: Date,
  order: readonly string[],
): Condition[] {
  let out = [...conditions];
  for (const c of next) out = setCondition(out, c, now, order);
  return out;
}

export function sortConditions(conditions: Condition[], order: readonly string[]): Condition[] {
  const rank = (type: string) => {
    const i = order.indexOf(type);
    return i === -1 ? order.length : i;
  };
  return conditions.sort((a, b) => rank(a.type) - rank(b.type) || a.type.localeCompare(b.type));
}

/**
 * The condition a reconcile carries over unchanged (the previous one, with its own
 * observedGeneration), or `fallback` when there is none. Its reason is whatever was written before,
 * possibly by an older operator: hence a plain ConditionInput, not a typed one.
 */
export function keepCondition(previous: Condition | undefined, fallback: ConditionInput): ConditionInput {
  if (!previous) return fallback;
  return {
    type: previous.type,
    status: previous.status,
    observedGeneration: previous.observedGeneration ?? 0,
    reason: previous.reason,
    message: previous.message,
  };
}

/** A kind's readiness policy: what `Ready` waits for, and what it says when all is well. */
export interface ReadinessPolicy {
  /** The prerequisites of Ready, in the order their problems are reported. */
  prerequisites: readonly string[];
  /** A non-True prerequisite that does not block Ready (e.g. signing not configured). */
  exempt: (c: ConditionInput) => boolean;
  /** The message of Ready=True, from the prerequisites by type. */
  readyMessage: (byType: ReadonlyMap<string, ConditionInput>) => string;
}

/** Whether a prerequisite is met for `generation` under `policy`. */
export function satisfies(
  policy: ReadinessPolicy,
  c: ConditionInput | undefined,
  generation: number,
): boolean {
  if (!c || c.observedGeneration < generation) return false;
  return c.status === 'True' || policy.exempt(c);
}

/** Derives the Ready condition from the policy's prerequisites (by type) for `generation`. */
export function deriveReady(
  policy: ReadinessPolicy,
  conditions: readonly ConditionInput[],
  generation: number,
): ConditionInput {
  const byType = new Map(conditions.map((c) => [c.type, c]));
  const ready = (status: ConditionStatus, reason: string, message: string): ConditionInput => ({
    type: 'Ready',
    status,
    observedGeneration: generation,
    reason,
    message,
  });
  const blocking = policy.prerequisites
    .map((type) => ({ type, c: byType.get(type) }))
    .filter(({ c }) => !satisfies(policy, c, generation));
  if (blocking.length === 0) return ready('True', 'Ready', policy.readyMessage(byType));
  const firstFalse = blocking.find(({ c }) => c?.status === 'False');
  const pick = firstFalse ?? blocking[0]!;
  const status: ConditionStatus = firstFalse ? 'False' : 'Unknown';
  if (!pick.c) return ready(status, 'Reconciling', `${pick.type} is not evaluated yet`);
  if (pick.c.observedGeneration < generation && pick.c.status === 'True') {
    return ready(
      'Unknown',
      'Reconciling',
      `${pick.type} still describes generation ${pick.c.observedGeneration}`,
    );
  }
  return ready(status, pick.c.reason, `${pick.type}: ${pick.c.message}`);
}
