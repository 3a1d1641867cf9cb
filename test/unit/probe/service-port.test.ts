/**
 * The Service port check (operator/probe/service-port.ts): which host names name a Service of
 * the card's namespace, the message naming the ports that exist, and that probeInterface stops
 * before connecting when the port is not the Service's (a counting TCP listener proves no
 * connection was made). The Service lookup is an in-memory answer here; the operator's, against
 * the real API server, is tested in test/integration/controller-probes.test.ts.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Resolver } from '../../../operator/probe/connect.ts';
import { createAddressPolicy } from '../../../operator/probe/policy.ts';
import { probeInterface } from '../../../operator/probe/probe.ts';
import {
  serviceOfHost,
  servicePortCheck,
  servicePortProblem,
  type ServicePortsView,
} from '../../../operator/probe/service-port.ts';
import { PROBE_REASONS } from '../../../operator/api/reasons.ts';

const demoAgent: ServicePortsView = {
  name: 'demo-agent',
  type: 'ClusterIP',
  clusterIP: '10.0.0.42',
  ports: [
    { name: 'a2a', port: 8080, protocol: 'TCP' },
    { name: 'grpc', port: 8081, protocol: 'TCP' },
    { name: 'agent-card', port: 8095, protocol: 'TCP' },
  ],
};

describe('serviceOfHost', () => {
  it('reads <service>.<namespace>.svc and .svc.cluster.local of the card namespace only', () => {
    expect(serviceOfHost('demo-agent.team.svc.cluster.local', 'team')).toBe('demo-agent');
    expect(serviceOfHost('Demo-Agent.TEAM.svc.cluster.local.', 'team')).toBe('demo-agent');
    expect(serviceOfHost('demo-agent.team.svc', 'team')).toBe('demo-agent');
    expect(serviceOfHost('demo-agent.other.svc.cluster.local', 'team')).toBeUndefined();
    expect(serviceOfHost('demo-agent', 'team')).toBeUndefined();
    expect(serviceOfHost('demo-agent.team', 'team')).toBeUndefined();
    expect(serviceOfHost('demo-agent.team.svc.example.com', 'team')).toBeUndefined();
    expect(serviceOfHost('pod.demo-agent.team.svc.cluster.local', 'team')).toBeUndefined();
    expect(serviceOfHost('10.0.0.42', 'team')).toBeUndefined();
  });
});

describe('servicePortProblem', () => {
  it("names the Service's ports when the URL's port is not one of them", () => {
    expect(servicePortProblem(demoAgent, 9999)).toBe(
      'Service demo-agent has no port 9999; its ports are a2a 8080, grpc 8081, agent-card 8095',
    );
    expect(servicePortProblem(demoAgent, 8081)).toBeUndefined();
  });

  it('counts TCP ports only, names unnamed ones by number, and says when there is none', () => {
    const one = { ...demoAgent, ports: [{ port: 80 }, { name: 'dns', port: 53, protocol: 'UDP' }] };
    expect(servicePortProblem(one, 53)).toBe('Service demo-agent has no port 53; its port is 80');
    expect(servicePortProblem({ ...demoAgent, ports: [] }, 80)).toBe(
      'Service demo-agent has no port 80; it has no TCP ports',
    );
  });

  it('leaves headless and ExternalName Services to the probe (their names resolve past the cluster IP)', () => {
    expect(servicePortProblem({ ...demoAgent, clusterIP: 'None' }, 9999)).toBeUndefined();
    expect(
      servicePortProblem({ ...demoAgent, type: 'ExternalName', clusterIP: undefined }, 9999),
    ).toBeUndefined();
  });
});

describe('servicePortCheck', () => {
  const signal = new AbortController().signal;

  it("asks only for the card's namespace, and a failed or empty lookup lets the probe run", async () => {
    const asked: string[] = [];
    const check = servicePortCheck('team', async (name) => {
      asked.push(name);
      return name === 'demo-agent' ? demoAgent : undefined;
    });
    expect(await check('demo-agent.team.svc.cluster.local', 9999, signal)).toMatch(/has no port 9999/);
    expect(await check('demo-agent.other.svc.cluster.local', 9999, signal)).toBeUndefined();
    expect(await check('gone.team.svc', 9999, signal)).toBeUndefined();
    expect(asked).toEqual(['demo-agent', 'gone']);
    const failing = servicePortCheck('team', async () => {
      throw new Error('forbidden');
    });
    expect(await failing('demo-agent.team.svc', 9999, signal)).toBeUndefined();
  });

  it('gives up when the probe is aborted rather than wait for a slow lookup', async () => {
    const abort = new AbortController();
    const check = servicePortCheck('team', () => new Promise(() => {}));
    const answer = check('demo-agent.team.svc', 9999, abort.signal);
    abort.abort();
    expect(await answer).toBeUndefined();
  });
});

describe('probeInterface with the Service port check', () => {
  let connections = 0;
  let port = 0;
  const server = net.createServer((s) => {
    connections++;
    s.destroy();
  });
  beforeAll(async () => {
    port = await new Promise<number>((resolve) =>
      server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)),
    );
  });
  afterAll(() => new Promise((r) => server.close(r)));
  const resolver: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
  const policy = createAddressPolicy({ allowCidrs: ['127.0.0.0/8'] });
  const target = (p: number) => ({
    url: `http://demo-agent.team.svc.cluster.local:${p}/a2a/jsonrpc`,
    protocolBinding: 'JSONRPC',
    protocolVersion: '1.0',
  });
  const withPorts = (ports: number[]) =>
    servicePortCheck('team', async () => ({ ...demoAgent, ports: ports.map((p) => ({ port: p })) }));

  it('fails with ServicePortNotFound before any connection when the Service lacks the port', async () => {
    expect(PROBE_REASONS).toContain('ServicePortNotFound');
    const result = await probeInterface(target(port), {
      timeoutMs: 2000,
      policy,
      resolver,
      servicePort: withPorts([8080]),
    });
    expect(result).toMatchObject({
      reachable: false,
      reason: 'ServicePortNotFound',
      message: `Service demo-agent has no port ${port}; its port is 8080`,
    });
    expect(connections).toBe(0);
  });

  it('probes as usual when the port is one of the Service', async () => {
    const result = await probeInterface(target(port), {
      timeoutMs: 2000,
      policy,
      resolver,
      servicePort: withPorts([port]),
    });
    expect(result.reason).not.toBe('ServicePortNotFound');
    expect(connections).toBe(1);
  });
});
