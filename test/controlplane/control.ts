import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { ensureBinaries } from './build.ts';
import { isAlive } from './lock.ts';
import { clusterDir, kubeconfigFile } from './paths.ts';
import { clientTls, tlsRequest } from './tls-request.ts';
import { ensureTools } from './tools.ts';
import { freePorts } from '../support/ports.ts';

export type Component = 'etcd' | 'kube-apiserver' | 'kube-controller-manager';

/** What `up` records in `.cluster/state.json` so that `down`, `status` and a second `up` find the processes. */
export interface ClusterState {
  server: string;
  etcd: string;
  binDir: string;
  pids: Partial<Record<Component, number>>;
  startedAt: string;
}

const stateFile = join(clusterDir, 'state.json');
const pkiDir = join(clusterDir, 'pki');

/** Ports of one control plane instance. */
export interface ControlPlanePorts {
  etcd: number;
  etcdPeer: number;
  apiserver: number;
}

/**
 * The controllers of kube-controller-manager that do their job without nodes: garbage collection
 * of owned objects, namespace deletion, service accounts and their tokens, the kube-root-ca.crt
 * ConfigMap, aggregated ClusterRoles, ValidatingAdmissionPolicy type checks, and
 * Deployment -> ReplicaSet -> Pod (the Pods stay Pending).
 */
export const CONTROLLERS = [
  'garbage-collector-controller',
  'namespace-controller',
  'serviceaccount-controller',
  'serviceaccount-token-controller',
  'root-ca-certificate-publisher-controller',
  'clusterrole-aggregation-controller',
  'validatingadmissionpolicy-status-controller',
  'deployment-controller',
  'replicaset-controller',
];

export function readState(): ClusterState | undefined {
  try {
    return JSON.parse(readFileSync(stateFile, 'utf8')) as ClusterState;
  } catch {
    return undefined;
  }
}

/** Whether the control plane of this checkout is running and its apiserver answers /readyz. */
export async function isReady(state = readState()): Promise<boolean> {
  if (!state) return false;
  const components: Component[] = ['etcd', 'kube-apiserver', 'kube-controller-manager'];
  if (!components.every((c) => isOurProcess(state.pids[c], join(state.binDir, c)))) return false;
  try {
    const res = await tlsRequest(`${state.server}/readyz`, clientTls(pkiDir, 'admin'));
    return res.status === 200;
  } catch {
    return false;
  }
}

/**
 * Starts etcd, kube-apiserver and kube-controller-manager on free loopback ports, writes
 * `.cluster/kubeconfig` and returns once /readyz is ok. Reuses a control plane that is already
 * running (then `started` is false).
 */
export async function up(log: (line: string) => void): Promise<{ started: boolean; state: ClusterState }> {
  const existing = readState();
  if (existing && (await isReady(existing))) return { started: false, state: existing };
  if (existing || existsSync(clusterDir)) await down(log);

  const [binDir, toolsDir] = await Promise.all([ensureBinaries(log), ensureTools(log)]);
  const started = Date.now();
  mkdirSync(clusterDir, { recursive: true });
  linkTools(toolsDir);
  await runToEnd(join(binDir, 'pki'), ['-dir', pkiDir]);

  // A free port can be taken by another process before ours binds it: then start again on new ports.
  for (let attempt = 1; ; attempt++) {
    try {
      const state = await startProcesses(binDir);
      log(`control plane up in ${((Date.now() - started) / 1000).toFixed(1)} s: ${state.server}`);
      return { started: true, state };
    } catch (err) {
      if (attempt >= 3 || !String(err).includes('address already in use')) throw err;
      log('a port was taken meanwhile; starting again on other ports');
      rmSync(join(clusterDir, 'etcd'), { recursive: true, force: true });
    }
  }
}

/** Starts the three processes on fresh free ports; on failure stops those already started. */
async function startProcesses(binDir: string): Promise<ClusterState> {
  const [etcdPort, peerPort, apiPort] = await freePorts(3);
  const ports: ControlPlanePorts = { etcd: etcdPort!, etcdPeer: peerPort!, apiserver: apiPort! };
  const state: ClusterState = {
    server: `https://127.0.0.1:${apiPort}`,
    etcd: `https://127.0.0.1:${etcdPort}`,
    binDir,
    pids: {},
    startedAt: new Date().toISOString(),
  };
  const starter = (component: Component, args: string[]) =>
    start(state, component, args, clusterDir, stateFile);
  try {
    starter('etcd', etcdArgs(clusterDir, ports));
    await waitForEtcd(clusterDir, state, ports);
    starter('kube-apiserver', apiserverArgs(clusterDir, ports));
    await waitForApiserver(clusterDir, state, ports);

    writeKubeconfig(kubeconfigFile, state.server, 'admin', 'agentcard-test-admin');
    const kcmKubeconfig = join(clusterDir, 'controller-manager.kubeconfig');
    writeKubeconfig(kcmKubeconfig, state.server, 'controller-manager', 'system:kube-controller-manager');
    const pki = (file: string) => join(pkiDir, file);
    starter('kube-controller-manager', [
      `--kubeconfig=${kcmKubeconfig}`,
      `--controllers=${CONTROLLERS.join(',')}`,
      // Each controller acts as its own ServiceAccount with the bootstrap RBAC roles, as in a real cluster.
      '--use-service-account-credentials=true',
      `--service-account-private-key-file=${pki('sa.key')}`,
      `--root-ca-file=${pki('ca.crt')}`,
      '--leader-elect=false',
      '--secure-port=0',
    ]);
    await sleep(500);
    if (!isAlive(state.pids['kube-controller-manager']!)) throw exited('kube-controller-manager', clusterDir);
  } catch (err) {
    await stopProcesses(state);
    throw err;
  }
  return state;
}

/** etcd's flags for an instance whose files live in `dir` (pki/ and etcd/ under it). */
export function etcdArgs(dir: string, ports: ControlPlanePorts): string[] {
  const pki = (file: string) => join(dir, 'pki', file);
  const url = `https://127.0.0.1:${ports.etcd}`;
  const peer = `http://127.0.0.1:${ports.etcdPeer}`;
  return [
    '--name=default',
    `--data-dir=${join(dir, 'etcd')}`,
    `--listen-client-urls=${url}`,
    `--advertise-client-urls=${url}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=default=${peer}`,
    `--cert-file=${pki('serving.crt')}`,
    `--key-file=${pki('serving.key')}`,
    `--trusted-ca-file=${pki('ca.crt')}`,
    '--client-cert-auth',
    // Test data: durability across power loss is not worth the fsync latency on a shared machine.
    '--unsafe-no-fsync',
    '--log-level=warn',
  ];
}

/** kube-apiserver's flags for an instance whose files live in `dir`. */
export function apiserverArgs(dir: string, ports: ControlPlanePorts): string[] {
  const pki = (file: string) => join(dir, 'pki', file);
  return [
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${ports.apiserver}`,
    `--etcd-servers=https://127.0.0.1:${ports.etcd}`,
    `--etcd-cafile=${pki('ca.crt')}`,
    `--etcd-certfile=${pki('etcd-client.crt')}`,
    `--etcd-keyfile=${pki('etcd-client.key')}`,
    `--tls-cert-file=${pki('serving.crt')}`,
    `--tls-private-key-file=${pki('serving.key')}`,
    `--client-ca-file=${pki('ca.crt')}`,
    '--authorization-mode=Node,RBAC',
    '--enable-admission-plugins=' +
      [
        'NamespaceLifecycle',
        'LimitRanger',
        'ServiceAccount',
        'DefaultStorageClass',
        'ResourceQuota',
        'NodeRestriction',
        'MutatingAdmissionWebhook',
        'ValidatingAdmissionWebhook',
        'ValidatingAdmissionPolicy',
      ].join(','),
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${pki('sa.pub')}`,
    `--service-account-signing-key-file=${pki('sa.key')}`,
    '--service-cluster-ip-range=10.0.0.0/24',
    // No Endpoints for the `kubernetes` Service: a loopback address is not a valid endpoint.
    '--endpoint-reconciler-type=none',
    '--allow-privileged=true',
    // PodTemplates skip the watch cache, so a watch on them is served by etcd itself and a
    // compacted resourceVersion gets 410 Gone, as the control-plane test checks (every other
    // resource is served from the watch cache, as in a real cluster).
    '--watch-cache-sizes=podtemplates#0',
    '--profiling=false',
  ];
}

/** Waits until the etcd of an instance in `dir` answers /health. */
export function waitForEtcd(dir: string, state: ClusterState, ports: ControlPlanePorts): Promise<void> {
  return waitFor('etcd', state, dir, async () => {
    const res = await tlsRequest(
      `https://127.0.0.1:${ports.etcd}/health`,
      clientTls(join(dir, 'pki'), 'etcd-client'),
    );
    return res.status === 200;
  });
}

/** Waits until the kube-apiserver of an instance in `dir` answers /readyz. */
export function waitForApiserver(dir: string, state: ClusterState, ports: ControlPlanePorts): Promise<void> {
  return waitFor('kube-apiserver', state, dir, async () => {
    const res = await tlsRequest(
      `https://127.0.0.1:${ports.apiserver}/readyz`,
      clientTls(join(dir, 'pki'), 'admin'),
    );
    return res.status === 200;
  });
}

/** Stops the processes of this checkout's control plane and removes `.cluster/` (data, certificates, logs). */
export async function down(log: (line: string) => void): Promise<void> {
  const state = readState();
  if (state) {
    await stopProcesses(state);
    log('control plane stopped');
  }
  rmSync(clusterDir, { recursive: true, force: true });
}

/**
 * Spawns one component detached, its output appended to `<dir>/<component>.log`, and records its
 * pid in `state` (and in `stateFile` when given).
 */
export function start(
  state: ClusterState,
  component: Component,
  args: string[],
  dir: string,
  stateFile?: string,
): void {
  const out = openSync(join(dir, `${component}.log`), 'a');
  const child = spawn(join(state.binDir, component), args, {
    cwd: dir,
    detached: true,
    stdio: ['ignore', out, out],
  });
  child.unref();
  if (child.pid === undefined) throw new Error(`${component} did not start`);
  state.pids[component] = child.pid;
  if (stateFile) writeFileSync(stateFile, JSON.stringify(state, null, 2) + '\n');
}

async function waitFor(
  component: Component,
  state: ClusterState,
  dir: string,
  ready: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (!isAlive(state.pids[component]!)) throw exited(component, dir);
    if (await ready().catch(() => false)) return;
    await sleep(250);
  }
  throw new Error(`${component} was not ready within 120 s; see ${join(dir, `${component}.log`)}`);
}

function exited(component: Component, dir: string): Error {
  const log = join(dir, `${component}.log`);
  const tail = existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').slice(-8).join('\n') : '';
  return new Error(`${component} exited during start-up; last lines of ${log}:\n${tail}`);
}

/**
 * Sends SIGTERM to every recorded process that is still ours, all at once (their data is thrown
 * away, so the order does not matter), then SIGKILL to any left after 5 s.
 */
export async function stopProcesses(state: ClusterState): Promise<void> {
  const components: Component[] = ['kube-controller-manager', 'kube-apiserver', 'etcd'];
  const pids = components
    .filter((c) => isOurProcess(state.pids[c], join(state.binDir, c)))
    .map((c) => state.pids[c]!);
  for (const pid of pids) process.kill(pid, 'SIGTERM');
  for (let i = 0; i < 50 && pids.some(isAlive); i++) await sleep(100);
  for (const pid of pids.filter(isAlive)) process.kill(pid, 'SIGKILL');
}

/**
 * Whether `pid` is alive and runs `binary`: a recorded pid may have been reused by an unrelated
 * process after a reboot, which must never be signalled.
 */
function isOurProcess(pid: number | undefined, binary: string): boolean {
  if (pid === undefined || !isAlive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] === binary;
  } catch {
    return process.platform !== 'linux';
  }
}

export function writeKubeconfig(
  file: string,
  server: string,
  client: string,
  user: string,
  pki: string = pkiDir,
): void {
  const pem = (name: string) => readFileSync(join(pki, name)).toString('base64');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'agentcard-test', cluster: { server, 'certificate-authority-data': pem('ca.crt') } }],
    users: [
      {
        name: user,
        user: { 'client-certificate-data': pem(`${client}.crt`), 'client-key-data': pem(`${client}.key`) },
      },
    ],
    contexts: [{ name: 'agentcard-test', context: { cluster: 'agentcard-test', user } }],
    'current-context': 'agentcard-test',
  };
  writeFileSync(file, stringify(config), { mode: 0o600 });
}

/** `.cluster/bin/kubectl` and `.cluster/bin/helm`, so `export PATH=$PWD/.cluster/bin:$PATH` gives both. */
function linkTools(toolsDir: string): void {
  mkdirSync(join(clusterDir, 'bin'), { recursive: true });
  for (const tool of ['kubectl', 'helm']) {
    const link = join(clusterDir, 'bin', tool);
    rmSync(link, { force: true });
    symlinkSync(join(toolsDir, tool), link);
  }
}

export function runToEnd(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} failed with exit code ${code}`)),
    );
  });
}
