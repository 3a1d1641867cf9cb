/* eslint-disable @typescript-eslint/no-explicit-any -- the tests read the CRD as loosely typed JSON */
// The policy CRDs generated from the zod schemas: the names and scope of each kind, the
// namespaced kind without namespaceSelector, and the rule union as CEL the API server enforces.
// (That the API server accepts the CRD and refuses an invalid policy: test/integration/policy-admission.test.ts.)
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { buildPolicyCrd, POLICY_CRDS, policyCrdYaml } from '../../../operator/policy/crd.ts';

type Node = Record<string, any>;
const spec = (kind: 'AgentPolicy' | 'ClusterAgentPolicy') =>
  (buildPolicyCrd(kind) as Node).spec.versions[0].schema.openAPIV3Schema.properties.spec as Node;

describe('the policy CRDs', () => {
  it('AgentPolicy is namespaced, ClusterAgentPolicy cluster-scoped, both in the a2a category', () => {
    const ns = parse(policyCrdYaml('AgentPolicy')) as Node;
    const cl = parse(policyCrdYaml('ClusterAgentPolicy')) as Node;
    expect(ns.metadata.name).toBe('agentpolicies.agentcard.dev');
    expect(ns.spec.scope).toBe('Namespaced');
    expect(ns.spec.names).toMatchObject({
      kind: 'AgentPolicy',
      plural: 'agentpolicies',
      categories: ['a2a'],
    });
    expect(cl.metadata.name).toBe('clusteragentpolicies.agentcard.dev');
    expect(cl.spec.scope).toBe('Cluster');
    expect(POLICY_CRDS.map((c) => c.file)).toEqual([
      'crds/agentcard.dev_agentpolicies.yaml',
      'crds/agentcard.dev_clusteragentpolicies.yaml',
    ]);
  });

  it('only the cluster kind selects namespaces', () => {
    expect(spec('AgentPolicy').properties.namespaceSelector).toBeUndefined();
    expect(spec('ClusterAgentPolicy').properties.namespaceSelector.type).toBe('object');
    expect(spec('AgentPolicy').required).toEqual(['rules']);
  });

  it('a rule is a union the API server checks: exactly one kind, rules a map by name', () => {
    const rules = spec('ClusterAgentPolicy').properties.rules as Node;
    expect(rules['x-kubernetes-list-type']).toBe('map');
    expect(rules['x-kubernetes-list-map-keys']).toEqual(['name']);
    expect(rules.items['x-kubernetes-validations']).toEqual([
      {
        rule: '(has(self.trust) ? 1 : 0) + (has(self.content) ? 1 : 0) + (has(self.reachability) ? 1 : 0) + (has(self.callers) ? 1 : 0) == 1',
        message: 'set exactly one of trust, content, reachability, callers',
      },
    ]);
    expect(rules.items.required).toEqual(['name', 'message']);
    // A structural object has no size() in CEL (the API server refuses the CRD): has() per field.
    expect(rules.items.properties.content['x-kubernetes-validations'][0].rule).toBe(
      'has(self.requiredFields) || has(self.requiredCapabilities) || has(self.requiredExtensions) || has(self.allowedSchemes) || has(self.allowedHostSuffixes) || has(self.allowedBindings) || has(self.maxCardBytes) || has(self.forbiddenInstructions)',
    );
    expect(rules.items.properties.trust.properties.signed).toEqual(
      expect.objectContaining({ type: 'boolean', enum: [true] }),
    );
  });

  it('mode is an enum defaulting to Audit', () => {
    expect(spec('AgentPolicy').properties.mode).toMatchObject({
      type: 'string',
      enum: ['Audit', 'Warn', 'Enforce'],
      default: 'Audit',
    });
  });
});
