/**
 * The probes' namespace rule against the real API server's Pods, Services and EndpointSlices:
 * the lookup (operator/controllers/agentcard/namespace-addresses.ts) with Pod IPs set through the status
 * subresource as the kubelet sets them, hostNetwork and ended Pods, selector-less, ExternalName
 * and hand-patched Services, and another namespace's objects. No Pod runs (the control plane has
 * no node); end-to-end reachability is in probe-namespace-e2e.test.ts.
 */
import { CoreV1Api, DiscoveryV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NamespaceAddresses } from '../../operator/controllers/agentcard/namespace-addresses.ts';
import { KubeClient } from '../../operator/kube/client.ts';
import { createTestNamespace, kubeConfig, type TestNamespace } from '../support/cluster.ts';

const kc = kubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const discovery = kc.makeApiClient(DiscoveryV1Api);
let mine: TestNamespace;
let other: TestNamespace;

/** Creates a Pod, then sets its IPs and phase through pods/status, the kubelet's way. */
async function pod(
  namespace: string,
  name: string,
  ips: string[],
  opts: { hostNetwork?: boolean; phase?: string; labels?: Record<string, string> } = {},
): Promise<V1Pod> {
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, labels: opts.labels ?? {} },
      spec: {
        containers: [{ name: 'agent', image: 'registry.example.com/agent:1' }],
        ...(opts.hostNetwork ? { hostNetwork: true } : {}),
      },
    },
  });
  const live = await core.readNamespacedPod({ name, namespace });
  live.status = {
    ...live.status,
    phase: opts.phase ?? 'Running',
    podIP: ips[0],
    podIPs: ips.map((ip) => ({ ip })),
  };
  return core.replaceNamespacedPodStatus({ name, namespace, body: live });
}

async function service(namespace: string, name: string, spec: Record<string, unknown>): Promise<string> {
  const created = await core.createNamespacedService({ namespace, body: { metadata: { name }, spec } });
  return created.spec?.clusterIP ?? '';
}

// Fresh answers in every test: the cache is tested on its own.
const lookup = () => new NamespaceAddresses({ client: new KubeClient(kc), ownedTtlMs: 0, notOwnedTtlMs: 0 });

beforeAll(async () => {
  mine = await createTestNamespace('ns-rule');
  other = await createTestNamespace('ns-rule-other');
}, 60_000);
afterAll(async () => {
  await mine?.cleanup();
  await other?.cleanup();
});

describe('the namespace rule on real objects', () => {
  it("a Pod's IP is its namespace's, not another namespace's (a dual-stack Pod: its primary IP only)", async () => {
    await pod(mine.name, 'agent', ['10.244.1.5', 'fd00:10:244:1::5']);
    const l = lookup();
    expect(await l.lookup(mine.name, '10.244.1.5')).toEqual({ owned: true, by: `Pod ${mine.name}/agent` });
    // status.podIPs is not a selectable field: the second family's address is not found.
    expect(await l.lookup(mine.name, 'fd00:10:244:1::5')).toMatchObject({ owned: false });
    expect(await l.lookup(other.name, '10.244.1.5')).toEqual({
      owned: false,
      why: `no Pod or Service of namespace ${other.name} has this IP`,
    });
  });

  it('a status sent with the create is dropped by the API server: only pods/status sets an IP', async () => {
    await core.createNamespacedPod({
      namespace: mine.name,
      body: {
        metadata: { name: 'self-declared' },
        spec: { containers: [{ name: 'agent', image: 'registry.example.com/agent:1' }] },
        status: { podIP: '10.244.7.7', podIPs: [{ ip: '10.244.7.7' }] },
      },
    });
    const live = await core.readNamespacedPod({ name: 'self-declared', namespace: mine.name });
    expect(live.status?.podIPs).toBeUndefined();
    expect((await lookup().lookup(mine.name, '10.244.7.7')).owned).toBe(false);
  });

  it("a hostNetwork Pod's IP (the node's) and an ended Pod's IP are refused", async () => {
    await pod(mine.name, 'host-net', ['10.0.5.1'], { hostNetwork: true });
    await pod(mine.name, 'done', ['10.244.3.3'], { phase: 'Succeeded' });
    const l = lookup();
    expect(await l.lookup(mine.name, '10.0.5.1')).toEqual({
      owned: false,
      why: `Pod ${mine.name}/host-net uses the host network (its IP is the node's)`,
    });
    expect(await l.lookup(mine.name, '10.244.3.3')).toEqual({
      owned: false,
      why: `Pod ${mine.name}/done has ended (Succeeded)`,
    });
  });

  it("a selector Service's cluster IP is its namespace's; another namespace's Service is not", async () => {
    await pod(mine.name, 'web-0', ['10.244.4.4'], { labels: { app: 'web' } });
    const ip = await service(mine.name, 'web', { selector: { app: 'web' }, ports: [{ port: 80 }] });
    const foreign = await service(other.name, 'web', { selector: { app: 'web' }, ports: [{ port: 80 }] });
    const l = lookup();
    expect(await l.lookup(mine.name, ip)).toEqual({ owned: true, by: `Service ${mine.name}/web` });
    expect((await l.lookup(mine.name, foreign)).owned).toBe(false);
    expect((await l.lookup(other.name, foreign)).owned).toBe(true);
  });

  it('a selector-less Service, whatever its hand-made EndpointSlice says, is refused', async () => {
    const ip = await service(mine.name, 'by-hand', { ports: [{ port: 80 }] });
    await discovery.createNamespacedEndpointSlice({
      namespace: mine.name,
      body: {
        metadata: { name: 'by-hand-1', labels: { 'kubernetes.io/service-name': 'by-hand' } },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['10.244.4.4'] }],
        ports: [{ port: 80 }],
      },
    });
    expect(await lookup().lookup(mine.name, ip)).toEqual({
      owned: false,
      why: `Service ${mine.name}/by-hand has no selector (its endpoints are written by hand, not by Kubernetes)`,
    });
  });

  it("a hand-made EndpointSlice joined to a selector Service (a node, another namespace's Pod) is refused", async () => {
    await pod(other.name, 'theirs', ['10.244.9.9']);
    const ip = await service(mine.name, 'joined', { selector: { app: 'web' }, ports: [{ port: 80 }] });
    expect((await lookup().lookup(mine.name, ip)).owned).toBe(true);
    await discovery.createNamespacedEndpointSlice({
      namespace: mine.name,
      body: {
        metadata: { name: 'joined-extra', labels: { 'kubernetes.io/service-name': 'joined' } },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['10.244.9.9'] }],
        ports: [{ port: 80 }],
      },
    });
    expect(await lookup().lookup(mine.name, ip)).toEqual({
      owned: false,
      why: `EndpointSlice ${mine.name}/joined-extra of Service ${mine.name}/joined lists 10.244.9.9, which is not the IP of a Pod the Service selects`,
    });
  });

  it('an ExternalName Service has no cluster IP to match; a cluster IP is only chosen within the service range', async () => {
    const created = await core.createNamespacedService({
      namespace: mine.name,
      body: {
        metadata: { name: 'ext' },
        spec: { type: 'ExternalName', externalName: 'metadata.google.internal' },
      },
    });
    expect(created.spec?.clusterIP ?? '').toBe('');
    // A user may pick the cluster IP, but the API server refuses one outside the service range.
    await expect(
      core.createNamespacedService({
        namespace: mine.name,
        body: {
          metadata: { name: 'picked' },
          spec: { clusterIP: '10.244.1.5', selector: { app: 'x' }, ports: [{ port: 80 }] },
        },
      }),
    ).rejects.toMatchObject({ code: 422 });
  });

  it('answers are reused for a short while, and concurrent lookups share one', async () => {
    await pod(mine.name, 'cached', ['10.244.6.6']);
    let now = 0;
    const l = new NamespaceAddresses({ client: new KubeClient(kc), now: () => now });
    const answers = await Promise.all([1, 2, 3].map(() => l.lookup(mine.name, '10.244.6.6')));
    expect(answers.every((a) => a.owned)).toBe(true);
    expect(l.requests).toBe(1);
    now = 29_000;
    await l.lookup(mine.name, '10.244.6.6');
    expect(l.requests).toBe(1);
    now = 31_000;
    await l.lookup(mine.name, '10.244.6.6');
    expect(l.requests).toBe(2);
  });
});
