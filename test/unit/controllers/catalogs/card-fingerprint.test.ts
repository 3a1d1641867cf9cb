import { describe, expect, it } from 'vitest';
import { cardFingerprint, cardView } from '../../../../operator/controllers/catalogs/card-view.ts';
import type { AgentCardObject } from '../../../../operator/api/objects.ts';

function card(status: Record<string, unknown>, version = '1.0.0'): AgentCardObject {
  return {
    metadata: { name: 'w', namespace: 'ns', uid: 'u', generation: 1 },
    spec: { card: { name: 'W', version, description: 'd'.repeat(2_000) } },
    status,
  } as unknown as AgentCardObject;
}

const ready = (extra: Record<string, unknown> = {}) => ({
  conditions: [{ type: 'Ready', status: 'True', observedGeneration: 1 }],
  card: { digest: 'sha256:aa' },
  ...extra,
});

describe('cardFingerprint (what a catalog reads of a card)', () => {
  it('is a short digest, equal for equal facts and different when a fact a catalog shows changes', () => {
    const print = cardFingerprint(card(ready()));
    expect(print).toHaveLength(44);
    expect(cardFingerprint(card(ready()))).toBe(print);
    // A field no catalog reads (a serving count) does not change it.
    expect(cardFingerprint(card(ready({ serving: { podsMissingSidecar: 3 } })))).toBe(print);
    expect(cardFingerprint(card(ready(), '2.0.0'))).not.toBe(print);
    expect(cardFingerprint(card(ready({ card: { digest: 'sha256:bb' } })))).not.toBe(print);
    expect(
      cardFingerprint(card({ conditions: [{ type: 'Ready', status: 'False', observedGeneration: 1 }] })),
    ).not.toBe(print);
  });

  it('reads a PolicyEnforced verdict of the current generation only', () => {
    const policy = (reason: string, observedGeneration = 1) => ({
      type: 'PolicyCompliant',
      status: 'False',
      reason,
      message: 'fails 1 rule',
      observedGeneration,
    });
    const withConditions = (c: unknown) =>
      card(ready({ conditions: [{ type: 'Ready', status: 'True', observedGeneration: 1 }, c] }));
    expect(cardView(withConditions(policy('PolicyEnforced'))).policyWithheld).toBe('fails 1 rule');
    expect(cardView(withConditions(policy('PolicyViolation'))).policyWithheld).toBeUndefined();
    expect(cardView(withConditions(policy('PolicyEnforced', 0))).policyWithheld).toBeUndefined();
    expect(cardFingerprint(withConditions(policy('PolicyEnforced')))).not.toBe(
      cardFingerprint(card(ready())),
    );
  });
});
