import { describe, expect, it } from 'vitest';
import {
  deriveReady,
  formatTime,
  setCondition,
  type ConditionInput,
} from '../../../../operator/controllers/agentcard/conditions.ts';

const t0 = new Date('2030-01-01T00:00:00.123Z');
const t1 = new Date('2030-01-01T00:05:00.999Z');

function c(
  type: string,
  status: 'True' | 'False' | 'Unknown',
  reason: string,
  generation = 2,
  message = 'm',
): ConditionInput {
  return { type, status, reason, message, observedGeneration: generation };
}

describe('setCondition', () => {
  it('stamps lastTransitionTime in whole seconds on a new condition', () => {
    const out = setCondition([], c('Accepted', 'True', 'Valid'), t0);
    expect(out).toEqual([{ ...c('Accepted', 'True', 'Valid'), lastTransitionTime: '2030-01-01T00:00:00Z' }]);
    expect(formatTime(t1)).toBe('2030-01-01T00:05:00Z');
  });

  it('keeps lastTransitionTime when only reason or message change, moves it on a status change', () => {
    const first = setCondition([], c('Signed', 'False', 'SigningKeyNotFound'), t0);
    const sameStatus = setCondition(first, c('Signed', 'False', 'SigningKeyInvalid', 3, 'other'), t1);
    expect(sameStatus[0]).toMatchObject({
      reason: 'SigningKeyInvalid',
      message: 'other',
      observedGeneration: 3,
    });
    expect(sameStatus[0]!.lastTransitionTime).toBe('2030-01-01T00:00:00Z');
    const flipped = setCondition(sameStatus, c('Signed', 'True', 'Signed'), t1);
    expect(flipped[0]!.lastTransitionTime).toBe('2030-01-01T00:05:00Z');
  });

  it('keeps the conditions in a fixed order and replaces by type', () => {
    let list = setCondition([], c('Ready', 'False', 'X'), t0);
    list = setCondition(list, c('Published', 'True', 'Published'), t0);
    list = setCondition(list, c('Accepted', 'True', 'Valid'), t0);
    list = setCondition(list, c('Accepted', 'False', 'InvalidSpec'), t0);
    expect(list.map((x) => `${x.type}=${x.status}`)).toEqual([
      'Accepted=False',
      'Published=True',
      'Ready=False',
    ]);
  });
});

describe('deriveReady', () => {
  const all = (over: Partial<Record<string, ConditionInput>> = {}) =>
    ['Accepted', 'Signed', 'Published', 'InterfacesReachable'].map((t) => over[t] ?? c(t, 'True', t));

  it('is True when all four prerequisites are True for the current generation', () => {
    const r = deriveReady(all(), 2);
    expect(r).toMatchObject({ status: 'True', reason: 'Ready', observedGeneration: 2 });
    expect(r.message).toBe('accepted, signed, published, interfaces reachable');
  });

  it('counts an unsigned-by-choice card and disabled probes as satisfied, and says so', () => {
    const r = deriveReady(
      all({
        Signed: c('Signed', 'False', 'SigningNotConfigured'),
        InterfacesReachable: c('InterfacesReachable', 'Unknown', 'ProbesDisabled'),
      }),
      2,
    );
    expect(r.status).toBe('True');
    expect(r.message).toBe('accepted, unsigned (no spec.signing), published, interfaces not probed');
  });

  it('is False with the first failing condition reason and message', () => {
    const r = deriveReady(
      all({
        Signed: c('Signed', 'False', 'SigningKeyNotFound', 2, 'Secret ns/k not found'),
        InterfacesReachable: c('InterfacesReachable', 'False', 'BindingMismatch'),
      }),
      2,
    );
    expect(r).toMatchObject({
      status: 'False',
      reason: 'SigningKeyNotFound',
      message: 'Signed: Secret ns/k not found',
    });
  });

  it('is Unknown while probes are pending and nothing is False', () => {
    const r = deriveReady(
      all({ InterfacesReachable: c('InterfacesReachable', 'Unknown', 'ProbesPending') }),
      2,
    );
    expect(r).toMatchObject({ status: 'Unknown', reason: 'ProbesPending' });
  });

  it('does not count a True condition of an older generation', () => {
    const r = deriveReady(all({ Published: c('Published', 'True', 'Published', 1) }), 2);
    expect(r).toMatchObject({ status: 'Unknown', reason: 'Reconciling' });
    expect(r.message).toContain('generation 1');
  });

  it('reports a missing prerequisite as not evaluated', () => {
    const r = deriveReady([c('Accepted', 'True', 'Valid')], 2);
    expect(r).toMatchObject({
      status: 'Unknown',
      reason: 'Reconciling',
      message: 'Signed is not evaluated yet',
    });
  });
});
