/**
 * End to end, with no probe setting at all: the operator reaches an A2A agent of its AgentCard's
 * namespace by the Service's DNS name and by the Pod's IP, and refuses another namespace's Pod
 * and a hostNetwork Pod. The control plane has no node and no Pod network, so the test makes one
 * it owns: a network namespace (unshare) whose loopback carries the Pod IPs and the Service's
 * cluster IP, a hosts file (bind-mounted in a mount namespace of its own) as the cluster DNS, and
 * real A2A peers listening there; the operator runs inside it and reaches the API server through
 * a Unix socket. A cluster IP answered by a local listener stands in for kube-proxy's DNAT: the
 * policy judges the address connected to, which is what kube-proxy would then translate.
 * Nothing changes the machine's own network namespace.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestNamespace, kubeConfig, kubeconfigPath, type TestNamespace } from '../support/cluster.ts';
import { repoRoot } from '../support/paths.ts';
import { Api, condition, sampleCard, waitFor } from '../support/operator.ts';

const kc = kubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const api = new Api(kc);
const canUnshare = process.getuid?.() === 0;

let mine: TestNamespace;
let other: TestNamespace;
let work: string;
let apiProxy: Server;
let child: ChildProcess | undefined;
let log = '';
let port = 0;
let clusterIp = '';

const POD_IP = '10.244.0.5';
const FOREIGN_POD_IP = '10.244.0.6';
const HOST_NETWORK_IP = '10.244.0.7';

async function podWithIp(namespace: string, name: string, ip: string, hostNetwork = false) {
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name, labels: { app: name } },
      spec: { containers: [{ name: 'agent', image: 'registry.example.com/agent:1' }], hostNetwork },
    },
  });
  const live = await core.readNamespacedPod({ name, namespace });
  live.status = { ...live.status, phase: 'Running', podIP: ip, podIPs: [{ ip }] };
  await core.replaceNamespacedPodStatus({ name, namespace, body: live });
}

beforeAll(async () => {
  if (!canUnshare) return;
  mine = await createTestNamespace('ns-e2e');
  other = await createTestNamespace('ns-e2e-other');
  work = mkdtempSync(join(tmpdir(), 'agentcard-netns-'));
  await podWithIp(mine.name, 'agent', POD_IP);
  await podWithIp(other.name, 'theirs', FOREIGN_POD_IP);
  await podWithIp(mine.name, 'on-node', HOST_NETWORK_IP, true);
  const service = await core.createNamespacedService({
    namespace: mine.name,
    body: { metadata: { name: 'agent' }, spec: { selector: { app: 'agent' }, ports: [{ port: 80 }] } },
  });
  clusterIp = service.spec!.clusterIP!;

  // The API server, for the operator in the network namespace: a Unix socket in front of it.
  const server = new URL(kc.getCurrentCluster()!.server);
  const socket = join(work, 'api.sock');
  apiProxy = createServer((inbound) => {
    const outbound = connect(Number(server.port), server.hostname);
    inbound.pipe(outbound).pipe(inbound);
    inbound.on('error', () => outbound.destroy());
    outbound.on('error', () => inbound.destroy());
  });
  await new Promise<void>((resolve) => apiProxy.listen(socket, resolve));

  const hosts = join(work, 'hosts');
  writeFileSync(hosts, `127.0.0.1 localhost\n${clusterIp} agent.${mine.name}.svc.cluster.local\n`);
  const node = join(repoRoot, 'node_modules', '.bin', 'node');
  const script = [
    'set -e',
    'ip link set lo up',
    ...[POD_IP, FOREIGN_POD_IP, HOST_NETWORK_IP, clusterIp].map((ip) => `ip addr add ${ip}/32 dev lo`),
    `mount --bind ${hosts} /etc/hosts`,
    `exec ${node} ${join(repoRoot, 'test', 'support', 'netns-child.ts')}`,
  ].join('\n');
  child = spawn('unshare', ['--net', '--mount', '--propagation', 'private', 'sh', '-c', script], {
    cwd: repoRoot,
    env: {
      ...process.env,
      API_SOCKET: socket,
      API_PORT: server.port,
      NAMESPACE: mine.name,
      KUBECONFIG_FILE: kubeconfigPath(),
      KUBECONFIG: '',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (b: Buffer) => {
    const m = /"port":(\d+)/.exec(b.toString());
    if (m) port = Number(m[1]);
  });
  child.stderr!.on('data', (b: Buffer) => (log += b.toString()));
  await waitFor(
    'the agent in the network namespace',
    async () => port !== 0 || child!.exitCode !== null,
    60_000,
  );
  if (port === 0) throw new Error(`the network namespace did not start: ${log.slice(-1000)}`);
  // The Service exposes the port the agent listens on: the probe checks a URL's port against the
  // Service's ports before it connects (ServicePortNotFound).
  const live = await core.readNamespacedService({ name: 'agent', namespace: mine.name });
  live.spec!.ports = [{ port, targetPort: port }];
  await core.replaceNamespacedService({ name: 'agent', namespace: mine.name, body: live });
}, 120_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((r) => child!.once('exit', r));
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
    if (child.exitCode === null) child.kill('SIGKILL');
  }
  apiProxy?.close();
  await mine?.cleanup();
  await other?.cleanup();
  if (work) rmSync(work, { recursive: true, force: true });
});

const jsonrpc = (host: string) => ({
  url: `http://${host}:${port}/jsonrpc`,
  protocolBinding: 'JSONRPC',
  protocolVersion: '1.0',
});

async function verdict(name: string) {
  return waitFor(
    `${name} probed`,
    async () => {
      const card = await api.getCard(mine.name, name);
      const c = condition(card, 'InterfacesReachable');
      return c && c.status !== 'Unknown' ? card : undefined;
    },
    60_000,
  );
}

describe.runIf(canUnshare)("probes of the namespace's own workloads, with no setting", () => {
  it("reaches the agent by its Service's DNS name and by its Pod IP: Ready=True", async () => {
    await api.createCard(mine.name, 'by-service', {
      card: sampleCard('1.0.0', { supportedInterfaces: [jsonrpc(`agent.${mine.name}.svc.cluster.local`)] }),
    });
    await api.createCard(mine.name, 'by-pod-ip', {
      card: sampleCard('1.0.0', { supportedInterfaces: [jsonrpc(POD_IP)] }),
    });
    for (const name of ['by-service', 'by-pod-ip']) {
      const card = await verdict(name);
      expect(condition(card, 'InterfacesReachable'), `${name}: ${log.slice(-500)}`).toMatchObject({
        status: 'True',
      });
      await waitFor(
        `${name} Ready`,
        async () => condition(await api.getCard(mine.name, name), 'Ready')?.status === 'True',
      );
    }
  }, 120_000);

  it("refuses another namespace's Pod and a hostNetwork Pod (the node), naming the setting", async () => {
    await api.createCard(mine.name, 'foreign', {
      card: sampleCard('1.0.0', { supportedInterfaces: [jsonrpc(FOREIGN_POD_IP)] }),
    });
    await api.createCard(mine.name, 'node', {
      card: sampleCard('1.0.0', { supportedInterfaces: [jsonrpc(HOST_NETWORK_IP)] }),
    });
    const foreign = (await verdict('foreign')).status as {
      interfaces: { reason: string; message: string }[];
    };
    expect(foreign.interfaces[0]).toMatchObject({
      reason: 'Blocked',
      message: expect.stringMatching(
        new RegExp(
          `10\\.244\\.0\\.6 is private .*probes\\.allowCidrs.*--probe-allow-cidr.*no Pod or Service of namespace ${mine.name} has this IP`,
        ),
      ),
    });
    const node = (await verdict('node')).status as { interfaces: { reason: string; message: string }[] };
    expect(node.interfaces[0]).toMatchObject({
      reason: 'Blocked',
      message: expect.stringContaining('uses the host network'),
    });
  }, 120_000);
});
