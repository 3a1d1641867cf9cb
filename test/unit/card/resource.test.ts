/* eslint-disable @typescript-eslint/no-explicit-any -- the tests edit objects as loosely typed JSON */
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { AgentCardResourceSchema, AgentCardStatusSchema } from '../../../operator/card/resource.ts';
import { API_VERSION, GROUP, KIND, PLURAL, VERSION } from '../../../operator/api/names.ts';
import { repoRoot } from '../../support/paths.ts';
import { join } from 'node:path';

const status = {
  observedGeneration: 3,
  conditions: [
    {
      type: 'Accepted',
      status: 'True',
      observedGeneration: 3,
      reason: 'Valid',
      message: '',
      lastTransitionTime: '2026-01-02T03:04:05Z',
    },
    {
      type: 'Ready',
      status: 'False',
      reason: 'InterfacesUnreachable',
      message: '1 of 3 interfaces unreachable',
      lastTransitionTime: '2026-01-02T03:04:05Z',
    },
  ],
  card: {
    digest: `sha256:${'ab'.repeat(32)}`,
    bytes: 1234,
    version: '2.1.0',
    configMap: 'support-agent-agent-card',
  },
  signatures: [{ kid: 'example-2026-11', alg: 'ES256' }],
  interfaces: [
    {
      url: 'https://support.example.com/a2a/jsonrpc',
      protocolBinding: 'JSONRPC',
      protocolVersion: '1.0',
      reachable: true,
      reason: 'Reachable',
      message: 'TaskNotFound (-32001) as expected',
      latencyMs: 12.5,
      tlsNotAfter: '2027-01-01T00:00:00Z',
      lastProbeTime: '2026-01-02T03:04:05Z',
      lastTransitionTime: '2026-01-02T03:00:00Z',
    },
  ],
  reachableInterfaces: '1/3',
  serving: { podsRequesting: 2, podsMissingSidecar: 1, missing: ['support-agent-7d9f-abcde'] },
};

describe('the AgentCard resource schemas', () => {
  it('has the constants of the contract', () => {
    expect([GROUP, VERSION, KIND, PLURAL, API_VERSION]).toEqual([
      'agentcard.dev',
      'v1alpha1',
      'AgentCard',
      'agentcards',
      'agentcard.dev/v1alpha1',
    ]);
  });

  it('accepts a full status as the contract describes it', () => {
    expect(AgentCardStatusSchema.parse(status)).toEqual(status);
  });

  it('rejects malformed status fields', () => {
    const bad = structuredClone(status) as Record<string, any>;
    bad.conditions[0].reason = 'not camel case';
    bad.conditions[1].status = 'Maybe';
    bad.card.digest = 'md5:abc';
    bad.serving.missing = Array.from({ length: 21 }, (_, i) => `pod-${i}`);
    bad.interfaces[0].lastProbeTime = 'yesterday';
    const issues = AgentCardStatusSchema.safeParse(bad).error!.issues.map((i) => i.path.join('.'));
    expect(issues.sort()).toEqual(
      [
        'card.digest',
        'conditions.0.reason',
        'conditions.1.status',
        'interfaces.0.lastProbeTime',
        'serving.missing',
      ].sort(),
    );
  });

  it('parses the example manifests as resources', () => {
    for (const file of [
      'examples/agentcard-minimal.yaml',
      'examples/agentcard-signed.yaml',
      'examples/agentcard-audiences.yaml',
    ]) {
      const docs = parseAllDocuments(readFileSync(join(repoRoot, file), 'utf8')).map((d) => d.toJS());
      const resource = AgentCardResourceSchema.parse(docs.find((d) => d.kind === 'AgentCard'));
      expect(resource.spec.card!.supportedInterfaces!.length).toBeGreaterThan(0);
    }
  });
});
