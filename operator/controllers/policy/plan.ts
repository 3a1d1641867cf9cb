/**
 * The pure part of the policy controller (controller.ts): a policy's key, what the engine knows
 * of a cached AgentCard (its subject), the policy's counts over the cards it selects, the
 * ValidatingAdmissionPolicy and binding it generates (with what ties them to it), whether a live
 * one has drifted, and the policy's status.
 *
 * Decisions:
 * - **Invalid policy**: checked whole (../../policy/parse.ts). Nothing of an invalid version is
 *   used: no admission object is created or changed, no card is judged. An admission policy
 *   generated from its last valid version is kept (never lose the last good state: a typo in an
 *   Enforce policy must not switch its enforcement off); the Ready condition says so. Deleting
 *   the policy deletes it.
 * - **What ties a generated object to its policy**: the POLICY_LABEL (the cache's selector) and
 *   the POLICY_REF_ANNOTATION (the policy's key, read back at start to delete orphans). A
 *   ClusterAgentPolicy is also their controller ownerReference, so the garbage collector removes
 *   them even while the operator is not running. An AgentPolicy cannot own a cluster-scoped
 *   object: the operator deletes them when it sees the policy gone, at once or at its next start.
 *   No finalizer: a policy must stay deletable when the operator is off or the feature disabled.
 * - **Facts**: a card's trust and readiness facts come from its status, and only when that
 *   status describes its current generation; anything else is not known, so the rule needing it
 *   is "not evaluated", never a pass.
 */
import { API_VERSION, CLUSTER_POLICY_KIND, GROUP, POLICY_KIND, type PolicyKind } from '../../api/names.ts';
import type { AgentCardObject } from '../../api/objects.ts';
import { formatProblem, type Problem } from '../../card/problem.ts';
import { admissionObjects, VALIDATION_ACTIONS } from '../../policy/cel.ts';
import { evaluatePolicy, selects, type PolicyResult, type Subject } from '../../policy/evaluate.ts';
import { policyRef, POLICY_CONDITION_TYPES, type Policy, type PolicyStatus } from '../../policy/resource.ts';
import { cardFacts, type CardStatusView } from '../../policy/card-facts.ts';
import { getCondition, setConditions, type ConditionInput } from '../../runtime/conditions.ts';
import type { Condition } from '../../runtime/condition-types.ts';
import { sortedJson } from '../../runtime/sorted-json.ts';

/** The annotation of a generated object naming its policy's key (`AgentPolicy/ns/name`). */
export const POLICY_REF_ANNOTATION = `${GROUP}/policy-ref`;

// ---- keys -------------------------------------------------------------------------------------

export interface PolicyRefParts {
  kind: PolicyKind;
  /** '' for a ClusterAgentPolicy. */
  namespace: string;
  name: string;
}

export const policyKey = (r: PolicyRefParts): string => `${r.kind}/${r.namespace}/${r.name}`;

export function parsePolicyKey(key: string): PolicyRefParts | undefined {
  const [kind, namespace, ...rest] = key.split('/');
  if ((kind !== POLICY_KIND && kind !== CLUSTER_POLICY_KIND) || namespace === undefined || !rest.length)
    return undefined;
  return { kind, namespace, name: rest.join('/') };
}

// ---- the cards as the engine sees them (../../policy/card-facts.ts) -----------------------------

export { cardFacts, cardSubject } from '../../policy/card-facts.ts';

/** What the engine reads of a card: a change of anything else judges no policy again. */
export function cardFingerprint(card: AgentCardObject & { metadata: { labels?: unknown } }): string {
  const status = card.status as CardStatusView | undefined;
  return sortedJson({
    labels: card.metadata.labels ?? {},
    generation: card.metadata.generation ?? 0,
    facts: cardFacts(card),
    observed: status?.observedGeneration ?? null,
  });
}

// ---- judging the cards a policy selects -------------------------------------------------------

export interface CardFinding {
  /** "namespace/name" of the AgentCard. */
  card: string;
  rule: string;
  /** "path: detail" of each violation. */
  violations: string[];
}

export interface PolicyCounts {
  matched: number;
  compliant: number;
  failing: number;
  notEvaluated: number;
  /** Rule name → AgentCards failing it (every rule of the policy, 0 included). */
  violationsByRule: Map<string, number>;
  /** Each failing (card, rule), in the cards' order. */
  findings: CardFinding[];
}

/** The policy's verdict on every card it selects: the status counts, the metric, the Events. */
export function judgeCards(policy: Policy, subjects: Iterable<Subject>): PolicyCounts {
  const counts: PolicyCounts = {
    matched: 0,
    compliant: 0,
    failing: 0,
    notEvaluated: 0,
    violationsByRule: new Map(policy.spec.rules.map((r) => [r.name, 0])),
    findings: [],
  };
  for (const subject of subjects) {
    if (!selects(policy, subject)) continue;
    counts.matched += 1;
    const result: PolicyResult = evaluatePolicy(policy, subject);
    if (result.verdict === 'Pass') counts.compliant += 1;
    else if (result.verdict === 'NotEvaluated') counts.notEvaluated += 1;
    else counts.failing += 1;
    for (const r of result.rules) {
      if (r.verdict !== 'Fail') continue;
      counts.violationsByRule.set(r.rule, (counts.violationsByRule.get(r.rule) ?? 0) + 1);
      counts.findings.push({
        card: `${subject.namespace}/${subject.name}`,
        rule: r.rule,
        violations: r.violations.map((v) => `${v.path}: ${v.detail}`),
      });
    }
  }
  return counts;
}

// ---- the generated admission objects ----------------------------------------------------------

export interface PolicyOwner {
  kind: PolicyKind;
  name: string;
  uid: string;
}

export interface DesiredAdmission {
  /** Undefined: no rule of the policy is checkable at admission (a live one is deleted). */
  policy?: Record<string, unknown> & { metadata: { name: string } };
  binding?: Record<string, unknown> & { metadata: { name: string } };
}

/**
 * The ValidatingAdmissionPolicy and binding of a valid policy (../../policy/cel.ts), tied to it by
 * the annotation and, for a ClusterAgentPolicy, a controller ownerReference.
 */
export function desiredAdmission(policy: Policy, owner: PolicyOwner): DesiredAdmission {
  const generated = admissionObjects(policy);
  const key = policyKey({ kind: policy.kind, namespace: policy.namespace ?? '', name: policy.name });
  const tie = (obj: Record<string, unknown> | undefined) => {
    if (!obj) return undefined;
    const metadata = obj.metadata as { name: string; labels?: Record<string, string> };
    return {
      ...obj,
      metadata: {
        ...metadata,
        annotations: { [POLICY_REF_ANNOTATION]: key },
        ...(owner.kind === CLUSTER_POLICY_KIND
          ? {
              ownerReferences: [
                {
                  apiVersion: API_VERSION,
                  kind: owner.kind,
                  name: owner.name,
                  uid: owner.uid,
                  controller: true,
                },
              ],
            }
          : {}),
      },
    };
  };
  return { policy: tie(generated.policy), binding: tie(generated.binding) };
}

const isEmpty = (v: unknown) =>
  v === undefined ||
  v === null ||
  (Array.isArray(v) && v.length === 0) ||
  (typeof v === 'object' && !Array.isArray(v) && Object.keys(v as object).length === 0);

/**
 * Whether every field the operator sets is in `live` with the same value. The API server adds
 * defaults (matchPolicy, scopes...) that are not drift; an empty map or list the operator sets
 * may be stored as absent. Lists must have the same length (a validation added by hand is drift).
 */
export function containsDesired(want: unknown, live: unknown): boolean {
  if (isEmpty(want)) return isEmpty(live) || want === live;
  if (Array.isArray(want)) {
    return (
      Array.isArray(live) && live.length === want.length && want.every((w, i) => containsDesired(w, live[i]))
    );
  }
  if (typeof want === 'object') {
    if (!live || typeof live !== 'object' || Array.isArray(live)) return false;
    return Object.entries(want as Record<string, unknown>).every(([k, v]) =>
      containsDesired(v, (live as Record<string, unknown>)[k]),
    );
  }
  return want === live;
}

/** A generated object as far as drift goes. */
export interface GeneratedShape {
  metadata?: object;
  spec?: unknown;
}

/** Whether a live generated object differs from the desired one (spec, labels, annotation, owner). */
export function admissionDrift(live: GeneratedShape, want: GeneratedShape): boolean {
  type Meta = { labels?: unknown; annotations?: unknown; ownerReferences?: unknown };
  const l = (live.metadata ?? {}) as Meta;
  const w = (want.metadata ?? {}) as Meta;
  return !(
    containsDesired(want.spec, live.spec) &&
    containsDesired(w.labels, l.labels) &&
    containsDesired(w.annotations, l.annotations) &&
    containsDesired(w.ownerReferences ?? [], l.ownerReferences ?? [])
  );
}

// ---- status -----------------------------------------------------------------------------------

/** How writing the admission objects ended. */
export type AdmissionOutcome =
  | { ok: true; names: string[] }
  | {
      ok: false;
      reason: 'AdmissionPolicyNotWritten' | 'AdmissionPolicyConflict' | 'AdmissionPolicyUnsupported';
      message: string;
    };

const MAX_PROBLEMS_IN_MESSAGE = 10;

/** One line of the problems of an invalid policy (the first ten; the count says how many). */
export function problemsMessage(problems: readonly Problem[]): string {
  const shown = problems.slice(0, MAX_PROBLEMS_IN_MESSAGE).map(formatProblem).join('; ');
  const more =
    problems.length > MAX_PROBLEMS_IN_MESSAGE
      ? `; and ${problems.length - MAX_PROBLEMS_IN_MESSAGE} more`
      : '';
  return `invalid policy (${problems.length} problem${problems.length === 1 ? '' : 's'}), nothing of it is applied: ${shown}${more}`;
}

export interface StatusInput {
  generation: number;
  previous: PolicyStatus | undefined;
  now: Date;
}

export type PolicyControllerStatus = Required<Pick<PolicyStatus, 'observedGeneration' | 'conditions'>> &
  Pick<PolicyStatus, 'matched' | 'compliant' | 'failing' | 'notEvaluated'>;

const ORDER = POLICY_CONDITION_TYPES;

function withConditions(
  input: StatusInput,
  conditions: readonly ConditionInput[],
): PolicyControllerStatus['conditions'] {
  return setConditions(
    (input.previous?.conditions ?? []) as Condition[],
    conditions,
    input.now,
    ORDER,
  ) as PolicyControllerStatus['conditions'];
}

/**
 * The status of an invalid policy: Accepted and Ready False naming the problems, no counts (no
 * card was judged). `keptAdmission`: the names of the admission objects of its last valid version.
 */
export function invalidStatus(
  input: StatusInput,
  problems: readonly Problem[],
  keptAdmission: readonly string[],
): PolicyControllerStatus {
  const message = problemsMessage(problems);
  const kept = keptAdmission.length
    ? `the ValidatingAdmissionPolicy ${keptAdmission[0]} generated from its last valid version stays in force until the policy is fixed or deleted`
    : 'no admission policy is generated';
  const g = input.generation;
  return {
    observedGeneration: g,
    conditions: withConditions(input, [
      { type: 'Accepted', status: 'False', observedGeneration: g, reason: 'InvalidPolicy', message },
      {
        type: 'Ready',
        status: 'False',
        observedGeneration: g,
        reason: 'InvalidPolicy',
        message: `the policy is not valid (see Accepted); ${kept}`,
      },
    ]),
  };
}

/** The status of a valid policy: Accepted, Ready from the admission outcome, and the counts. */
export function validStatus(
  input: StatusInput,
  policy: Policy,
  admission: AdmissionOutcome,
  counts: PolicyCounts,
): PolicyControllerStatus {
  const g = input.generation;
  const actions = VALIDATION_ACTIONS[policy.spec.mode].join(', ');
  const ready: ConditionInput = admission.ok
    ? admission.names.length
      ? {
          type: 'Ready',
          status: 'True',
          observedGeneration: g,
          reason: 'AdmissionPolicyGenerated',
          message: `ValidatingAdmissionPolicy ${admission.names[0]} and its binding check AgentCards at admission (validationActions: ${actions}); the other rules are judged by the operator`,
        }
      : {
          type: 'Ready',
          status: 'True',
          observedGeneration: g,
          reason: 'NoAdmissionRules',
          message: 'no rule of this policy can be checked at admission; the operator judges them all',
        }
    : {
        type: 'Ready',
        status: 'False',
        observedGeneration: g,
        reason: admission.reason,
        message: admission.message,
      };
  return {
    observedGeneration: g,
    conditions: withConditions(input, [
      {
        type: 'Accepted',
        status: 'True',
        observedGeneration: g,
        reason: 'Valid',
        message: `${policyRef(policy)}: ${policy.spec.rules.length} rule${policy.spec.rules.length === 1 ? '' : 's'}, mode ${policy.spec.mode}`,
      },
      ready,
    ]),
    matched: counts.matched,
    compliant: counts.compliant,
    failing: counts.failing,
    notEvaluated: counts.notEvaluated,
  };
}

const OWNED_FIELDS = ['observedGeneration', 'conditions', 'matched', 'compliant', 'failing', 'notEvaluated'];

/** The fields of a status this controller owns (for comparing with what it would write). */
export function ownedPolicyStatus(status: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (status && typeof status === 'object')
    for (const f of OWNED_FIELDS) {
      const v = (status as Record<string, unknown>)[f];
      if (v !== undefined && v !== null) out[f] = v;
    }
  return out;
}

export const statusChanged = (before: unknown, after: PolicyControllerStatus): boolean =>
  sortedJson(ownedPolicyStatus(before)) !== sortedJson(ownedPolicyStatus(after));

/** The Accepted condition of a status (for the events of a change). */
export const acceptedOf = (status: PolicyStatus | undefined) =>
  getCondition(status?.conditions as Condition[] | undefined, 'Accepted');
