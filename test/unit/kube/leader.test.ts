import { describe, expect, it } from 'vitest';
import { decide, microTime, nextRecord, releasedRecord, sameRecord } from '../../../operator/kube/leader.ts';

describe('lease decisions', () => {
  const held = {
    holderIdentity: 'b',
    leaseDurationSeconds: 15,
    renewTime: 't',
    acquireTime: 't',
    leaseTransitions: 2,
  };

  it('acquires a missing or released lease, renews its own', () => {
    expect(decide(undefined, 'a', 0, 0, 15)).toBe('acquire');
    expect(decide({ ...held, holderIdentity: '' }, 'a', 1_000, 1_000, 15)).toBe('acquire');
    expect(decide({ ...held, holderIdentity: 'a' }, 'a', 1_000, 1_000, 15)).toBe('renew');
  });

  it("waits for another holder's lease to expire on its own clock since it first saw the record", () => {
    expect(decide(held, 'a', 10_000, 24_999, 15)).toBe('wait');
    expect(decide(held, 'a', 10_000, 25_000, 15)).toBe('acquire');
    // The record's own duration wins over the default.
    expect(decide({ ...held, leaseDurationSeconds: 1 }, 'a', 10_000, 11_000, 15)).toBe('acquire');
  });

  it('counts transitions and keeps acquireTime on renewal', () => {
    const taken = nextRecord(held, 'a', 'T1', 15);
    expect(taken).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: 'T1',
      renewTime: 'T1',
      leaseTransitions: 3,
    });
    const renewed = nextRecord(taken, 'a', 'T2', 15);
    expect(renewed).toMatchObject({ acquireTime: 'T1', renewTime: 'T2', leaseTransitions: 3 });
    expect(nextRecord(undefined, 'a', 'T0', 15).leaseTransitions).toBe(0);
  });

  it('a released record has no holder and a 1 s duration', () => {
    expect(releasedRecord(held, 'T9')).toMatchObject({
      holderIdentity: '',
      leaseDurationSeconds: 1,
      renewTime: 'T9',
    });
  });

  it('compares records by what any write changes', () => {
    expect(sameRecord(held, { ...held })).toBe(true);
    expect(sameRecord(held, { ...held, renewTime: 'u' })).toBe(false);
    expect(sameRecord(undefined, held)).toBe(false);
  });

  it('formats MicroTime with six fractional digits', () => {
    expect(microTime(new Date('2030-01-02T03:04:05.678Z'))).toBe('2030-01-02T03:04:05.678000Z');
  });
});
