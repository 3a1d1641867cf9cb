// Probe results in AgentCard status, on the real control plane, against real @a2a-js/sdk peers
// on loopback: verdicts, n/m, Ready, credentials from a Secret, and no writes while nothing changes.
import { describe, expect, it } from 'vitest';
import { startA2APeers, type A2APeers } from '../support/a2a-peers.ts';
import {
  condition,
  metricValue,
  operatorMetrics,
  RESOURCE,
  sampleCard,
  waitFor,
  useOperatorInNamespace,
  type AgentCardLive,
} from '../support/operator.ts';

let open: A2APeers;
let guarded: A2APeers;
const { api, ns, op } = useOperatorInNamespace('controller-probes', {
  probes: true,
  before: async () => {
    open = await startA2APeers();
    guarded = await startA2APeers({ bearer: 'probe-token-123' });
  },
  after: async () => {
    await open?.close();
    await guarded?.close();
  },
});

const jsonrpc = (url: string) => ({ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });

/** Every AgentCard of the namespace, by name, with its resourceVersion. */
async function resourceVersions(): Promise<Record<string, string>> {
  const list = (await api.custom.listNamespacedCustomObject({ ...RESOURCE, namespace: ns.name })) as {
    items: AgentCardLive[];
  };
  return Object.fromEntries(list.items.map((c) => [c.metadata.name, c.metadata.resourceVersion]));
}

/** The cards whose interfaces are probed, with how many interfaces each has. */
async function probingCards(): Promise<Array<{ name: string; interfaces: number }>> {
  const list = (await api.custom.listNamespacedCustomObject({ ...RESOURCE, namespace: ns.name })) as {
    items: AgentCardLive[];
  };
  return list.items
    .filter((c) => condition(c, 'InterfacesReachable')?.reason !== 'ProbesDisabled')
    .map((c) => ({
      name: c.metadata.name,
      interfaces: ((c.status as { interfaces?: unknown[] } | undefined)?.interfaces ?? []).length,
    }));
}

/** Probes the operator has run, over every card and verdict. */
async function probesRun(): Promise<number> {
  return metricValue(await operatorMetrics(op.metricsPort()), 'agentcard_probes_total');
}

async function settled(name: string, type = 'InterfacesReachable') {
  return waitFor(`${name} ${type} decided`, async () => {
    const card = await api.getCard(ns.name, name);
    const c = condition(card, type);
    return c && c.status !== 'Unknown' ? card : undefined;
  });
}

describe('controller: probe results in status', () => {
  it('reports a reachable interface and becomes Ready', async () => {
    await api.createCard(ns.name, 'up', {
      card: sampleCard('1.0.0', { supportedInterfaces: [jsonrpc(open.jsonrpc)] }),
      probe: { interval: '10s' },
    });
    const card = await settled('up');
    expect(condition(card, 'InterfacesReachable')).toMatchObject({
      status: 'True',
      message: expect.stringContaining('1/1'),
    });
    expect((card.status as Record<string, unknown>).reachableInterfaces).toBe('1/1');
    expect((card.status as { interfaces: unknown[] }).interfaces).toEqual([
      expect.objectContaining({ url: open.jsonrpc, reachable: true, reason: 'Reachable' }),
    ]);
    await waitFor(
      'Ready',
      async () => condition(await api.getCard(ns.name, 'up'), 'Ready')?.status === 'True',
    );
  });

  it('reports n/m and the failing reason, and Ready=False', async () => {
    await api.createCard(ns.name, 'half', {
      card: sampleCard('1.0.0', {
        supportedInterfaces: [jsonrpc(open.jsonrpc), jsonrpc('http://127.0.0.1:9/closed')],
      }),
      probe: { interval: '10s', timeout: '2s' },
    });
    const card = await settled('half');
    expect(condition(card, 'InterfacesReachable')).toMatchObject({
      status: 'False',
      reason: 'ConnectionFailed',
    });
    expect((card.status as Record<string, unknown>).reachableInterfaces).toBe('1/2');
    await waitFor('Ready=False', async () => {
      const c = condition(await api.getCard(ns.name, 'half'), 'Ready');
      return c?.status === 'False' && c.reason === 'ConnectionFailed';
    });
  });

  it("names the Service's ports when an interface URL names a port the Service does not have", async () => {
    // The demo agent's Service (examples/demo-agent.yaml); the API server gives it a cluster IP.
    await api.core.createNamespacedService({
      namespace: ns.name,
      body: {
        metadata: { name: 'demo-agent' },
        spec: {
          selector: { 'app.kubernetes.io/name': 'demo-agent' },
          ports: [
            { name: 'a2a', port: 8080, targetPort: 'a2a' },
            { name: 'grpc', port: 8081, targetPort: 'grpc' },
            { name: 'agent-card', port: 8095, targetPort: 'agent-card' },
          ],
        },
      },
    });
    const host = `demo-agent.${ns.name}.svc.cluster.local`;
    await api.createCard(ns.name, 'wrong-port', {
      card: sampleCard('1.0.0', {
        supportedInterfaces: [
          jsonrpc(`http://${host}:9999/a2a/jsonrpc`),
          jsonrpc(`http://${host}:8080/a2a/jsonrpc`),
        ],
      }),
      probe: { interval: '10s', timeout: '2s' },
    });
    const card = await settled('wrong-port');
    const message = 'Service demo-agent has no port 9999; its ports are a2a 8080, grpc 8081, agent-card 8095';
    expect(condition(card, 'InterfacesReachable')).toMatchObject({
      status: 'False',
      reason: 'ServicePortNotFound',
      message: expect.stringContaining(message),
    });
    const interfaces = (card.status as { interfaces: { reason: string; message: string }[] }).interfaces;
    expect(interfaces[0]).toMatchObject({ reason: 'ServicePortNotFound', message });
    // A port the Service has is probed as usual (no cluster DNS here: it fails otherwise).
    expect(interfaces[1]!.reason).not.toBe('ServicePortNotFound');
    await waitFor('Ready=False', async () => {
      const c = condition(await api.getCard(ns.name, 'wrong-port'), 'Ready');
      return c?.status === 'False' && c.reason === 'ServicePortNotFound';
    });
    // Out of the way of the cases that count every card's writes (its DNS failure may vary).
    await api.custom.deleteNamespacedCustomObject({ ...RESOURCE, namespace: ns.name, name: 'wrong-port' });
  });

  it('sends credentials from a Secret only when configured', async () => {
    await api.putSecret(ns.name, 'probe-token', { token: 'probe-token-123\n' }, false);
    await api.createCard(ns.name, 'authed', {
      card: sampleCard('1.0.0', { supportedInterfaces: [jsonrpc(guarded.jsonrpc)] }),
      probe: {
        interval: '10s',
        credentials: [
          { url: guarded.jsonrpc, type: 'bearer', secretRef: { name: 'probe-token', key: 'token' } },
        ],
      },
    });
    await api.createCard(ns.name, 'anonymous', {
      card: sampleCard('1.0.0', { supportedInterfaces: [jsonrpc(guarded.jsonrpc)] }),
      probe: { interval: '10s' },
    });
    expect(condition(await settled('authed'), 'InterfacesReachable')).toMatchObject({ status: 'True' });
    expect(condition(await settled('anonymous'), 'InterfacesReachable')).toMatchObject({
      status: 'False',
      reason: 'Unauthenticated',
    });
    expect(op.logs.join('\n')).not.toContain('probe-token-123');
  });

  it('writes nothing while the verdicts stay the same (two probe rounds)', async () => {
    // A card of its own (one reachable interface, one refused), so the case runs alone; with the
    // file's other cards, every card in the namespace is checked.
    await api.createCard(ns.name, 'steady', {
      card: sampleCard('1.0.0', {
        supportedInterfaces: [jsonrpc(open.jsonrpc), jsonrpc('http://127.0.0.1:9/closed')],
      }),
      probe: { interval: '10s', timeout: '2s' },
    });
    await waitFor('steady Ready=False', async () => {
      const c = condition(await api.getCard(ns.name, 'steady'), 'Ready');
      return c?.status === 'False' && c.reason === 'ConnectionFailed';
    });
    const before = await resourceVersions();
    // Rounds counted, not slept through: every probing card runs one round per 10 s interval, so
    // their round counts differ by one at most; once the probes run reach three per probed
    // interface, the card with the fewest rounds has had two.
    const interfaces = (await probingCards()).reduce((n, c) => n + c.interfaces, 0);
    const probesBefore = await probesRun();
    await waitFor(
      `${3 * interfaces} more probes (two rounds of every card)`,
      async () => (await probesRun()) - probesBefore >= 3 * interfaces,
      60_000,
    );
    expect(await resourceVersions()).toEqual(before);
  }, 90_000);

  it('turning probes off in the spec reports ProbesDisabled and Ready without a reachability claim', async () => {
    // A card of its own, probed and failing first (one interface refuses), so the case runs alone.
    await api.createCard(ns.name, 'switched', {
      card: sampleCard('1.0.0', {
        supportedInterfaces: [jsonrpc(open.jsonrpc), jsonrpc('http://127.0.0.1:9/closed')],
      }),
      probe: { interval: '10s', timeout: '2s' },
    });
    expect(condition(await settled('switched'), 'InterfacesReachable')?.status).toBe('False');
    const card = await api.getCard(ns.name, 'switched');
    await api.replaceSpec(ns.name, 'switched', { ...card!.spec, probe: { enabled: false } });
    await waitFor('ProbesDisabled', async () => {
      const c = await api.getCard(ns.name, 'switched');
      return (
        condition(c, 'InterfacesReachable')?.reason === 'ProbesDisabled' &&
        condition(c, 'Ready')?.status === 'True'
      );
    });
    const c = await api.getCard(ns.name, 'switched');
    expect((c!.status as Record<string, unknown>).interfaces).toBeUndefined();
    expect(condition(c, 'Ready')!.message).toContain('interfaces not probed');
  });
});
