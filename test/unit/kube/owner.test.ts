/**
 * The owner references the operator puts on its Lease and webhook Secret (operator/kube/owner.ts):
 * the garbage collector goes by UID, so a reference to an earlier Deployment of the same name is
 * replaced rather than kept beside the new one, and other owners stay.
 */
import { describe, expect, it } from 'vitest';
import { deploymentOwner, hasOwner, withOwner } from '../../../operator/kube/owner.ts';

const owner = deploymentOwner({ name: 'agentcard-operator', uid: 'uid-2' });

describe('owner references', () => {
  it('name the Deployment by apps/v1 kind, name and UID, without blockOwnerDeletion', () => {
    expect(owner).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: 'agentcard-operator',
      uid: 'uid-2',
    });
  });

  it('hasOwner goes by UID; no owner asked for counts as had', () => {
    expect(hasOwner({ ownerReferences: [owner] }, owner)).toBe(true);
    expect(hasOwner({ ownerReferences: [{ ...owner, uid: 'uid-1' }] }, owner)).toBe(false);
    expect(hasOwner({}, owner)).toBe(false);
    expect(hasOwner(undefined, undefined)).toBe(true);
  });

  it('withOwner replaces a reference to an earlier Deployment of the same name and keeps others', () => {
    const other = { apiVersion: 'v1', kind: 'ConfigMap', name: 'x', uid: 'uid-x' };
    expect(withOwner([{ ...owner, uid: 'uid-1' }, other], owner)).toEqual([other, owner]);
    expect(withOwner([owner], owner)).toEqual([owner]);
    expect(withOwner(undefined, owner)).toEqual([owner]);
    expect(withOwner([other], undefined)).toEqual([other]);
  });
});
