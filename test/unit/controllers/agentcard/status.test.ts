import { describe, expect, it } from 'vitest';
import {
  ownedStatus,
  statusApplyBody,
  statusChanged,
} from '../../../../operator/controllers/agentcard/status.ts';
import { sortedJson } from '../../../../operator/runtime/sorted-json.ts';

const cond = {
  type: 'Ready',
  status: 'True' as const,
  observedGeneration: 1,
  reason: 'Ready',
  message: 'ok',
  lastTransitionTime: '2030-01-01T00:00:00Z',
};

describe('status diff', () => {
  it('ignores key order and fields owned by other writers', () => {
    const live = {
      someoneElses: { note: 'not ours' },
      reachableInterfaces: '1/1',
      conditions: [{ ...cond }],
      observedGeneration: 1,
    };
    const desired = { observedGeneration: 1, conditions: [{ ...cond }], reachableInterfaces: '1/1' };
    expect(statusChanged(live, desired)).toBe(false);
  });

  it('sees any change of an owned field', () => {
    const base = { observedGeneration: 1, conditions: [cond] };
    expect(statusChanged(base, { ...base, observedGeneration: 2 })).toBe(true);
    expect(statusChanged(base, { ...base, conditions: [{ ...cond, message: 'other' }] })).toBe(true);
    expect(statusChanged(base, { ...base, reachableInterfaces: '0/1' })).toBe(true);
    expect(statusChanged(undefined, base)).toBe(true);
  });

  it('sees a removed owned field', () => {
    const card = { digest: 'sha256:00', bytes: 1, version: '1', configMap: 'x-agent-card' };
    expect(statusChanged({ observedGeneration: 1, card }, { observedGeneration: 1 })).toBe(true);
  });

  it('canonical JSON sorts nested keys but keeps array order', () => {
    expect(sortedJson({ b: 1, a: { d: [2, 1], c: undefined } })).toBe('{"a":{"d":[2,1]},"b":1}');
  });

  it('the apply body carries only identity and owned fields', () => {
    const body = statusApplyBody(
      { apiVersion: 'agentcard.dev/v1alpha1', kind: 'AgentCard', name: 'a', namespace: 'ns' },
      { observedGeneration: 3, ...({ someoneElses: { note: 'not ours' } } as object) },
    );
    expect(body).toEqual({
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'AgentCard',
      metadata: { name: 'a', namespace: 'ns' },
      status: { observedGeneration: 3 },
    });
    expect(ownedStatus(null)).toEqual({});
  });
});
