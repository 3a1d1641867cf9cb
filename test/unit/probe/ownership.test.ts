/**
 * The namespace rule of the probe policy: the pure decision (ownership.ts) and how a connection
 * applies it (judgeAddress): which refusals it may lift, and what a refusal says.
 */
import { describe, expect, it } from 'vitest';
import { judgeAddress } from '../../../operator/probe/connect.ts';
import {
  type OwnerCheck,
  type PodView,
  podOwnership,
  serviceOwnership,
} from '../../../operator/probe/ownership.ts';
import { createAddressPolicy } from '../../../operator/probe/policy.ts';

const pod = (over: Partial<PodView> = {}): PodView => ({
  name: 'agent-0',
  hostNetwork: false,
  phase: 'Running',
  ips: ['10.244.1.5'],
  ...over,
});

describe('podOwnership', () => {
  it('a running or pending Pod of the namespace owns its IP', () => {
    expect(podOwnership('10.244.1.5', 'team-a', [pod()])).toEqual({ owned: true, by: 'Pod team-a/agent-0' });
    expect(podOwnership('10.244.1.5', 'team-a', [pod({ phase: 'Pending' })]).owned).toBe(true);
  });

  it("a hostNetwork Pod's IP is the node's: refused", () => {
    const v = podOwnership('10.0.5.1', 'team-a', [pod({ hostNetwork: true, ips: ['10.0.5.1'] })]);
    expect(v).toEqual({ owned: false, why: expect.stringMatching(/agent-0 uses the host network/) });
  });

  it("an ended Pod's IP may belong to another namespace's Pod by now: refused", () => {
    for (const phase of ['Succeeded', 'Failed']) {
      expect(podOwnership('10.244.1.5', 'team-a', [pod({ phase })])).toEqual({
        owned: false,
        why: `Pod team-a/agent-0 has ended (${phase})`,
      });
    }
  });

  it('any counted Pod wins over an ended one with the same IP (the IP was reused in the namespace)', () => {
    const pods = [pod({ name: 'old', phase: 'Failed' }), pod({ name: 'new' })];
    expect(podOwnership('10.244.1.5', 'team-a', pods)).toEqual({ owned: true, by: 'Pod team-a/new' });
  });

  it('no Pod: not owned, and the message says so', () => {
    expect(podOwnership('10.244.1.5', 'team-a', [])).toEqual({
      owned: false,
      why: 'no Pod or Service of namespace team-a has this IP',
    });
  });
});

describe('serviceOwnership', () => {
  const svc = { name: 'agent', type: 'ClusterIP', clusterIPs: ['10.96.0.10'], selector: { app: 'agent' } };
  const pods = new Set(['10.244.1.5', '10.244.2.7']);

  it('a selector Service whose EndpointSlices list only its Pods is owned', () => {
    const slices = [{ name: 'agent-abc', addresses: ['10.244.1.5', '10.244.2.7'] }];
    expect(serviceOwnership('team-a', svc, slices, pods)).toEqual({
      owned: true,
      by: 'Service team-a/agent',
    });
    // No endpoints yet: nothing to route to but the namespace's own Pods later.
    expect(serviceOwnership('team-a', svc, [], pods).owned).toBe(true);
  });

  it('a selector-less Service routes to hand-made endpoints: refused', () => {
    for (const selector of [undefined, {}]) {
      const v = serviceOwnership('team-a', { ...svc, selector }, [], pods);
      expect(v).toEqual({ owned: false, why: expect.stringMatching(/has no selector/) });
    }
  });

  it('an ExternalName Service is refused', () => {
    const v = serviceOwnership('team-a', { ...svc, type: 'ExternalName', clusterIPs: [] }, [], pods);
    expect(v).toEqual({ owned: false, why: 'Service team-a/agent is an ExternalName Service' });
  });

  it('a hand-made EndpointSlice labelled with the Service name (a node, another namespace) is refused', () => {
    const slices = [
      { name: 'agent-abc', addresses: ['10.244.1.5'] },
      { name: 'by-hand', addresses: ['10.0.5.1'] },
    ];
    expect(serviceOwnership('team-a', svc, slices, pods)).toEqual({
      owned: false,
      why: 'EndpointSlice team-a/by-hand of Service team-a/agent lists 10.0.5.1, which is not the IP of a Pod the Service selects',
    });
  });
});

describe('judgeAddress: the policy, then the namespace rule', () => {
  const policy = createAddressPolicy({
    allowSetting: 'Helm value probes.allowCidrs, flag --probe-allow-cidr',
  });
  const signal = new AbortController().signal;
  const asked: string[] = [];
  const owner: OwnerCheck = async (ip) => {
    asked.push(ip);
    return ip === '10.244.1.5'
      ? { owned: true, by: 'Pod team-a/agent-0' }
      : { owned: false, why: 'no Pod or Service of namespace team-a has this IP' };
  };

  it('allows a private address the namespace owns', async () => {
    expect(await judgeAddress('10.244.1.5', { policy, owner, signal })).toEqual({ allowed: true });
  });

  it('refuses one it does not own, naming the range, the rule and the setting', async () => {
    const v = await judgeAddress('10.244.9.9', { policy, owner, signal });
    expect(v.allowed).toBe(false);
    if (v.allowed) return;
    expect(v.message).toBe(
      "10.244.9.9 is private (10.0.0.0/8), refused unless an allowed CIDR covers it (Helm value probes.allowCidrs, flag --probe-allow-cidr), and no Pod or Service of namespace team-a has this IP (addresses of the AgentCard's own namespace's Pods and selector Services are allowed)",
    );
  });

  it('never asks about loopback, link-local, metadata or IPv4-mapped loopback: no object can lift them', async () => {
    asked.length = 0;
    const always: OwnerCheck = async () => ({ owned: true, by: 'anything' });
    for (const ip of [
      '127.0.0.1',
      '::1',
      '169.254.169.254',
      'fd00:ec2::254',
      '::ffff:127.0.0.1',
      '0.0.0.0',
    ]) {
      const v = await judgeAddress(ip, {
        policy,
        owner: async (a, s) => (asked.push(a), always(a, s)),
        signal,
      });
      expect(v.allowed, ip).toBe(false);
    }
    expect(asked).toEqual([]);
  });

  it('a public address is allowed without asking; with no owner (the CLI) the policy alone decides', async () => {
    asked.length = 0;
    expect(await judgeAddress('203.0.114.1', { policy, owner, signal })).toEqual({ allowed: true });
    expect(asked).toEqual([]);
    expect((await judgeAddress('10.244.1.5', { policy, signal })).allowed).toBe(false);
  });

  it('an allowed CIDR lifts the refusal without any lookup (the cross-namespace choice)', async () => {
    asked.length = 0;
    const open = createAddressPolicy({ allowCidrs: ['10.0.0.0/8'] });
    expect(await judgeAddress('10.9.9.9', { policy: open, owner, signal })).toEqual({ allowed: true });
    expect(asked).toEqual([]);
  });

  it('a deny CIDR (a cluster range in public space) is liftable by the namespace rule, like private ranges', async () => {
    const deny = createAddressPolicy({ denyCidrs: ['10.244.0.0/16'] });
    expect(deny.check('10.244.1.5')).toMatchObject({ allowed: false, namespaceLiftable: true });
    expect(await judgeAddress('10.244.1.5', { policy: deny, owner, signal })).toEqual({ allowed: true });
  });
});
