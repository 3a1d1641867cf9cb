import { describe, expect, it } from 'vitest';
import { plannedEvents } from '../../../../operator/controllers/agentcard/events.ts';
import type { Condition } from '../../../../operator/runtime/condition-types.ts';

function c(
  type: string,
  status: Condition['status'],
  reason: string,
  message = `${type} ${reason}`,
): Condition {
  return { type, status, reason, message, observedGeneration: 1, lastTransitionTime: '2030-01-01T00:00:00Z' };
}

describe('plannedEvents', () => {
  it('emits nothing when nothing changed', () => {
    const conds = [
      c('Accepted', 'True', 'Valid'),
      c('Signed', 'True', 'Signed'),
      c('Published', 'True', 'Published'),
    ];
    expect(plannedEvents(conds, conds, { digestBefore: 'sha256:a', digestAfter: 'sha256:a' })).toEqual([]);
  });

  it('a first successful reconcile emits one Published event that names the signing', () => {
    const after = [
      c('Accepted', 'True', 'Valid'),
      c('Signed', 'True', 'Signed', 'signed with k1 (ES256)'),
      c('Published', 'True', 'Published', 'ConfigMap x holds 1.0.0'),
    ];
    expect(plannedEvents(undefined, after, { digestAfter: 'sha256:a' })).toEqual([
      {
        type: 'Normal',
        reason: 'Published',
        action: 'Publish',
        message: 'ConfigMap x holds 1.0.0; signed with k1 (ES256)',
      },
    ]);
  });

  it('says Signed on its own when signing recovers without new bytes', () => {
    const before = [c('Signed', 'False', 'SigningKeyNotFound'), c('Published', 'True', 'Published')];
    const after = [c('Signed', 'True', 'Signed'), c('Published', 'True', 'Published')];
    expect(plannedEvents(before, after, { digestBefore: 'sha256:a', digestAfter: 'sha256:a' })).toEqual([
      expect.objectContaining({ type: 'Normal', reason: 'Signed' }),
    ]);
  });

  it('warns once per distinct invalid spec, again when the problem changes', () => {
    const bad1 = [c('Accepted', 'False', 'InvalidSpec', 'spec.card.name: Required')];
    const bad2 = [c('Accepted', 'False', 'InvalidSpec', 'spec.card.skills: Required')];
    const first = plannedEvents([c('Accepted', 'True', 'Valid')], bad1, {});
    expect(first).toEqual([
      { type: 'Warning', reason: 'InvalidSpec', action: 'Validate', message: 'spec.card.name: Required' },
    ]);
    expect(plannedEvents(bad1, bad1, {})).toEqual([]);
    expect(plannedEvents(bad1, bad2, {})).toHaveLength(1);
  });

  it('warns about signing key problems but not about an unsigned-by-choice card', () => {
    expect(plannedEvents(undefined, [c('Signed', 'False', 'SigningKeyNotFound')], {})[0]).toMatchObject({
      type: 'Warning',
      reason: 'SigningKeyNotFound',
    });
    expect(plannedEvents(undefined, [c('Signed', 'False', 'SigningNotConfigured')], {})).toEqual([]);
  });

  it('announces a new publication only when the digest changes', () => {
    const pub = [c('Published', 'True', 'Published')];
    expect(plannedEvents(pub, pub, { digestBefore: 'sha256:a', digestAfter: 'sha256:b' })).toHaveLength(1);
    expect(plannedEvents(pub, pub, { digestBefore: 'sha256:b', digestAfter: 'sha256:b' })).toHaveLength(0);
    expect(plannedEvents(pub, [c('Published', 'False', 'PublishFailed')], {})[0]).toMatchObject({
      type: 'Warning',
    });
  });

  it('reports reachability flips, not message churn', () => {
    const up = c('InterfacesReachable', 'True', 'Reachable', '2/2 reachable');
    const down = c('InterfacesReachable', 'False', 'BindingMismatch', '1/2 reachable');
    expect(plannedEvents([up], [down], {})[0]).toMatchObject({ type: 'Warning', reason: 'BindingMismatch' });
    expect(plannedEvents([down], [{ ...down, message: '0/2 reachable' }], {})).toEqual([]);
    expect(plannedEvents([down], [up], {})[0]).toMatchObject({ type: 'Normal', reason: 'Reachable' });
    // First result being True is not news.
    expect(plannedEvents(undefined, [up], {})).toEqual([]);
  });
});
