/* eslint-disable @typescript-eslint/no-explicit-any -- the tests read generated objects as loose JSON */
// The ValidatingAdmissionPolicy and binding generated from a policy: modes to validationActions,
// scoping by namespace and selector, which rules produce CEL and which are left to the operator,
// names and string escaping. Whether the API server evaluates the CEL as the engine judges:
// test/integration/policy-admission.test.ts.
import { describe, expect, it } from 'vitest';
import {
  admissionObjects,
  admissionPolicyName,
  CEL_COVERAGE,
  celString,
  ruleValidations,
} from '../../../operator/policy/cel.ts';
import { parsePolicy } from '../../../operator/policy/parse.ts';
import type { Mode, Policy } from '../../../operator/policy/resource.ts';

function policy(
  rules: unknown[],
  opts: { mode?: Mode; name?: string; namespace?: string; spec?: object } = {},
): Policy {
  const parsed = parsePolicy({
    apiVersion: 'agentcard.dev/v1alpha1',
    kind: opts.namespace ? 'AgentPolicy' : 'ClusterAgentPolicy',
    metadata: { name: opts.name ?? 'p', ...(opts.namespace ? { namespace: opts.namespace } : {}) },
    spec: { ...(opts.mode ? { mode: opts.mode } : {}), rules, ...opts.spec },
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed.policy;
}
const https = { name: 'https-only', message: 'use https', content: { allowedSchemes: ['https'] } };

describe('admissionObjects', () => {
  it.each([
    ['Audit', ['Audit']],
    ['Warn', ['Warn']],
    ['Enforce', ['Deny']],
  ] as const)('mode %s binds with validationActions %j', (mode, actions) => {
    const { binding } = admissionObjects(policy([https], { mode }));
    expect((binding as any).spec.validationActions).toEqual(actions);
  });

  it('the default mode (Audit) never denies', () => {
    expect((admissionObjects(policy([https])).binding as any).spec.validationActions).toEqual(['Audit']);
  });

  it('an AgentPolicy binds to its own namespace and its selector; the policy matches AgentCard writes', () => {
    const { policy: vap, binding } = admissionObjects(
      policy([https], { namespace: 'team-a', spec: { selector: { matchLabels: { tier: 'prod' } } } }),
    ) as any;
    expect(binding.spec.matchResources).toEqual({
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'team-a' } },
      objectSelector: { matchLabels: { tier: 'prod' } },
    });
    expect(binding.spec.policyName).toBe(vap.metadata.name);
    expect(vap.metadata.name).toBe('agentpolicy.team-a.p.agentcard.dev');
    expect(vap.metadata.labels).toEqual({
      'app.kubernetes.io/managed-by': 'agentcard-operator',
      'agentcard.dev/policy': 'ns.team-a.p',
    });
    expect(vap.spec.failurePolicy).toBe('Fail');
    expect(vap.spec.matchConstraints.resourceRules).toEqual([
      {
        apiGroups: ['agentcard.dev'],
        apiVersions: ['v1alpha1'],
        operations: ['CREATE', 'UPDATE'],
        resources: ['agentcards'],
      },
    ]);
    expect(vap.spec.matchConditions).toEqual([
      { name: 'spec-changed', expression: "request.operation != 'UPDATE' || object.spec != oldObject.spec" },
    ]);
  });

  it('a ClusterAgentPolicy binds to its namespace selector, or to every namespace without one', () => {
    const selected = admissionObjects(
      policy([https], { spec: { namespaceSelector: { matchLabels: { team: 'pay' } } } }),
    ) as any;
    expect(selected.binding.spec.matchResources).toEqual({
      namespaceSelector: { matchLabels: { team: 'pay' } },
    });
    expect((admissionObjects(policy([https])) as any).binding.spec.matchResources).toBeUndefined();
  });

  it('a policy with no rule CEL can judge generates nothing', () => {
    const p = policy([
      { name: 'ready', message: 'm', reachability: { readyBeforeListed: true } },
      { name: 'callers', message: 'm', callers: { agentCards: [{ name: 'billing' }] } },
      {
        name: 'size',
        message: 'm',
        content: { maxCardBytes: 10240, forbiddenInstructions: { minLength: 400 } },
      },
    ]);
    expect(admissionObjects(p)).toEqual({});
  });

  it('a long name is hashed into a DNS subdomain of at most 253 characters', () => {
    const p = policy([https], { name: 'x'.repeat(240), namespace: 'n'.repeat(63) });
    const name = admissionPolicyName(p);
    expect(name.length).toBeLessThanOrEqual(253);
    expect(name).toMatch(/^agentpolicy\.[0-9a-f]{40}\.agentcard\.dev$/);
    expect(
      admissionPolicyName(policy([https], { name: 'y'.repeat(240), namespace: 'n'.repeat(63) })),
    ).not.toBe(name);
  });
});

describe('ruleValidations', () => {
  const p = (rule: unknown) => policy([rule]);
  const expressions = (rule: any) => ruleValidations(p(rule), rule).map((v) => v.expression);

  it('schemes, hosts and bindings: spec.card, audiences and (schemes, hosts) baseURL', () => {
    expect(expressions({ name: 'r', message: 'm', content: { allowedSchemes: ['https'] } })).toHaveLength(3);
    expect(
      expressions({ name: 'r', message: 'm', content: { allowedHostSuffixes: ['example.com'] } }),
    ).toHaveLength(3);
    const bindings = expressions({ name: 'r', message: 'm', content: { allowedBindings: ['JSONRPC'] } });
    expect(bindings).toHaveLength(2);
    expect(bindings[0]).toContain("i.protocolBinding in ['JSONRPC']");
  });

  it('required content is judged on written cards; adopted ones are left to the operator', () => {
    const rule = {
      name: 'r',
      message: 'm',
      content: {
        requiredFields: ['provider.organization', 'capabilities.streaming'],
        requiredExtensions: ['https://x.example/e'],
      },
    };
    expect(expressions(rule)).toEqual([
      'has(object.spec.source) || (has(object.spec.card) && has(object.spec.card.provider) && has(object.spec.card.provider.organization) && size(object.spec.card.provider.organization) > 0)',
      // A boolean has no size: present is enough (false is a value).
      'has(object.spec.source) || (has(object.spec.card) && has(object.spec.card.capabilities) && has(object.spec.card.capabilities.streaming))',
      "has(object.spec.source) || (has(object.spec.card) && has(object.spec.card.capabilities) && has(object.spec.card.capabilities.extensions) && object.spec.card.capabilities.extensions.exists(e, has(e.uri) && e.uri == 'https://x.example/e'))",
    ]);
  });

  it('trust rules check their preconditions only: spec.signing, spec.source.verification', () => {
    expect(
      expressions({
        name: 'r',
        message: 'm',
        trust: { signerIdentities: ['spiffe://e.org/ns/{namespace}/*'] },
      }),
    ).toEqual(['has(object.spec.signing)']);
    expect(expressions({ name: 'r', message: 'm', trust: { sourceSignature: 'Verified' } })).toEqual([
      '!has(object.spec.source) || has(object.spec.source.verification)',
    ]);
  });

  it('the message names the path, the policy and the rule, as one CEL string literal', () => {
    const rule = { name: 'signed', message: "Sign it, it's the rule \\o/", trust: { signed: true } };
    expect(ruleValidations(p(rule), rule as any)[0]!.messageExpression).toBe(
      `'spec.signing: Sign it, it\\'s the rule \\\\o/ (ClusterAgentPolicy p, rule signed)'`,
    );
  });
});

describe('CEL_COVERAGE (what docs/policy.md states)', () => {
  it('says no admission check exactly for the rule kinds that generate none', () => {
    const samples = {
      trust: { name: 'r', message: 'm', trust: { signed: true } },
      content: { name: 'r', message: 'm', content: { allowedSchemes: ['https'] } },
      reachability: { name: 'r', message: 'm', reachability: { readyBeforeListed: true } },
      callers: { name: 'r', message: 'm', callers: { agentCards: [{ name: 'a' }] } },
    };
    for (const [kind, rule] of Object.entries(samples)) {
      const generated = ruleValidations(policy([rule]), rule as any).length > 0;
      expect(generated, kind).toBe(CEL_COVERAGE[kind as keyof typeof CEL_COVERAGE].admission.length > 0);
    }
  });
});

describe('celString', () => {
  it('escapes quotes, backslashes and control characters', () => {
    expect(celString(`a'b\\c\n\u0007é`)).toBe(`'a\\'b\\\\c\\u000a\\u0007é'`);
  });
});
