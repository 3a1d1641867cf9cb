/**
 * The policies in an AgentCard's own reconcile (docs/policy.md "In reconcile"), without any I/O:
 * the card about to be published is judged by the valid AgentPolicies and ClusterAgentPolicies
 * that select it, with the facts this reconcile has (the rendered cards, the signing
 * certificates' identities of the signature about to be published, an adopted card's source
 * signature, Ready). The verdict is the PolicyCompliant condition, a Warning Event per failing
 * rule, and, when a rule of an Enforce policy fails, a hold: the card is not published and the
 * last good card stays served, as for a held breaking change.
 *
 * Two kinds of rule never hold publishing: `reachability` (readyBeforeListed is about catalogs
 * listing the card, and holding an unready card would keep it from ever becoming Ready) and
 * `callers` (a network rule, not a property of the card; it is left out of the condition).
 */
import {
  evaluatePolicies,
  mergeResults,
  selects,
  type Facts,
  type Merged,
  type PolicyResult,
  type Subject,
} from '../../policy/evaluate.ts';
import type { Policy } from '../../policy/resource.ts';
import { signerFacts } from '../../policy/signer.ts';
import { specCardViews } from '../../policy/subject.ts';
import type { AgentCardSpec } from '../../card/resource.ts';
import type { AgentCard } from '../../card/schema.ts';
import type { SigningKey } from '../../card/sign.ts';
import type { CardCondition } from './conditions.ts';
import type { PlannedEvent } from './events.ts';

/** The policies a reconcile judges a card by (--policies); undefined: the feature is off. */
export interface PolicyInput {
  /** The valid (Accepted) policies of the card's namespace and the cluster. */
  policies: readonly Policy[];
  /** The card's namespace labels (a ClusterAgentPolicy's namespaceSelector); unknown: none. */
  namespaceLabels?: Readonly<Record<string, string>>;
}

/** A condition message stays readable in `kubectl describe`: at most this many characters. */
export const MAX_POLICY_MESSAGE = 1024;

/**
 * What the signature about to be published says of its signer: only an identity whose chain
 * verifies to its Secret's ca.crt counts (operator/policy/signer.ts).
 */
export function signingFacts(
  keys: readonly SigningKey[],
  now: Date,
): Pick<Facts, 'signed' | 'signerIdentities' | 'unverifiedSigners'> {
  return signerFacts(keys, now);
}

/**
 * The policies that select the card this reconcile is about to publish, and the engine's subject
 * of it: its cards are rendered for the engine only when a policy selects it.
 */
export function publishSubject(
  policies: readonly Policy[],
  args: {
    name: string;
    namespace: string;
    labels?: Readonly<Record<string, string>>;
    namespaceLabels?: Readonly<Record<string, string>>;
    adopted: boolean;
    spec: AgentCardSpec;
    card: AgentCard;
    /** Bytes of the served (signed) default card. */
    bytes: number;
    facts: Facts;
  },
): { policies: Policy[]; subject: Subject } {
  const subject: Subject = {
    name: args.name,
    namespace: args.namespace,
    labels: args.labels ?? {},
    ...(args.namespaceLabels ? { namespaceLabels: args.namespaceLabels } : {}),
    adopted: args.adopted,
    facts: args.facts,
  };
  const selecting = policies.filter((p) => selects(p, subject));
  if (selecting.length === 0) return { policies: [], subject };
  const views = specCardViews(args.spec, args.card);
  if (views[0]) views[0] = { ...views[0], bytes: args.bytes };
  return { policies: selecting, subject: { ...subject, cards: views } };
}

/** The verdicts of the policies selecting the card, callers rules left out (none: no policy). */
export function judgeCard(policies: readonly Policy[], subject: Subject): PolicyResult[] {
  return evaluatePolicies(policies, subject).map((r) => ({
    ...r,
    rules: r.rules.filter((rule) => rule.kind !== 'callers'),
  }));
}

/** Why the card is held (an Enforce rule that is not about reachability fails); none: publish. */
export function enforceHold(results: readonly PolicyResult[]): string | undefined {
  const merged = mergeResults(
    results.map((r) => ({ ...r, rules: r.rules.filter((rule) => rule.kind !== 'reachability') })),
  );
  if (merged.action !== 'Enforce') return undefined;
  const enforced = merged.failures.filter((f) => f.mode === 'Enforce');
  return bounded(`held by policy: ${enforced.map(describeFailure).join('; ')}`, MAX_POLICY_MESSAGE / 2);
}

type Failure = Merged['failures'][number];

function describeFailure(f: Failure): string {
  const first = f.failures.find((p) => p.mode === f.mode) ?? f.failures[0]!;
  const violation = first.violations[0];
  const more = first.violations.length > 1 ? ` (and ${first.violations.length - 1} more)` : '';
  return `${first.policy}, rule ${f.rule} (${f.mode}): ${first.message}${violation ? ` [${violation.path}: ${violation.detail}${more}]` : ''}`;
}

function bounded(message: string, max: number): string {
  return message.length <= max ? message : `${message.slice(0, max - 1)}…`;
}

/** The PolicyCompliant condition for the verdicts (none: no policy selects the card). */
export function policyCondition(
  results: readonly PolicyResult[],
): Omit<Extract<CardCondition, { type: 'PolicyCompliant' }>, 'observedGeneration'> | undefined {
  if (results.length === 0) return undefined;
  const merged = mergeResults(results);
  if (merged.failures.length > 0) {
    const listed = merged.failures.map(describeFailure);
    const enforced = merged.action === 'Enforce';
    return {
      type: 'PolicyCompliant',
      status: 'False',
      // PolicyEnforced: a rule of an Enforce policy fails, so no catalog lists the card (and,
      // unless the rule is readyBeforeListed, it is not published either).
      reason: enforced ? 'PolicyEnforced' : 'PolicyViolation',
      message: bounded(
        `fails ${merged.failures.length} rule${merged.failures.length > 1 ? 's' : ''}: ${listed.join('; ')}`,
        MAX_POLICY_MESSAGE,
      ),
    };
  }
  if (merged.notEvaluated.length > 0) {
    const listed = merged.notEvaluated.map((n) => `${n.policy}, rule ${n.rule}: ${n.reason}`);
    return {
      type: 'PolicyCompliant',
      status: 'Unknown',
      reason: 'RulesNotEvaluated',
      message: bounded(`not evaluated yet: ${listed.join('; ')}`, MAX_POLICY_MESSAGE),
    };
  }
  return {
    type: 'PolicyCompliant',
    status: 'True',
    reason: 'Compliant',
    message: `complies with ${results.map((r) => r.policy).join(', ')}`.slice(0, MAX_POLICY_MESSAGE),
  };
}

/**
 * A Warning Event per failing rule not reported before: the previous condition's message names
 * each failing rule as "<policy>, rule <name> (", so a rule already listed is not reported again.
 */
export function policyEvents(results: readonly PolicyResult[], previousMessage?: string): PlannedEvent[] {
  const merged = mergeResults(results);
  return merged.failures
    .filter((f) => {
      const first = f.failures.find((p) => p.mode === f.mode) ?? f.failures[0]!;
      return !previousMessage?.includes(`${first.policy}, rule ${f.rule} (`);
    })
    .map((f) => ({
      type: 'Warning' as const,
      reason: 'PolicyViolation',
      action: 'Evaluate',
      message: bounded(describeFailure(f), MAX_POLICY_MESSAGE),
    }));
}
