/**
 * The part of a policy the API server can judge itself: a ValidatingAdmissionPolicy with one CEL
 * validation per checkable requirement, and its binding, whose validationActions carry the
 * policy's mode (Audit: [Audit], Warn: [Warn], Enforce: [Deny]). In-tree admission adds no webhook
 * to the apply path, and `kubectl apply` shows the rule's message (Kubernetes docs, "Validating
 * Admission Policy"). The conventions are the nesting policy's (../card/nesting-policy.ts): on
 * CREATE and UPDATE of AgentCards, an UPDATE that leaves spec as it was is not checked.
 *
 * What CEL can judge from the object alone (CEL_COVERAGE): the interface schemes, hosts and
 * bindings (spec.card, each audience's interfaces and baseURL), required fields, capabilities and
 * extensions of a written card, and two preconditions of trust rules (spec.signing set; an adopted
 * card's spec.source.verification set). What needs the operator: the card's size (CEL has no JSON
 * serialization), instructions-like text (a heuristic better kept in one place), the signature
 * itself and its certificate's identity, the agent's own card of an adopted card and its
 * signature, readiness, and callers (a network rule). The engine (evaluate.ts) judges all of it;
 * an admission check never passes what the engine fails.
 */
import {
  CLUSTER_POLICY_KIND,
  GROUP,
  PLURAL,
  VERSION,
  policyLabelValue,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  POLICY_LABEL,
} from '../api/names.ts';
import { createHash } from 'node:crypto';
import {
  cardFieldKind,
  policyRef,
  type ContentRule,
  type Mode,
  type Policy,
  type Rule,
  type RuleKind,
} from './resource.ts';

/** validationActions per mode (admissionregistration.k8s.io/v1 ValidationAction). */
export const VALIDATION_ACTIONS: Record<Mode, ['Audit'] | ['Warn'] | ['Deny']> = {
  Audit: ['Audit'],
  Warn: ['Warn'],
  Enforce: ['Deny'],
};

/** Which requirement of which rule kind the API server checks, and which only the operator can. */
export const CEL_COVERAGE: Record<RuleKind, { admission: string[]; operator: string[] }> = {
  trust: {
    admission: [
      'signed, signerIdentities: spec.signing is set',
      'sourceSignature: spec.source.verification is set',
    ],
    operator: ['the published signature', "the signing certificate's identity", "the agent's own signature"],
  },
  content: {
    admission: [
      'allowedSchemes, allowedHostSuffixes (spec.card, spec.audiences[].supportedInterfaces and baseURL)',
      'allowedBindings',
      'requiredFields, requiredCapabilities, requiredExtensions (written cards)',
    ],
    operator: [
      'maxCardBytes',
      'forbiddenInstructions',
      'every content rule on an adopted card (spec.source)',
    ],
  },
  reachability: { admission: [], operator: ['readyBeforeListed'] },
  callers: { admission: [], operator: ['callers (a NetworkPolicy per agent)'] },
};

export interface Validation {
  expression: string;
  messageExpression: string;
}

/** A CEL string literal (CEL spec, "String and Bytes Literals"): quotes, backslashes, controls escaped. */
export function celString(value: string): string {
  let out = "'";
  for (const ch of value) {
    const code = ch.codePointAt(0)!;
    if (ch === '\\') out += '\\\\';
    else if (ch === "'") out += "\\'";
    else if (code < 0x20 || code === 0x7f) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}'`;
}

const celList = (values: readonly string[]) => `[${values.map(celString).join(', ')}]`;

const SCHEME_PREFIX = "'^[a-zA-Z][a-zA-Z0-9+.-]*:'";

/** CEL: the URL `u` has an allowed scheme (compared in lower case, as the engine does). */
const schemeOk = (u: string, schemes: readonly string[]) =>
  `(${u}.matches(${SCHEME_PREFIX}) && ${u}.substring(0, ${u}.indexOf(':')).lowerAscii() in ${celList(schemes)})`;

/**
 * CEL: the URL `u` has a host equal to or below an allowed suffix, at a label boundary: "." + host
 * ends with "." + suffix (a trailing dot of the host allowed), as the engine's hostMatchesSuffix.
 */
const hostOk = (u: string, suffixes: readonly string[]) =>
  `(isURL(${u}) && ${celList(suffixes)}.exists(s, ('.' + url(${u}).getHostname().lowerAscii()).endsWith('.' + s) || ('.' + url(${u}).getHostname().lowerAscii()).endsWith('.' + s + '.')))`;

const bindingOk = (b: string, bindings: readonly string[]) => `(${b} in ${celList(bindings)})`;

/** The interface checks of a content rule: [what it checks, the field it names, the CEL test of one interface]. */
function interfaceChecks(
  rule: ContentRule,
): Array<{ field: 'url' | 'protocolBinding'; ok: (i: string) => string; url?: (u: string) => string }> {
  const checks: Array<{
    field: 'url' | 'protocolBinding';
    ok: (i: string) => string;
    url?: (u: string) => string;
  }> = [];
  if (rule.allowedSchemes) {
    const s = rule.allowedSchemes;
    checks.push({ field: 'url', ok: (i) => schemeOk(`${i}.url`, s), url: (u) => schemeOk(u, s) });
  }
  if (rule.allowedHostSuffixes) {
    const h = rule.allowedHostSuffixes;
    checks.push({ field: 'url', ok: (i) => hostOk(`${i}.url`, h), url: (u) => hostOk(u, h) });
  }
  if (rule.allowedBindings) {
    const b = rule.allowedBindings;
    checks.push({ field: 'protocolBinding', ok: (i) => bindingOk(`${i}.protocolBinding`, b) });
  }
  return checks;
}

const CARD = 'object.spec.card';
const AUDIENCES = 'object.spec.audiences';

function contentValidations(rule: ContentRule, message: (path: string) => string): Validation[] {
  const out: Validation[] = [];
  for (const check of interfaceChecks(rule)) {
    // spec.card's interfaces (on an adopted card, the overlay's: they replace the agent's).
    const list = `${CARD}.supportedInterfaces`;
    out.push({
      expression: `!has(${CARD}) || !has(${list}) || ${list}.all(i, ${check.ok('i')})`,
      messageExpression: `'spec.card.supportedInterfaces[' + string(${list}.map(i, ${check.ok('i')}).indexOf(false)) + '].${check.field}: ' + ${message('')}`,
    });
    // Each audience's own interfaces.
    const own = (a: string) =>
      `(!has(${a}.supportedInterfaces) || ${a}.supportedInterfaces.all(i, ${check.ok('i')}))`;
    out.push({
      expression: `!has(${AUDIENCES}) || ${AUDIENCES}.all(a, ${own('a')})`,
      messageExpression: `'spec.audiences[' + string(${AUDIENCES}.map(a, ${own('a')}).indexOf(false)) + '].supportedInterfaces: ' + ${message('')}`,
    });
    // An audience's baseURL: its scheme and host are those of every interface it re-bases.
    if (check.url) {
      const base = (a: string) => `(!has(${a}.baseURL) || ${check.url!(`${a}.baseURL`)})`;
      out.push({
        expression: `!has(${AUDIENCES}) || ${AUDIENCES}.all(a, ${base('a')})`,
        messageExpression: `'spec.audiences[' + string(${AUDIENCES}.map(a, ${base('a')}).indexOf(false)) + '].baseURL: ' + ${message('')}`,
      });
    }
  }
  // Required content of a written card; an adopted card's is the agent's, judged by the operator.
  const written = (test: string) => `has(object.spec.source) || (has(${CARD}) && ${test})`;
  for (const field of rule.requiredFields ?? []) {
    const segments = field.split('.');
    const guards = segments.map((_, i) => `has(${CARD}.${segments.slice(0, i + 1).join('.')})`);
    const kind = cardFieldKind(field);
    const value = `${CARD}.${field}`;
    if (kind === 'text' || kind === 'list' || kind === 'map' || kind === 'object')
      guards.push(`size(${value}) > 0`);
    out.push({ expression: written(guards.join(' && ')), messageExpression: message(`spec.card.${field}`) });
  }
  const capabilities = `${CARD}.capabilities`;
  for (const cap of rule.requiredCapabilities ?? []) {
    out.push({
      expression: written(
        `has(${capabilities}) && has(${capabilities}.${cap}) && ${capabilities}.${cap} == true`,
      ),
      messageExpression: message(`spec.card.capabilities.${cap}`),
    });
  }
  for (const uri of rule.requiredExtensions ?? []) {
    out.push({
      expression: written(
        `has(${capabilities}) && has(${capabilities}.extensions) && ${capabilities}.extensions.exists(e, has(e.uri) && e.uri == ${celString(uri)})`,
      ),
      messageExpression: message('spec.card.capabilities.extensions'),
    });
  }
  return out;
}

/** The CEL validations of one rule (empty: nothing of it is checkable at admission). */
export function ruleValidations(policy: Policy, rule: Rule): Validation[] {
  const suffix = ` (${policyRef(policy)}, rule ${rule.name})`;
  // A CEL string expression: "<path>: <message> (<policy>, rule <name>)", the CLI's format.
  const message = (path: string) => celString(`${path ? `${path}: ` : ''}${rule.message}${suffix}`);
  if (rule.content) return contentValidations(rule.content, message);
  if (rule.trust) {
    const out: Validation[] = [];
    if (rule.trust.signed || rule.trust.signerIdentities)
      out.push({
        expression: 'has(object.spec.signing)',
        messageExpression: message('spec.signing'),
      });
    if (rule.trust.sourceSignature)
      out.push({
        expression: '!has(object.spec.source) || has(object.spec.source.verification)',
        messageExpression: message('spec.source.verification'),
      });
    return out;
  }
  return [];
}

/**
 * The name of a policy's generated objects: a DNS subdomain (at most 253 characters) that names
 * the policy's kind, namespace and name, hashed when it would be longer.
 */
export function admissionPolicyName(policy: Policy): string {
  const base =
    policy.kind === CLUSTER_POLICY_KIND
      ? `clusteragentpolicy.${policy.name}.${GROUP}`
      : `agentpolicy.${policy.namespace}.${policy.name}.${GROUP}`;
  if (base.length <= 253) return base;
  return `agentpolicy.${createHash('sha256').update(base).digest('hex').slice(0, 40)}.${GROUP}`;
}

export interface AdmissionObjects {
  /** Undefined when no rule of the policy is checkable at admission. */
  policy?: Record<string, unknown>;
  binding?: Record<string, unknown>;
}

/**
 * The ValidatingAdmissionPolicy and its binding for a policy. failurePolicy Fail: an expression
 * that cannot be evaluated follows the binding's validationActions like a failed one (Kubernetes
 * API reference, ValidatingAdmissionPolicyBinding validationActions), so in Audit mode it is only
 * audited, and in Enforce mode nothing unjudged gets through.
 */
export function admissionObjects(policy: Policy): AdmissionObjects {
  const validations = policy.spec.rules.flatMap((r) => ruleValidations(policy, r));
  if (validations.length === 0) return {};
  const name = admissionPolicyName(policy);
  const labels = {
    [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
    [POLICY_LABEL]: policyLabelValue(policy.kind, policy.name, policy.namespace),
  };
  const namespaceSelector =
    policy.kind === CLUSTER_POLICY_KIND
      ? policy.spec.namespaceSelector
      : { matchLabels: { 'kubernetes.io/metadata.name': policy.namespace! } };
  const matchResources: Record<string, unknown> = {};
  if (namespaceSelector && Object.keys(namespaceSelector).length > 0)
    matchResources.namespaceSelector = namespaceSelector;
  if (policy.spec.selector && Object.keys(policy.spec.selector).length > 0)
    matchResources.objectSelector = policy.spec.selector;
  return {
    policy: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name, labels },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: [GROUP],
              apiVersions: [VERSION],
              operations: ['CREATE', 'UPDATE'],
              resources: [PLURAL],
            },
          ],
        },
        matchConditions: [
          {
            name: 'spec-changed',
            expression: "request.operation != 'UPDATE' || object.spec != oldObject.spec",
          },
        ],
        validations,
      },
    },
    binding: {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name, labels: { ...labels } },
      spec: {
        policyName: name,
        validationActions: VALIDATION_ACTIONS[policy.spec.mode],
        ...(Object.keys(matchResources).length ? { matchResources } : {}),
      },
    },
  };
}
