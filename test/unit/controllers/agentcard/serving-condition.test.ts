import { describe, expect, it } from 'vitest';
import { CentralHosts } from '../../../../operator/serving/central-hosts.ts';
import {
  servingCondition,
  withServingCondition,
} from '../../../../operator/controllers/agentcard/serving-condition.ts';
import type { ControllerStatus } from '../../../../operator/controllers/agentcard/status.ts';

const cm = (namespace: string, card: string, hosts: string[], extraKeys: string[] = [], central = true) => ({
  metadata: {
    namespace,
    labels: {
      'agentcard.dev/card': card,
      ...(central ? { 'agentcard.dev/serving': 'central' } : {}),
    },
  },
  data: {
    'agent-card.json': '{}',
    'serving-hosts': hosts.map((h) => `${h}\n`).join(''),
    ...Object.fromEntries(extraKeys.map((k) => [k, '{}'])),
  },
});

describe('CentralHosts', () => {
  it('reports both cards when a host becomes shared, and again when it is let go', () => {
    const hosts = new CentralHosts();
    expect(hosts.update(cm('a', 'one', ['shared.example.com', 'one.example.com']), false)).toEqual(['a/one']);
    expect(hosts.servingOf('a/one')).toEqual({ hosts: 2, conflicts: [] });
    // Same claims again (an echo): nothing to reconcile.
    expect(hosts.update(cm('a', 'one', ['shared.example.com', 'one.example.com']), false)).toEqual([]);
    expect(hosts.update(cm('b', 'two', ['Shared.Example.com']), false)).toEqual(['a/one', 'b/two']);
    expect(hosts.servingOf('a/one')?.conflicts).toEqual([{ host: 'shared.example.com', others: ['b/two'] }]);
    expect(hosts.servingOf('b/two')?.conflicts).toEqual([{ host: 'shared.example.com', others: ['a/one'] }]);
    expect(hosts.update(cm('b', 'two', ['two.example.com']), false)).toEqual(['a/one', 'b/two']);
    expect(hosts.servingOf('a/one')?.conflicts).toEqual([]);
  });

  it('counts audience hosts (variant keys) and ends a conflict when a ConfigMap goes or leaves central serving', () => {
    const hosts = new CentralHosts();
    hosts.update(
      cm('a', 'one', ['one.example.com'], ['wildcard.partners.example.com.agent-card.json']),
      false,
    );
    expect(
      hosts.update(cm('a', 'two', [], ['wildcard.partners.example.com.agent-card.json']), false),
    ).toEqual(['a/one', 'a/two']);
    expect(hosts.servingOf('a/two')?.conflicts).toEqual([
      { host: '*.partners.example.com', others: ['a/one'] },
    ]);
    // The second card goes back to its sidecar: no Serving condition for it, no conflict left.
    expect(hosts.update(cm('a', 'two', [], [], false), false)).toEqual(['a/one', 'a/two']);
    expect(hosts.servingOf('a/two')).toBeUndefined();
    expect(hosts.servingOf('a/one')?.conflicts).toEqual([]);
    hosts.update(cm('a', 'three', ['one.example.com']), false);
    expect(hosts.update(cm('a', 'three', ['one.example.com']), true)).toEqual(['a/one', 'a/three']);
    // A ConfigMap that is not a card's is ignored.
    expect(hosts.update({ metadata: { namespace: 'a', labels: {} } }, false)).toEqual([]);
  });
});

describe('servingCondition', () => {
  it('names a card of the same namespace, never one of another namespace', () => {
    const c = servingCondition(
      'team-a',
      {
        hosts: 2,
        conflicts: [
          { host: 'a.example.com', others: ['team-a/other'] },
          { host: 'b.example.com', others: ['team-b/secret-project', 'team-c/x'] },
        ],
      },
      3,
    );
    expect(c).toMatchObject({
      type: 'Serving',
      status: 'False',
      reason: 'HostConflict',
      observedGeneration: 3,
    });
    expect(c.message).toContain('a.example.com (also claimed by AgentCard other)');
    expect(c.message).toContain('b.example.com (also claimed by an AgentCard in another namespace)');
    expect(c.message).not.toMatch(/team-b|team-c|secret-project/);
  });

  it('says how many hosts are claimed alone, and lists at most five conflicts', () => {
    expect(servingCondition('a', { hosts: 1, conflicts: [] }, 1)).toMatchObject({
      status: 'True',
      reason: 'HostsUnique',
      message: 'no other AgentCard claims its 1 host on the card server',
    });
    const many = Array.from({ length: 7 }, (_, i) => ({ host: `h${i}.example.com`, others: ['a/x'] }));
    const c = servingCondition('a', { hosts: 7, conflicts: many }, 1);
    expect(c.message).toContain('h4.example.com');
    expect(c.message).not.toContain('h5.example.com');
    expect(c.message).toContain('and 2 more hosts');
  });
});

describe('withServingCondition', () => {
  const base = (conditions: ControllerStatus['conditions'] = []) => ({
    status: { observedGeneration: 1, conditions } as ControllerStatus,
    statusChanged: false,
    events: [],
  });
  const now = new Date('2026-12-01T00:00:00Z');

  it('adds the condition with a Warning on a conflict, once, and removes it for a sidecar card', () => {
    const conflict = { hosts: 1, conflicts: [{ host: 'a.example.com', others: ['n/b'] }] };
    const first = withServingCondition(base(), { status: {}, namespace: 'n', generation: 1 }, conflict, now);
    expect(first.statusChanged).toBe(true);
    expect(first.events).toMatchObject([{ type: 'Warning', reason: 'HostConflict' }]);
    const live = first.status;
    const again = withServingCondition(
      base(live.conditions),
      { status: live, namespace: 'n', generation: 1 },
      conflict,
      now,
    );
    expect(again.statusChanged).toBe(false);
    expect(again.events).toEqual([]);
    const sidecar = withServingCondition(
      base(live.conditions),
      { status: live, namespace: 'n', generation: 1 },
      undefined,
      now,
    );
    expect(sidecar.status.conditions?.map((c) => c.type)).toEqual([]);
    expect(sidecar.statusChanged).toBe(true);
  });
});
