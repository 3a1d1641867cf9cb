/**
 * A one-node Kubernetes cluster whose Pods really run: etcd, kube-apiserver,
 * kube-controller-manager and kube-scheduler, plus a node (containerd with Debian's runc, the
 * CNI bridge plugin, the kubelet, kube-proxy in iptables mode and kube-router's network policy
 * controller, which enforces NetworkPolicies with iptables and ipset) and CoreDNS as a Pod.
 *
 * Everything runs inside namespaces that `up` creates and `down` removes, so the machine's own
 * network is never touched:
 * - one network namespace holds the node's network: its address (eth0, 10.10.0.2, a veth pair
 *   whose both ends stay inside), the CNI bridge and the Pods' veths, kube-proxy's and
 *   kube-router's iptables rules and kube-router's ipsets, and the control plane's ports (6443 and 2379 on the namespace's loopback);
 * - one mount namespace holds every mount the kubelet and containerd make (overlay rootfs,
 *   volumes, the Pods' network namespace files), on private tmpfs over /run, /var/lib and
 *   /var/log, so none leaks to the host and all vanish with the namespace;
 * - one PID namespace: its init is the `pause` helper, and its exit makes the kernel kill every
 *   process of the node, containers included.
 * Only the Pods' cgroups live outside (cgroup v1 is not namespaced): under a root of their own,
 * `/agentcard-node-<checkout>` in every hierarchy, which `down` removes.
 *
 * The host reaches the API server through a relay that needs no host interface: socat inside the
 * namespace bridges a unix socket (a file in the checkout) to 127.0.0.1:6443, and socat on the
 * host bridges a loopback port to that socket. The admin kubeconfig points at the host port.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { ensureBinaries } from '../controlplane/build.ts';
import { apiserverArgs, etcdArgs, writeKubeconfig } from '../controlplane/control.ts';
import { isAlive } from '../controlplane/lock.ts';
import { repoRoot } from '../controlplane/paths.ts';
import { clientTls, tlsRequest } from '../controlplane/tls-request.ts';
import { ensureTools } from '../controlplane/tools.ts';
import { freePorts } from '../support/ports.ts';
import { ensureNodeBinaries } from './build.ts';
import { nodeImages, writeImageArchive, type ImageSpec } from './images.ts';

const execFileAsync = promisify(execFile);

/**
 * Per-checkout state of the node cluster (git-ignored), apart from `.cluster/` of the
 * process-based one. `AGENTCARD_NODE_CLUSTER_DIR` puts it elsewhere: a second node, with its own
 * namespaces and cgroup root, next to the checkout's (the test of `cluster:down -- --node` does).
 */
export const nodeClusterDir = process.env.AGENTCARD_NODE_CLUSTER_DIR
  ? resolve(process.env.AGENTCARD_NODE_CLUSTER_DIR)
  : join(repoRoot, '.node-cluster');
export const nodeKubeconfig = join(nodeClusterDir, 'kubeconfig');
const stateFile = join(nodeClusterDir, 'state.json');
const pkiDir = join(nodeClusterDir, 'pki');

export const NODE_NAME = 'agentcard-node';
/** The node's address on its eth0, inside the node's network namespace. */
export const NODE_IP = '10.10.0.2';
export const POD_CIDR = '10.244.0.0/24';
export const SERVICE_CIDR = '10.0.0.0/24';
export const DNS_IP = '10.0.0.10';
const API_PORT = 6443;
const ETCD = { etcd: 2379, etcdPeer: 2380, apiserver: API_PORT };

/** The cgroup v1 hierarchies the kubelet and runc use, under /sys/fs/cgroup. */
const CGROUP_CONTROLLERS = [
  'cpu',
  'cpuacct',
  'cpuset',
  'memory',
  'devices',
  'freezer',
  'blkio',
  'pids',
  'systemd',
];
/**
 * Every hierarchy the node's cgroups end up in, for `down` and its leftover check: the v1 ones
 * above, and on a hybrid host the cgroup v2 hierarchy mounted at `unified`, where runc also puts
 * each container (we never create anything there, but its tree outlives the node unless removed).
 */
const CGROUP_HIERARCHIES = [...CGROUP_CONTROLLERS, 'unified'];

export interface NodeClusterState {
  /** The admin kubeconfig's server: the host end of the relay. */
  server: string;
  /** PID (host view) of the node's init; its namespaces are the node's. */
  initPid: number;
  /** PID of the host end of the relay. */
  relayPid: number;
  /** The cgroup root of the node's Pods, e.g. `/agentcard-node-1a2b3c4d`. */
  cgroupRoot: string;
  binDir: string;
  nodeBinDir: string;
  toolsDir: string;
  startedAt: string;
  /** The state folder (`nodeClusterDir` of the process that started it). */
  dir?: string;
  /** The node's namespaces as /proc/<pid>/ns/* name them, e.g. `net:[4026532412]`. */
  namespaces?: Partial<Record<NodeNamespace, string>>;
  /** The interfaces of the host's network namespace before `up` (`ip -o link`). */
  hostInterfaces?: string[];
}

/** The namespaces the node's init makes (`startInit`). */
const NODE_NAMESPACES = ['net', 'mnt', 'pid'] as const;
type NodeNamespace = (typeof NODE_NAMESPACES)[number];

export function readNodeState(): NodeClusterState | undefined {
  try {
    return JSON.parse(readFileSync(stateFile, 'utf8')) as NodeClusterState;
  } catch {
    return undefined;
  }
}

/** The cgroup root of this checkout's node: one per checkout, so two checkouts' nodes never share one. */
function cgroupRootFor(dir: string): string {
  return `/agentcard-node-${createHash('sha256').update(dir).digest('hex').slice(0, 8)}`;
}

/** Whether the node cluster of this checkout runs: its init is alive and the API server answers through the relay. */
export async function isNodeClusterReady(state = readNodeState()): Promise<boolean> {
  if (!state || !isAlive(state.initPid) || !isAlive(state.relayPid)) return false;
  try {
    const res = await tlsRequest(`${state.server}/readyz`, clientTls(pkiDir, 'admin'));
    return res.status === 200;
  } catch {
    return false;
  }
}

/**
 * Builds what is missing (first run on a machine), starts the node cluster and returns once the
 * node is Ready and CoreDNS answers. Reuses a running one (then `started` is false).
 */
export async function nodeUp(
  log: (line: string) => void,
): Promise<{ started: boolean; state: NodeClusterState }> {
  const existing = readNodeState();
  if (existing && (await isNodeClusterReady(existing))) return { started: false, state: existing };
  if (existing || existsSync(nodeClusterDir)) await nodeDown(log);

  const [binDir, nodeBinDir, toolsDir] = await Promise.all([
    ensureBinaries(log),
    ensureNodeBinaries(log),
    ensureTools(log),
  ]);
  const started = Date.now();
  // Before anything of the node exists: `nodeLeftovers` reports any interface not in this list.
  const hostInterfaces = hostInterfaceNames();
  mkdirSync(nodeClusterDir, { recursive: true });
  await execFileAsync(join(binDir, 'pki'), ['-dir', pkiDir]);
  await execFileAsync(join(nodeBinDir, 'node-pki'), ['-dir', pkiDir, '-node', NODE_NAME]);
  const images = nodeImages(nodeBinDir).map((spec) => archive(spec));

  const cgroupRoot = cgroupRootFor(nodeClusterDir);
  makeCgroupRoot(cgroupRoot);
  const initPid = startInit(nodeBinDir);
  const [hostPort] = await freePorts(1);
  const state: NodeClusterState = {
    server: `https://127.0.0.1:${hostPort}`,
    initPid,
    relayPid: 0,
    cgroupRoot,
    binDir,
    nodeBinDir,
    toolsDir,
    startedAt: new Date().toISOString(),
    dir: nodeClusterDir,
    hostInterfaces,
  };
  writeState(state);
  try {
    await waitUntil('the node namespaces', 10_000, async () =>
      existsSync(`/proc/${initPid}/root/run/agentcard-node-ready`),
    );
    state.namespaces = nodeNamespaces(initPid);
    writeState(state);
    await startControlPlane(state);
    state.relayPid = startHostRelay(hostPort!);
    writeState(state);
    writeKubeconfig(nodeKubeconfig, state.server, 'admin', 'agentcard-test-admin', pkiDir);
    await waitUntil('kube-apiserver (through the relay)', 120_000, async () => {
      const res = await tlsRequest(`${state.server}/readyz`, clientTls(pkiDir, 'admin'));
      return res.status === 200;
    });
    startControllers(state);
    log(`control plane up in ${seconds(started)} s`);
    await startNode(state, images);
    await waitUntil('the node to be Ready', 180_000, async () => {
      const out = await kubectl(state, [
        'get',
        'node',
        NODE_NAME,
        '-o',
        'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
      ]);
      return out.trim() === 'True';
    });
    log(`node Ready in ${seconds(started)} s`);
    await startNetworkPolicies(state);
    log(`network policies enforced (kube-router) in ${seconds(started)} s`);
    await kubectl(state, ['apply', '-f', '-'], coreDnsManifests());
    await kubectl(state, ['-n', 'kube-system', 'rollout', 'status', 'deployment/coredns', '--timeout=180s']);
    log(`node cluster up in ${seconds(started)} s: ${state.server}`);
    return { started: true, state };
  } catch (err) {
    await nodeDown(() => {}, { keepLogs: true });
    throw err;
  }
}

/**
 * Stops the node cluster and removes what it made: its processes (the PID namespace's init
 * takes them all), its mounts and network (they die with their namespaces), its cgroups and
 * `.node-cluster/`. With `keepLogs`, the logs stay for a failed start to be read.
 */
export async function nodeDown(
  log: (line: string) => void,
  opts: { keepLogs?: boolean } = {},
): Promise<void> {
  const state = readNodeState();
  if (state) {
    if (state.relayPid && isOurProcess(state.relayPid, 'socat')) process.kill(state.relayPid, 'SIGKILL');
    if (isOurProcess(state.initPid, 'unshare', 'pause')) {
      // SIGKILL to the init of a PID namespace kills every process in it; they are gone once
      // the init is reaped, which the unshare parent does.
      const init = nsInitPid(state.initPid);
      if (init !== undefined) process.kill(init, 'SIGKILL');
      await waitUntil('the node processes to exit', 30_000, async () => !isAlive(state.initPid)).catch(() => {
        process.kill(state.initPid, 'SIGKILL');
      });
    }
    await removeCgroupRoot(state.cgroupRoot);
    log('node cluster stopped');
  } else {
    await removeCgroupRoot(cgroupRootFor(nodeClusterDir));
  }
  if (opts.keepLogs) {
    for (const entry of readdirSync(nodeClusterDir, { withFileTypes: true })) {
      if (!entry.name.endsWith('.log'))
        rmSync(join(nodeClusterDir, entry.name), { recursive: true, force: true });
    }
  } else {
    rmSync(nodeClusterDir, { recursive: true, force: true });
  }
}

/**
 * What of a stopped node cluster is still on the machine, for the test that `down` removes
 * everything: live processes, cgroups, host mounts that name the node, the node's namespaces
 * (a process still in one, or a namespace file bind-mounted on the host), interfaces in the
 * host's network namespace that were not there before `up` (and `cni0` in any case), the state
 * folder.
 *
 * `downAt` (ms since the epoch, taken before `nodeDown`) tells the node's processes from others:
 * the kernel reuses a freed namespace's inode number for the next namespace made on the machine,
 * so a process that entered a namespace with the same number after `down` began is not the
 * node's (`nodeDown` starts nothing).
 */
export function nodeLeftovers(state: NodeClusterState, downAt = Date.now()): string[] {
  const dir = state.dir ?? nodeClusterDir;
  const left: string[] = [];
  for (const [what, pid] of [
    ['node init', state.initPid],
    ['host relay', state.relayPid],
  ] as const) {
    if (pid && isAlive(pid)) left.push(`${what} process ${pid}`);
  }
  for (const controller of CGROUP_HIERARCHIES) {
    const cgroup = join('/sys/fs/cgroup', controller, state.cgroupRoot);
    if (existsSync(cgroup)) left.push(`cgroup ${cgroup}`);
  }
  const mountinfo = readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
  const mounts = mountinfo.filter((line) => line.includes(dir) || line.includes('agentcard-node'));
  left.push(...mounts.map((m) => `mount ${m}`));
  const ours = new Set(Object.values(state.namespaces ?? {}));
  if (ours.size > 0) {
    for (const { pid, ns, command } of processesIn(ours, downAt)) {
      left.push(`process ${pid} (${command}) in the node's namespaces ${ns}`);
    }
    // An nsfs mount keeps a namespace alive without any process: mountinfo's root field names it.
    for (const line of mountinfo) {
      const root = line.split(' ')[3];
      if (root && ours.has(root) && / - nsfs /.test(line))
        left.push(`namespace ${root} bind-mounted: ${line}`);
    }
  }
  const before = new Set(state.hostInterfaces ?? []);
  for (const name of hostInterfaceNames()) {
    if (name === 'cni0' || (state.hostInterfaces && !before.has(name)))
      left.push(`interface ${name} in the host network namespace`);
  }
  if (existsSync(dir)) left.push(dir);
  return left;
}

/** The names of the interfaces of this process's network namespace (`ip -o link`: `2: eth0@if3: <...`). */
function hostInterfaceNames(): string[] {
  const out = execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' });
  return out
    .split('\n')
    .map((line) => /^\d+:\s+([^:@\s]+)/.exec(line)?.[1])
    .filter((name): name is string => name !== undefined);
}

/** The namespaces of the node's init (the child of `unshare`, whose own PID namespace is the host's). */
function nodeNamespaces(unsharePid: number): Partial<Record<NodeNamespace, string>> {
  const init = nsInitPid(unsharePid);
  if (init === undefined) throw new Error('the node init is not running');
  return Object.fromEntries(NODE_NAMESPACES.map((ns) => [ns, readlinkSync(`/proc/${init}/ns/${ns}`)]));
}

/** Processes (host PIDs) started before `before` (ms since the epoch) whose namespace is one of `namespaces`. */
function processesIn(
  namespaces: Set<string>,
  before: number,
): Array<{ pid: number; ns: string; command: string }> {
  // /proc/<pid>/stat's starttime counts clock ticks since boot; /proc/uptime gives boot in our clock.
  const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  const bootMs = Date.now() - Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 1000;
  const found: Array<{ pid: number; ns: string; command: string }> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const matched = NODE_NAMESPACES.map((kind) => readlinkSync(`/proc/${entry}/ns/${kind}`)).filter((n) =>
        namespaces.has(n),
      );
      if (matched.length === 0) continue;
      const ns = matched.join(', ');
      // The fields after the command (in parentheses, which may hold spaces): starttime is field 22.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const startTicks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
      if (bootMs + (startTicks / ticks) * 1000 > before) continue;
      const command = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
      found.push({ pid: Number(entry), ns, command });
    } catch {
      // Gone meanwhile, or a kernel thread: not a leftover.
    }
  }
  return found;
}

function writeState(state: NodeClusterState): void {
  writeFileSync(stateFile, JSON.stringify(state, null, 2) + '\n');
}

function seconds(since: number): string {
  return ((Date.now() - since) / 1000).toFixed(1);
}

function archive(spec: ImageSpec): string {
  const file = join(nodeClusterDir, 'images', `${spec.name.replace(/[/:]/g, '_')}.tar`);
  writeImageArchive(spec, file);
  return file;
}

/**
 * Starts the node's init: `unshare` makes the network, mount and PID namespaces, and a shell
 * prepares them (private tmpfs, shared mount propagation for the kubelet's volumes, the node's
 * address and default route, IP forwarding) before it becomes the `pause` reaper. Returns the
 * host PID of `unshare`, the parent of the namespace's init.
 */
function startInit(nodeBinDir: string): number {
  const script = [
    'set -e',
    // Mounts made from here on propagate among the node's own mounts only: unshare made the new
    // mount namespace private first, so nothing reaches the host's.
    'mount --make-rshared /',
    'for dir in /run /var/lib /var/log; do mount -t tmpfs -o mode=0755 agentcard-node "$dir"; done',
    'ip link set lo up',
    'ip link add eth0 type veth peer name eth0-peer',
    `ip addr add ${NODE_IP}/24 dev eth0`,
    'ip link set eth0 up',
    'ip link set eth0-peer up',
    'ip route add default via 10.10.0.1 dev eth0 onlink',
    'sysctl -qw net.ipv4.ip_forward=1',
    'touch /run/agentcard-node-ready',
    `exec ${join(nodeBinDir, 'pause')}`,
  ].join('\n');
  const out = openSync(join(nodeClusterDir, 'node-init.log'), 'a');
  const child = spawn(
    'unshare',
    [
      '--net',
      '--mount',
      '--pid',
      '--fork',
      '--mount-proc',
      '--propagation',
      'private',
      '--kill-child',
      'sh',
      '-c',
      script,
    ],
    { detached: true, stdio: ['ignore', out, out] },
  );
  child.unref();
  if (child.pid === undefined) throw new Error('unshare did not start');
  return child.pid;
}

/** The host PID of the node's init (PID 1 of its PID namespace): the child of `unshare`. */
function nsInitPid(unsharePid: number): number | undefined {
  try {
    const children = readFileSync(`/proc/${unsharePid}/task/${unsharePid}/children`, 'utf8')
      .trim()
      .split(/\s+/);
    return children[0] ? Number(children[0]) : undefined;
  } catch {
    return undefined;
  }
}

/** Spawns `binary` inside the node's namespaces, its output appended to `.node-cluster/<name>.log`. */
function startInNode(
  state: NodeClusterState,
  name: string,
  binary: string,
  args: string[],
  env: Record<string, string> = {},
): void {
  const init = nsInitPid(state.initPid);
  if (init === undefined) throw new Error('the node init is not running');
  const out = openSync(join(nodeClusterDir, `${name}.log`), 'a');
  const child = spawn(
    'nsenter',
    [`--target=${init}`, '--net', '--mount', '--pid', `--wd=${nodeClusterDir}`, '--', binary, ...args],
    {
      detached: true,
      stdio: ['ignore', out, out],
      env: { ...process.env, ...env },
    },
  );
  child.unref();
}

/** Runs a command inside the node's network and mount namespaces and returns its output. */
export async function execInNode(
  state: NodeClusterState,
  cmd: string,
  args: string[],
  timeoutMs = 30_000,
): Promise<string> {
  const init = nsInitPid(state.initPid);
  if (init === undefined) throw new Error('the node init is not running');
  const { stdout } = await execFileAsync(
    'nsenter',
    [`--target=${init}`, '--net', '--mount', '--', cmd, ...args],
    {
      timeout: timeoutMs,
      maxBuffer: 16 << 20,
    },
  );
  return stdout;
}

async function startControlPlane(state: NodeClusterState): Promise<void> {
  const bin = (c: string) => join(state.binDir, c);
  startInNode(
    state,
    'etcd',
    bin('etcd'),
    etcdArgs(nodeClusterDir, ETCD).map((a) => (a.startsWith('--data-dir=') ? '--data-dir=/var/lib/etcd' : a)),
  );
  const pki = (file: string) => join(pkiDir, file);
  const apiserver = apiserverArgs(nodeClusterDir, ETCD)
    .filter((a) => a !== '--endpoint-reconciler-type=none')
    .map((a) =>
      a === '--bind-address=127.0.0.1'
        ? '--bind-address=0.0.0.0'
        : a === '--advertise-address=127.0.0.1'
          ? `--advertise-address=${NODE_IP}`
          : a,
    );
  apiserver.push(
    `--kubelet-client-certificate=${pki('admin.crt')}`,
    `--kubelet-client-key=${pki('admin.key')}`,
    '--kubelet-preferred-address-types=InternalIP',
  );
  startInNode(state, 'kube-apiserver', bin('kube-apiserver'), apiserver);
  // Inside the namespace: the socket end of the relay, and the components' kubeconfigs.
  startInNode(state, 'relay', '/usr/bin/socat', [
    `UNIX-LISTEN:${join(nodeClusterDir, 'api.sock')},fork,unlink-early`,
    `TCP:127.0.0.1:${API_PORT}`,
  ]);
  const inNode = `https://127.0.0.1:${API_PORT}`;
  const kubeconfigs: Array<[string, string, string]> = [
    ['controller-manager', 'controller-manager', 'system:kube-controller-manager'],
    ['scheduler', 'scheduler', 'system:kube-scheduler'],
    ['kubelet', 'kubelet', `system:node:${NODE_NAME}`],
    ['kube-proxy', 'kube-proxy', 'system:kube-proxy'],
    ['kube-router', 'kube-router', 'system:kube-router'],
  ];
  for (const [file, client, user] of kubeconfigs) {
    writeKubeconfig(join(nodeClusterDir, `${file}.kubeconfig`), inNode, client, user, pkiDir);
  }
}

/**
 * kube-controller-manager and kube-scheduler, once the API server is ready: before its RBAC
 * bootstrap is done they are forbidden even /healthz, and kube-controller-manager gives up.
 */
function startControllers(state: NodeClusterState): void {
  const bin = (c: string) => join(state.binDir, c);
  const pki = (file: string) => join(pkiDir, file);
  startInNode(state, 'kube-controller-manager', bin('kube-controller-manager'), [
    `--kubeconfig=${join(nodeClusterDir, 'controller-manager.kubeconfig')}`,
    '--use-service-account-credentials=true',
    `--service-account-private-key-file=${pki('sa.key')}`,
    `--root-ca-file=${pki('ca.crt')}`,
    `--service-cluster-ip-range=${SERVICE_CIDR}`,
    '--leader-elect=false',
    '--secure-port=0',
  ]);
  startInNode(state, 'kube-scheduler', join(state.nodeBinDir, 'kube-scheduler'), [
    `--kubeconfig=${join(nodeClusterDir, 'scheduler.kubeconfig')}`,
    '--leader-elect=false',
    '--secure-port=0',
  ]);
}

/** The host end of the relay: a loopback port of the host, forwarded to the namespace's socket. */
function startHostRelay(port: number): number {
  const out = openSync(join(nodeClusterDir, 'relay-host.log'), 'a');
  const child = spawn(
    '/usr/bin/socat',
    [`TCP-LISTEN:${port},bind=127.0.0.1,fork,reuseaddr`, `UNIX-CONNECT:${join(nodeClusterDir, 'api.sock')}`],
    { detached: true, stdio: ['ignore', out, out] },
  );
  child.unref();
  if (child.pid === undefined) throw new Error('socat did not start');
  return child.pid;
}

async function startNode(state: NodeClusterState, images: string[]): Promise<void> {
  const nodeBin = (c: string) => join(state.nodeBinDir, c);
  const cniDir = join(nodeClusterDir, 'cni');
  mkdirSync(cniDir, { recursive: true });
  writeFileSync(join(cniDir, '10-agentcard-node.conflist'), JSON.stringify(cniConfig(), null, 2));
  writeFileSync(join(nodeClusterDir, 'containerd.toml'), containerdConfig(state.nodeBinDir, cniDir));
  const path = `${state.nodeBinDir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`;
  startInNode(
    state,
    'containerd',
    nodeBin('containerd'),
    ['--config', join(nodeClusterDir, 'containerd.toml')],
    { PATH: path },
  );
  const socket = `/proc/${nsInitPid(state.initPid)}/root/run/containerd/containerd.sock`;
  await waitUntil('containerd', 60_000, async () => existsSync(socket));
  for (const image of images) {
    await execInNode(
      state,
      nodeBin('ctr'),
      ['--address=/run/containerd/containerd.sock', '--namespace=k8s.io', 'images', 'import', image],
      120_000,
    );
  }

  writeFileSync(
    join(nodeClusterDir, 'resolv.conf'),
    '# The node has no upstream DNS server: CoreDNS answers cluster names only.\n',
  );
  writeFileSync(join(nodeClusterDir, 'kubelet.yaml'), stringify(kubeletConfig(state.cgroupRoot)));
  startInNode(
    state,
    'kubelet',
    nodeBin('kubelet'),
    [
      `--config=${join(nodeClusterDir, 'kubelet.yaml')}`,
      `--kubeconfig=${join(nodeClusterDir, 'kubelet.kubeconfig')}`,
      `--hostname-override=${NODE_NAME}`,
      `--node-ip=${NODE_IP}`,
      '--root-dir=/var/lib/kubelet',
    ],
    { PATH: path },
  );
  writeFileSync(join(nodeClusterDir, 'kube-proxy.yaml'), stringify(kubeProxyConfig()));
  startInNode(
    state,
    'kube-proxy',
    nodeBin('kube-proxy'),
    [`--config=${join(nodeClusterDir, 'kube-proxy.yaml')}`],
    {
      PATH: path,
    },
  );
}

/**
 * kube-router with only its network policy controller (`--run-firewall`; no BGP routing, no
 * service proxy: the CNI bridge routes and kube-proxy serves Services), as a process of the node
 * like kube-proxy. It needs the Node object (its InternalIP), so it starts once the kubelet has
 * registered it. Pod-to-Pod traffic over the bridge reaches its FORWARD rules because the
 * bridge's netfilter hook is on in the node's network namespace
 * (`net.bridge.bridge-nf-call-iptables`, set below). Returns once its first full sync has made
 * its chains, so a NetworkPolicy applied after `nodeUp` is enforced on its next sync.
 */
async function startNetworkPolicies(state: NodeClusterState): Promise<void> {
  await kubectl(state, ['apply', '-f', '-'], networkPolicyRbac());
  // A new network namespace starts with the bridge hook on when br_netfilter is loaded; say so
  // rather than rely on it (kube-proxy's Service rules for Pod-to-Pod traffic need it too).
  if (!existsSync('/proc/sys/net/bridge/bridge-nf-call-iptables')) {
    throw new Error(
      'the kernel module br_netfilter is not loaded: Pod-to-Pod traffic over the bridge would bypass ' +
        'iptables (NetworkPolicies, Services); load it on the host with `modprobe br_netfilter`',
    );
  }
  await execInNode(state, 'sysctl', ['-qw', 'net.bridge.bridge-nf-call-iptables=1']);
  const path = `${state.nodeBinDir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`;
  startInNode(
    state,
    'kube-router',
    join(state.nodeBinDir, 'kube-router'),
    [
      `--kubeconfig=${join(nodeClusterDir, 'kube-router.kubeconfig')}`,
      `--hostname-override=${NODE_NAME}`,
      '--run-firewall=true',
      '--run-router=false',
      '--run-service-proxy=false',
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      // No health or metrics server: its rules below say when it is up.
      '--health-port=0',
      '--metrics-port=0',
    ],
    { PATH: path },
  );
  // The jump into its FORWARD chain and its default chain exist after its first full sync.
  await waitUntil("kube-router's first network policy sync", 60_000, async () => {
    const rules = await execInNode(state, 'iptables-save', ['-t', 'filter']);
    return rules.includes('-j KUBE-ROUTER-FORWARD') && rules.includes(':KUBE-NWPLCY-DEFAULT');
  });
}

/** What kube-router's network policy controller reads (its informers), for its client certificate's user. */
function networkPolicyRbac(): string {
  const role = 'agentcard-node:kube-router';
  const docs = [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: role },
      rules: [
        {
          apiGroups: [''],
          resources: ['namespaces', 'pods', 'services', 'nodes', 'endpoints'],
          verbs: ['get', 'list', 'watch'],
        },
        { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['get', 'list', 'watch'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['get', 'list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: role },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'system:kube-router' }],
    },
  ];
  return docs.map((d) => stringify(d)).join('---\n');
}

export function cniConfig(): object {
  return {
    cniVersion: '1.0.0',
    name: 'agentcard-node',
    plugins: [
      {
        type: 'bridge',
        bridge: 'cni0',
        isGateway: true,
        hairpinMode: true,
        ipam: { type: 'host-local', ranges: [[{ subnet: POD_CIDR }]], routes: [{ dst: '0.0.0.0/0' }] },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  };
}

export function containerdConfig(nodeBinDir: string, cniDir: string): string {
  return `version = 3
root = "/var/lib/containerd"
state = "/run/containerd"

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "agentcard.test/pause:1"

[plugins.'io.containerd.cri.v1.runtime']
  # Containers' oom_score_adj no lower than containerd's own: lowering it needs
  # CAP_SYS_RESOURCE, which a root without every capability (a CI sandbox) lacks, and then
  # runc fails every Pod sandbox ("failed to update /proc/self/oom_score_adj").
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["${nodeBinDir}"]
    conf_dir = "${cniDir}"
`;
}

export function kubeletConfig(cgroupRoot: string): object {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    // The machine's cgroup hierarchy is v1; the kubelet refuses it unless told
    // (https://kubernetes.io/docs/reference/config-api/kubelet-config.v1beta1/, failCgroupV1).
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    cgroupRoot,
    failSwapOn: false,
    containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: join(pkiDir, 'ca.crt') },
    },
    authorization: { mode: 'Webhook' },
    clusterDomain: 'cluster.local',
    clusterDNS: [DNS_IP],
    resolvConf: join(nodeClusterDir, 'resolv.conf'),
    // A shared test machine: evict only when nearly out of memory or disk, and never collect the
    // images (they were imported here and cannot be pulled again).
    evictionHard: {
      'memory.available': '100Mi',
      'nodefs.available': '1%',
      'imagefs.available': '1%',
      'nodefs.inodesFree': '1%',
    },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    // A Pod's ConfigMap volume is brought up to date on the kubelet's periodic sync of the Pod
    // (https://kubernetes.io/docs/concepts/configuration/configmap/#mounted-configmaps-are-updated-automatically),
    // every syncFrequency, 1 minute by default. The tests wait for that update after nearly every
    // card change (a card published after its Pod started, a spec change, a catalog); with 3 s
    // they see the same update without a minute's wait each time. A user's cluster keeps the
    // default: the docs say "about a minute".
    syncFrequency: '3s',
    readOnlyPort: 0,
    serializeImagePulls: false,
  };
}

export function kubeProxyConfig(): object {
  return {
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    clientConnection: { kubeconfig: join(nodeClusterDir, 'kube-proxy.kubeconfig') },
    mode: 'iptables',
    clusterCIDR: POD_CIDR,
    hostnameOverride: NODE_NAME,
    // The conntrack table size is not namespaced: leave the machine's as it is.
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
    metricsBindAddress: '127.0.0.1:10249',
    healthzBindAddress: '127.0.0.1:10256',
  };
}

/** CoreDNS as kubeadm deploys it (RBAC, ConfigMap, Deployment, the kube-dns Service), from the image assembled here. */
export function coreDnsManifests(): string {
  const docs = [
    {
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'coredns', namespace: 'kube-system' },
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'system:coredns' },
      rules: [
        {
          apiGroups: [''],
          resources: ['endpoints', 'services', 'pods', 'namespaces'],
          verbs: ['list', 'watch'],
        },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'system:coredns' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' },
      subjects: [{ kind: 'ServiceAccount', name: 'coredns', namespace: 'kube-system' }],
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'coredns', namespace: 'kube-system' },
      data: {
        // No `forward`: the node has no upstream DNS server.
        Corefile: [
          '.:53 {',
          '    errors',
          '    health :8080',
          '    ready :8181',
          '    kubernetes cluster.local in-addr.arpa ip6.arpa {',
          '        pods insecure',
          '        fallthrough in-addr.arpa ip6.arpa',
          '    }',
          '    cache 30',
          '    loop',
          '}',
          '',
        ].join('\n'),
      },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'coredns', namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } },
      spec: {
        replicas: 1,
        selector: { matchLabels: { 'k8s-app': 'kube-dns' } },
        template: {
          metadata: { labels: { 'k8s-app': 'kube-dns' } },
          spec: {
            serviceAccountName: 'coredns',
            dnsPolicy: 'Default',
            containers: [
              {
                name: 'coredns',
                image: 'agentcard.test/coredns:1',
                imagePullPolicy: 'Never',
                args: ['-conf', '/etc/coredns/Corefile'],
                volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
                ports: [
                  { name: 'dns', containerPort: 53, protocol: 'UDP' },
                  { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' },
                ],
                livenessProbe: { httpGet: { path: '/health', port: 8080 } },
                readinessProbe: { httpGet: { path: '/ready', port: 8181 } },
              },
            ],
            volumes: [{ name: 'config', configMap: { name: 'coredns' } }],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kube-dns', namespace: 'kube-system', labels: { 'k8s-app': 'kube-dns' } },
      spec: {
        clusterIP: DNS_IP,
        selector: { 'k8s-app': 'kube-dns' },
        ports: [
          { name: 'dns', port: 53, protocol: 'UDP' },
          { name: 'dns-tcp', port: 53, protocol: 'TCP' },
        ],
      },
    },
  ];
  return docs.map((d) => stringify(d)).join('---\n');
}

/** Runs the kubectl of the tools cache against the node cluster (admin). */
export async function kubectl(state: NodeClusterState, args: string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      join(state.toolsDir, 'kubectl'),
      [`--kubeconfig=${nodeKubeconfig}`, ...args],
      { timeout: 240_000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) =>
        err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

async function waitUntil(what: string, timeoutMs: number, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      if (await ready()) return;
    } catch (err) {
      last = err;
    }
    await sleep(500);
  }
  const logs = readdirSync(nodeClusterDir).filter((f) => f.endsWith('.log'));
  throw new Error(
    `timed out after ${timeoutMs / 1000} s waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}; logs: ${logs.join(', ')} in ${nodeClusterDir}`,
  );
}

/** Creates the node's cgroup root in every v1 hierarchy (the kubelet requires it to exist). */
function makeCgroupRoot(root: string): void {
  for (const controller of CGROUP_CONTROLLERS) {
    const base = join('/sys/fs/cgroup', controller);
    if (!existsSync(base)) continue;
    const dir = join(base, root);
    mkdirSync(dir, { recursive: true });
    if (controller === 'cpuset') {
      // A new cpuset cgroup starts with no CPUs and no memory nodes: give it its parent's.
      for (const file of ['cpuset.cpus', 'cpuset.mems']) {
        writeFileSync(join(dir, file), readFileSync(join(base, file)));
      }
    }
  }
}

/** Removes the node's cgroup trees, deepest first, once their processes are gone. */
async function removeCgroupRoot(root: string): Promise<void> {
  for (const controller of CGROUP_HIERARCHIES) {
    const dir = join('/sys/fs/cgroup', controller, root);
    if (!existsSync(dir)) continue;
    for (let attempt = 0; ; attempt++) {
      try {
        removeTree(dir);
        break;
      } catch (err) {
        if (attempt >= 50) throw new Error(`cannot remove cgroup ${dir}: ${String(err)}`, { cause: err });
        await sleep(200);
      }
    }
  }
}

function removeTree(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) removeTree(join(dir, entry.name));
  }
  rmdirSync(dir);
}

/** Whether `pid` is alive and runs one of `names` (a recorded pid may have been reused). */
function isOurProcess(pid: number, ...names: string[]): boolean {
  if (!pid || !isAlive(pid)) return false;
  try {
    const argv0 = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
    return names.some((n) => argv0 === n || argv0.endsWith(`/${n}`));
  } catch {
    return false;
  }
}
