/**
 * The policy engine: given policies and one AgentCard (its rendered card or cards, and what is
 * known about it), which policies select it, and per policy and rule: Pass, Fail (with the JSON
 * path of each violation and the rule's message) or NotEvaluated (with why). Pure: the CLI judges
 * files with it offline, the policy controller will judge live AgentCards with it.
 *
 * A fact nobody knows is never taken as a pass: offline there is no signer identity, no source
 * signature result and no Ready condition, and the rules that need them are NotEvaluated. A rule
 * that both fails a known check and lacks another fact is Fail: one known violation is enough.
 */
import type { LabelSelector } from '../catalog/resource.ts';
import { matchesSelector } from '../catalog/selector.ts';
import { findInstructions } from '../card/instructions.ts';
import { formatPath, type PathSegment } from '../card/problem.ts';
import { serializeCard } from '../card/serialize.ts';
import { identityMatches } from '../card/x5c.ts';
import type { UnverifiedSigner } from '../signing/identity.ts';
import { CLUSTER_POLICY_KIND, POLICY_KIND } from '../api/names.ts';
import {
  expandIdentityPattern,
  MODES,
  policyRef,
  ruleKind,
  type CallersRule,
  type ContentRule,
  type Mode,
  type Policy,
  type Rule,
  type RuleKind,
  type TrustRule,
} from './resource.ts';

/** One card to judge: the default audience's, or another audience's, with how to name its paths. */
export interface CardView {
  /** "default" (spec.card) or the audience's name. */
  audience: string;
  /** The card as rendered (A2A 1.0 JSON); signatures included when it is the served card. */
  card: Record<string, unknown>;
  /** The JSON path, in the user's input, of a field of this card (`[]`: the card itself). */
  path(segments: readonly PathSegment[]): string;
  /** Bytes of the served card when known (default: its serialized form). */
  bytes?: number;
}

/** What is known about the AgentCard beyond its spec. `undefined`: not known (never a pass). */
export interface Facts {
  /** Whether the published card carries a signature. */
  signed?: boolean;
  /**
   * The identities (URI SANs) of the certificates that signed the published card, each proven
   * by a chain that verifies to the certificate's trust anchors (signer.ts).
   */
  signerIdentities?: readonly string[];
  /** Certificate signatures whose identity is not proven, and why: they match no pattern. */
  unverifiedSigners?: readonly UnverifiedSigner[];
  /** status.source.signature.result of an adopted card. */
  sourceSignature?: 'Verified' | 'Invalid' | 'Unsigned' | 'NotChecked';
  /** Whether the Ready condition is True. */
  ready?: boolean;
}

export interface Subject {
  name: string;
  namespace: string;
  labels?: Readonly<Record<string, string>>;
  namespaceLabels?: Readonly<Record<string, string>>;
  /** Whether the card is taken from the agent (spec.source). */
  adopted: boolean;
  /** The cards to judge; undefined when the card is not known (an adopted card, offline). */
  cards?: readonly CardView[];
  facts: Facts;
  /** Where a trust violation points (default `spec.signing`; a bare card's is `signatures`). */
  signingPath?: string;
}

export type Verdict = 'Pass' | 'Fail' | 'NotEvaluated';

export interface Violation {
  /** JSON path in the user's input, e.g. `spec.card.supportedInterfaces[0].url`. */
  path: string;
  /** What is wrong there, in the engine's words (the rule's message says what is wanted). */
  detail: string;
}

export interface RuleResult {
  rule: string;
  kind: RuleKind;
  message: string;
  verdict: Verdict;
  violations: Violation[];
  /** Why the rule (or a part of it) was not evaluated. */
  notEvaluated?: string;
}

export interface PolicyResult {
  /** policyRef(): "ClusterAgentPolicy https-only", "AgentPolicy team-a/signed". */
  policy: string;
  mode: Mode;
  verdict: Verdict;
  rules: RuleResult[];
}

// ---------------------------------------------------------------------------------------------
// selection

/** Whether a policy governs an AgentCard: its namespace (or namespace selector) and selector. */
export function selects(policy: Policy, subject: Subject): boolean {
  if (policy.kind === POLICY_KIND && policy.namespace !== subject.namespace) return false;
  if (policy.kind === CLUSTER_POLICY_KIND) {
    // The API server labels every namespace with its name (kubernetes.io/metadata.name).
    const nsLabels = { ...subject.namespaceLabels, 'kubernetes.io/metadata.name': subject.namespace };
    if (!matchesSelector(policy.spec.namespaceSelector, nsLabels)) return false;
  }
  return matchesSelector(policy.spec.selector, subject.labels);
}

// ---------------------------------------------------------------------------------------------
// checks: each gives violations, or a reason it could not look

type Check = { violations: Violation[] } | { notEvaluated: string };

const SCHEME = /^([a-z][a-z0-9+.-]*):/i;
const AUTHORITY = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i;

/** The host of an absolute URL, lower case, without user info, port or trailing dot. */
export function urlHost(url: string): string | undefined {
  const authority = AUTHORITY.exec(url)?.[1];
  if (!authority) return undefined;
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  const host = hostPort.startsWith('[')
    ? hostPort.slice(0, hostPort.indexOf(']') + 1)
    : hostPort.split(':')[0]!;
  return host.toLowerCase().replace(/\.$/, '') || undefined;
}

/** Whether `host` is `suffix` or a name below it (a label boundary, never a bare string suffix). */
export const hostMatchesSuffix = (host: string, suffix: string): boolean =>
  host === suffix || host.endsWith(`.${suffix}`);

const interfacesOf = (card: Record<string, unknown>) =>
  (Array.isArray(card.supportedInterfaces) ? card.supportedInterfaces : []) as Array<Record<string, unknown>>;

/** A value counts as present when it is not absent and not empty ("", [], {}). */
function present(value: unknown): boolean {
  if (value === undefined || value === null || value === '') return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return true;
}

function contentViolations(rule: ContentRule, view: CardView): Violation[] {
  const out: Violation[] = [];
  const card = view.card;
  const at = (segments: PathSegment[], detail: string) => out.push({ path: view.path(segments), detail });
  for (const field of rule.requiredFields ?? []) {
    const segments = field.split('.');
    let value: unknown = card;
    for (const s of segments)
      value = value && typeof value === 'object' ? (value as Record<string, unknown>)[s] : undefined;
    // false and 0 are values (proto3 presence): only absence and emptiness fail.
    if (!present(value))
      at(segments, value === undefined ? 'required field is missing' : 'required field is empty');
  }
  const capabilities = (card.capabilities ?? {}) as Record<string, unknown>;
  for (const cap of rule.requiredCapabilities ?? []) {
    if (capabilities[cap] !== true)
      at(
        ['capabilities', cap],
        `capability ${cap} is ${capabilities[cap] === false ? 'false' : 'not declared'}`,
      );
  }
  const extensions = (Array.isArray(capabilities.extensions) ? capabilities.extensions : []) as Array<
    Record<string, unknown>
  >;
  for (const uri of rule.requiredExtensions ?? []) {
    if (!extensions.some((e) => e?.uri === uri))
      at(['capabilities', 'extensions'], `extension ${JSON.stringify(uri)} is not declared`);
  }
  interfacesOf(card).forEach((iface, i) => {
    const url = typeof iface.url === 'string' ? iface.url : '';
    if (rule.allowedSchemes) {
      const scheme = SCHEME.exec(url)?.[1]?.toLowerCase();
      if (scheme === undefined || !rule.allowedSchemes.includes(scheme))
        at(
          ['supportedInterfaces', i, 'url'],
          scheme === undefined
            ? 'the URL has no scheme'
            : `scheme "${scheme}" is not allowed (allowed: ${rule.allowedSchemes.join(', ')})`,
        );
    }
    if (rule.allowedHostSuffixes) {
      const host = urlHost(url);
      if (host === undefined || !rule.allowedHostSuffixes.some((s) => hostMatchesSuffix(host, s)))
        at(
          ['supportedInterfaces', i, 'url'],
          host === undefined
            ? 'the URL has no host'
            : `host "${host}" is not under an allowed suffix (${rule.allowedHostSuffixes.join(', ')})`,
        );
    }
    if (rule.allowedBindings) {
      const binding = String(iface.protocolBinding ?? '');
      if (!rule.allowedBindings.includes(binding))
        at(
          ['supportedInterfaces', i, 'protocolBinding'],
          `binding "${binding}" is not allowed (allowed: ${rule.allowedBindings.join(', ')})`,
        );
    }
  });
  if (rule.maxCardBytes !== undefined) {
    const bytes = view.bytes ?? Buffer.byteLength(serializeCard(card));
    if (bytes > rule.maxCardBytes) at([], `the card is ${bytes} bytes; the limit is ${rule.maxCardBytes}`);
  }
  if (rule.forbiddenInstructions) {
    for (const f of findInstructions(card, rule.forbiddenInstructions.minLength))
      at(
        f.path,
        `instructions-like text of ${f.length} characters (${f.markers.map((m) => `"${m}"`).join(', ')}); a card is public`,
      );
  }
  return out;
}

function checkContent(rule: ContentRule, subject: Subject): Check[] {
  if (!subject.cards)
    return [
      {
        notEvaluated: subject.adopted
          ? "the card comes from the agent (spec.source) and the agent's card is not known here"
          : 'the card is not known',
      },
    ];
  return subject.cards.map((view) => ({ violations: contentViolations(rule, view) }));
}

function checkTrust(rule: TrustRule, subject: Subject): Check[] {
  const checks: Check[] = [];
  const { facts } = subject;
  const signing = subject.signingPath ?? 'spec.signing';
  if (rule.signed) {
    if (facts.signed === undefined)
      checks.push({
        notEvaluated: 'whether the published card is signed is known only once the operator signs it',
      });
    else
      checks.push({
        violations: facts.signed ? [] : [{ path: signing, detail: 'the card is not signed' }],
      });
  }
  if (rule.signerIdentities) {
    const patterns = rule.signerIdentities.map((p) => expandIdentityPattern(p, subject.namespace));
    if (facts.signed === false)
      checks.push({
        violations: [{ path: signing, detail: 'the card is not signed, so it has no signer identity' }],
      });
    else if (facts.signerIdentities === undefined)
      checks.push({
        notEvaluated:
          "the signer's identity is known only from a verified signing certificate, in the cluster",
      });
    else {
      const ok = facts.signerIdentities.some((id) => patterns.some((p) => identityMatches(p, id)));
      checks.push({
        violations: ok ? [] : [{ path: signing, detail: identityDetail(facts, patterns) }],
      });
    }
  }
  if (rule.sourceSignature && subject.adopted) {
    if (facts.sourceSignature === undefined)
      checks.push({ notEvaluated: "the agent's own card and its signature are known only once fetched" });
    else
      checks.push({
        violations:
          facts.sourceSignature === 'Verified'
            ? []
            : [
                {
                  path: 'spec.source.verification',
                  detail: `the agent's own card signature is ${facts.sourceSignature}, not Verified`,
                },
              ],
      });
  }
  return checks;
}

/** Why no signer identity matches: who signed, which claims are not proven, what was expected. */
function identityDetail(facts: Facts, patterns: readonly string[]): string {
  const verified = facts.signerIdentities ?? [];
  const unverified = facts.unverifiedSigners ?? [];
  const signedBy = verified.length
    ? `signed by ${verified.map((i) => `"${i}"`).join(', ')}`
    : unverified.length
      ? 'signed by no verified certificate identity'
      : 'signed by no certificate identity';
  const claims = unverified.map(
    (u) =>
      `; the certificate of kid "${u.kid}"${u.claimed ? ` claims "${u.claimed}", but` : ''} does not prove it: ${u.reason}`,
  );
  return `${signedBy}${claims.join('')}; expected ${patterns.map((p) => `"${p}"`).join(' or ')}`;
}

function checkReachability(subject: Subject): Check[] {
  if (subject.facts.ready === undefined)
    return [{ notEvaluated: 'Ready is known only once the operator has probed the interfaces' }];
  return [
    {
      violations: subject.facts.ready
        ? []
        : [{ path: 'status.conditions[Ready]', detail: 'not Ready: no catalog lists it until it is' }],
    },
  ];
}

/** Where a callers rule acts: on the network, not on the card (so never judged here). */
export const CALLERS_NOT_EVALUATED =
  'a callers rule acts on the network (who may connect to the A2A ports), not on the card';

// ---------------------------------------------------------------------------------------------
// rules and policies

function evaluateRule(rule: Rule, subject: Subject): RuleResult {
  const kind = ruleKind(rule);
  let checks: Check[];
  switch (kind) {
    case 'trust':
      checks = checkTrust(rule.trust!, subject);
      break;
    case 'content':
      checks = checkContent(rule.content!, subject);
      break;
    case 'reachability':
      checks = checkReachability(subject);
      break;
    case 'callers':
      checks = [{ notEvaluated: CALLERS_NOT_EVALUATED }];
      break;
  }
  const seen = new Set<string>();
  const violations: Violation[] = [];
  const reasons: string[] = [];
  for (const c of checks) {
    if ('notEvaluated' in c) {
      if (!reasons.includes(c.notEvaluated)) reasons.push(c.notEvaluated);
      continue;
    }
    for (const v of c.violations) {
      // Audiences share spec.card's fields: one violation at one path is reported once.
      const key = `${v.path}\u0000${v.detail}`;
      if (!seen.has(key)) violations.push(v);
      seen.add(key);
    }
  }
  const verdict: Verdict = violations.length > 0 ? 'Fail' : reasons.length > 0 ? 'NotEvaluated' : 'Pass';
  return {
    rule: rule.name,
    kind,
    message: rule.message,
    verdict,
    violations,
    ...(reasons.length ? { notEvaluated: reasons.join('; ') } : {}),
  };
}

/** One policy's verdict on an AgentCard it selects. */
export function evaluatePolicy(policy: Policy, subject: Subject): PolicyResult {
  const rules = policy.spec.rules.map((r) => evaluateRule(r, subject));
  const verdict: Verdict = rules.some((r) => r.verdict === 'Fail')
    ? 'Fail'
    : rules.some((r) => r.verdict === 'NotEvaluated')
      ? 'NotEvaluated'
      : 'Pass';
  return { policy: policyRef(policy), mode: policy.spec.mode, verdict, rules };
}

/** The verdicts of every policy that selects the AgentCard, in the policies' order. */
export function evaluatePolicies(policies: readonly Policy[], subject: Subject): PolicyResult[] {
  return policies.filter((p) => selects(p, subject)).map((p) => evaluatePolicy(p, subject));
}

// ---------------------------------------------------------------------------------------------
// merging: the strictest mode wins

export const strictness = (mode: Mode): number => MODES.indexOf(mode);
const stricter = (a: Mode, b: Mode): Mode => (strictness(a) >= strictness(b) ? a : b);

export interface MergedFailure {
  /** The rule's name: rules of one name in several policies are one rule here. */
  rule: string;
  /** The strictest mode among the policies in which this rule fails. */
  mode: Mode;
  /** Each policy in which it fails, with its own mode, message and violations. */
  failures: Array<{ policy: string; mode: Mode; message: string; violations: Violation[] }>;
}

export interface Merged {
  /** The strictest mode of any failing rule: what happens to the card; undefined: nothing fails. */
  action?: Mode;
  failures: MergedFailure[];
  notEvaluated: Array<{ policy: string; mode: Mode; rule: string; reason: string }>;
}

/**
 * Several policies on one AgentCard. Policies only add requirements: a rule that passes in one
 * policy never excuses the same card failing another (two policies that disagree on the allowed
 * schemes both apply, so the card must satisfy both). Per failing rule (by name), the strictest
 * mode among the policies it fails in wins (Enforce over Warn over Audit), and the card's action
 * is the strictest of those: one failing Enforce rule refuses the card whatever else is Audit.
 */
export function mergeResults(results: readonly PolicyResult[]): Merged {
  const byRule = new Map<string, MergedFailure>();
  const notEvaluated: Merged['notEvaluated'] = [];
  for (const result of results) {
    for (const r of result.rules) {
      if (r.verdict === 'NotEvaluated' || (r.verdict === 'Fail' && r.notEvaluated)) {
        notEvaluated.push({
          policy: result.policy,
          mode: result.mode,
          rule: r.rule,
          reason: r.notEvaluated!,
        });
      }
      if (r.verdict !== 'Fail') continue;
      const entry = byRule.get(r.rule) ?? { rule: r.rule, mode: result.mode, failures: [] };
      entry.mode = stricter(entry.mode, result.mode);
      entry.failures.push({
        policy: result.policy,
        mode: result.mode,
        message: r.message,
        violations: r.violations,
      });
      byRule.set(r.rule, entry);
    }
  }
  const failures = [...byRule.values()].sort(
    (a, b) => strictness(b.mode) - strictness(a.mode) || a.rule.localeCompare(b.rule),
  );
  const action = failures.reduce<Mode | undefined>((m, f) => (m ? stricter(m, f.mode) : f.mode), undefined);
  return { ...(action ? { action } : {}), failures, notEvaluated };
}

// ---------------------------------------------------------------------------------------------
// callers: for the network enforcement the controller will generate

export interface Caller {
  /** The calling agent's AgentCard. */
  name: string;
  namespace: string;
  namespaceLabels?: Readonly<Record<string, string>>;
  /** Verified signer identities of the caller's card. */
  signerIdentities?: readonly string[];
}

/**
 * Whether a caller may call an agent of `targetNamespace` under a callers rule: it is named by
 * AgentCard (namespace defaulting to the target's), its namespace is selected, or its card's
 * signer identity matches a pattern ({namespace}: the target's namespace).
 */
export function isAllowedCaller(rule: CallersRule, caller: Caller, targetNamespace: string): boolean {
  if (
    rule.agentCards?.some(
      (c) => c.name === caller.name && (c.namespace ?? targetNamespace) === caller.namespace,
    )
  )
    return true;
  if (rule.namespaceSelector) {
    const labels = { ...caller.namespaceLabels, 'kubernetes.io/metadata.name': caller.namespace };
    if (matchesSelector(rule.namespaceSelector as LabelSelector, labels)) return true;
  }
  if (rule.signerIdentities && caller.signerIdentities) {
    const patterns = rule.signerIdentities.map((p) => expandIdentityPattern(p, targetNamespace));
    if (caller.signerIdentities.some((id) => patterns.some((p) => identityMatches(p, id)))) return true;
  }
  return false;
}

/** The JSON path of a bare card's field (`(card)` for the card itself). */
export const bareCardPath = (segments: readonly PathSegment[]): string => formatPath(segments) || '(card)';
