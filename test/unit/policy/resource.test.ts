// The policy model: valid policies parse, and each kind of invalid input is refused as a whole
// with the field named (never a part of the policy kept).
import { describe, expect, it } from 'vitest';
import { parsePolicy } from '../../../operator/policy/parse.ts';
import {
  cardFieldKind,
  checkIdentityPattern,
  expandIdentityPattern,
} from '../../../operator/policy/resource.ts';

const cluster = (spec: Record<string, unknown>, metadata: Record<string, unknown> = { name: 'p' }) => ({
  apiVersion: 'agentcard.dev/v1alpha1',
  kind: 'ClusterAgentPolicy',
  metadata,
  spec,
});
const namespaced = (spec: Record<string, unknown>, namespace?: string) => ({
  apiVersion: 'agentcard.dev/v1alpha1',
  kind: 'AgentPolicy',
  metadata: { name: 'p', ...(namespace ? { namespace } : {}) },
  spec,
});
const https = { name: 'https-only', message: 'use https', content: { allowedSchemes: ['https'] } };

/** The problems of an invalid policy, as "path: message". */
function problems(value: unknown, defaultNamespace?: string): string[] {
  const parsed = parsePolicy(value, defaultNamespace);
  if (parsed.ok) throw new Error('expected the policy to be refused');
  return parsed.problems.map((p) => `${p.path}: ${p.message}`);
}

describe('parsePolicy', () => {
  it('a ClusterAgentPolicy with every rule kind parses; mode defaults to Audit', () => {
    const parsed = parsePolicy(
      cluster({
        namespaceSelector: { matchLabels: { team: 'payments' } },
        selector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['prod'] }] },
        rules: [
          https,
          {
            name: 'signed',
            message: 'sign it',
            trust: { signed: true, signerIdentities: ['spiffe://example.org/ns/{namespace}/*'] },
          },
          { name: 'ready', message: 'prove it', reachability: { readyBeforeListed: true } },
          {
            name: 'callers',
            message: 'billing only',
            callers: { agentCards: [{ name: 'billing', namespace: 'billing' }] },
          },
          {
            name: 'content',
            message: 'complete cards',
            content: {
              requiredFields: ['provider.organization', 'securitySchemes'],
              requiredCapabilities: ['streaming'],
              maxCardBytes: 10240,
              forbiddenInstructions: { minLength: 400 },
            },
          },
        ],
      }),
    );
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.policy).toMatchObject({ kind: 'ClusterAgentPolicy', name: 'p' });
    expect(parsed.policy.namespace).toBeUndefined();
    expect(parsed.policy.spec.mode).toBe('Audit');
    expect(parsed.policy.spec.rules).toHaveLength(5);
  });

  it('an AgentPolicy takes its namespace from metadata, else the default, else is refused', () => {
    const own = parsePolicy(namespaced({ rules: [https] }, 'team-a'), 'default');
    expect(own.ok && own.policy.namespace).toBe('team-a');
    const fallback = parsePolicy(namespaced({ rules: [https] }), 'default');
    expect(fallback.ok && fallback.policy.namespace).toBe('default');
    expect(problems(namespaced({ rules: [https] }))).toEqual([
      'metadata.namespace: an AgentPolicy needs a namespace',
    ]);
  });

  it('an AgentPolicy cannot select namespaces; a ClusterAgentPolicy has no namespace', () => {
    expect(problems(namespaced({ rules: [https], namespaceSelector: {} }, 'a'))).toEqual([
      'spec.namespaceSelector: unknown field',
    ]);
    expect(problems(cluster({ rules: [https] }, { name: 'p', namespace: 'a' }))).toEqual([
      'metadata.namespace: a ClusterAgentPolicy is cluster-scoped and has no namespace',
    ]);
  });

  it.each([
    [
      'an identity pattern with a * inside',
      { name: 'r', message: 'm', trust: { signerIdentities: ['spiffe://example.org/ns/*/sa'] } },
      "spec.rules[0].trust.signerIdentities[0]: identity pattern 'spiffe://example.org/ns/*/sa': '*' is only allowed as the whole last path segment (…/*)",
    ],
    [
      'an unknown variable in a pattern',
      { name: 'r', message: 'm', trust: { signerIdentities: ['spiffe://example.org/ns/{team}/*'] } },
      'spec.rules[0].trust.signerIdentities[0]: unknown variable {team} (only {namespace} is known)',
    ],
    [
      'a pattern that is not a URI',
      { name: 'r', message: 'm', callers: { signerIdentities: ['ns/{namespace}'] } },
      "spec.rules[0].callers.signerIdentities[0]: identity pattern 'ns/sample-namespace' is not an absolute URI of the form scheme://authority/path (no query or fragment)",
    ],
    [
      'a selector requirement without values',
      {
        name: 'r',
        message: 'm',
        callers: { namespaceSelector: { matchExpressions: [{ key: 'a', operator: 'In' }] } },
      },
      'spec.rules[0].callers.namespaceSelector.matchExpressions[0].values: must not be empty for In',
    ],
    [
      'two kinds in one rule',
      {
        name: 'r',
        message: 'm',
        reachability: { readyBeforeListed: true },
        content: { allowedSchemes: ['https'] },
      },
      'spec.rules[0]: set exactly one of trust, content, reachability, callers (found content, reachability)',
    ],
    [
      'no kind at all',
      { name: 'r', message: 'm' },
      'spec.rules[0]: set exactly one of trust, content, reachability, callers',
    ],
    [
      'an empty trust rule',
      { name: 'r', message: 'm', trust: {} },
      'spec.rules[0].trust: set at least one of signed, signerIdentities, sourceSignature',
    ],
    [
      'an empty content rule',
      { name: 'r', message: 'm', content: {} },
      'spec.rules[0].content: set at least one content requirement',
    ],
    [
      'a required field the card has not',
      { name: 'r', message: 'm', content: { requiredFields: ['provider.email'] } },
      'spec.rules[0].content.requiredFields[0]: "email" is not a field of provider (fields: url, organization)',
    ],
    [
      'a required field path below a list',
      { name: 'r', message: 'm', content: { requiredFields: ['skills.id'] } },
      'spec.rules[0].content.requiredFields[0]: skills is a list; a required field path ends there',
    ],
    [
      'a host suffix with a leading dot',
      { name: 'r', message: 'm', content: { allowedHostSuffixes: ['.example.com'] } },
      'spec.rules[0].content.allowedHostSuffixes[0]: must be a lower-case DNS name without a leading dot, e.g. "example.com"',
    ],
    [
      'an upper-case scheme',
      { name: 'r', message: 'm', content: { allowedSchemes: ['HTTPS'] } },
      'spec.rules[0].content.allowedSchemes[0]: must be a lower-case URI scheme such as "https"',
    ],
    [
      'a message of two lines',
      { name: 'r', message: 'one\ntwo', content: { allowedSchemes: ['https'] } },
      'spec.rules[0].message: must be one line of text without control characters',
    ],
    [
      'an unknown capability',
      { name: 'r', message: 'm', content: { requiredCapabilities: ['telepathy'] } },
      'spec.rules[0].content.requiredCapabilities[0]: Invalid option: expected one of "streaming"|"pushNotifications"|"extendedAgentCard"',
    ],
  ])('refuses %s, naming the field', (_what, rule, expected) => {
    // The valid first rule is not kept either: the policy is refused as a whole.
    expect(problems(cluster({ rules: [rule] }))).toEqual([expected]);
    expect(parsePolicy(cluster({ rules: [https, rule] })).ok).toBe(false);
  });

  it('refuses duplicate rule names and an unknown mode', () => {
    expect(problems(cluster({ rules: [https, https] }))).toEqual([
      'spec.rules[1].name: duplicate rule name "https-only"',
    ]);
    expect(problems(cluster({ mode: 'Deny', rules: [https] }))[0]).toMatch(/^spec\.mode: /);
  });
});

describe('identity patterns', () => {
  it('{namespace} expands to the namespace and the result is checked as a pattern', () => {
    expect(() => checkIdentityPattern('spiffe://example.org/ns/{namespace}/*')).not.toThrow();
    expect(expandIdentityPattern('spiffe://example.org/ns/{namespace}/*', 'payments')).toBe(
      'spiffe://example.org/ns/payments/*',
    );
    expect(() => checkIdentityPattern('spiffe://example.org/ns/{namespace}/../*')).toThrow(
      /\. or \.\. path segment/,
    );
  });
});

describe('cardFieldKind', () => {
  it('knows the A2A card fields and their kinds', () => {
    expect(cardFieldKind('provider.organization')).toBe('text');
    expect(cardFieldKind('securitySchemes')).toBe('map');
    expect(cardFieldKind('skills')).toBe('list');
    expect(cardFieldKind('capabilities.streaming')).toBe('boolean');
    expect(cardFieldKind('provider')).toBe('object');
    expect(() => cardFieldKind('signatures')).toThrow(/"signatures" is not a field of the A2A 1.0 card/);
  });
});
