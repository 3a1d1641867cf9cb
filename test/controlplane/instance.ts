/**
 * A private control plane (etcd and kube-apiserver) in its own directory and on its own ports,
 * whose components can be stopped, killed and started again on the same ports and data. The
 * fault suite restarts the API server and etcd; doing that to the shared control plane would
 * disturb the other test files, so it runs one of these instead. No kube-controller-manager: the
 * suite creates its objects directly and throws the whole instance away at the end.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureBinaries } from './build.ts';
import {
  apiserverArgs,
  etcdArgs,
  runToEnd,
  start,
  stopProcesses,
  waitForApiserver,
  waitForEtcd,
  writeKubeconfig,
  type ClusterState,
  type Component,
  type ControlPlanePorts,
} from './control.ts';
import { isAlive } from './lock.ts';
import { freePorts } from '../support/ports.ts';

type Part = Extract<Component, 'etcd' | 'kube-apiserver'>;

export class ControlPlaneInstance {
  readonly dir: string;
  readonly ports: ControlPlanePorts;
  readonly state: ClusterState;
  /** Admin kubeconfig (group system:masters) of this instance. */
  readonly kubeconfig: string;

  private constructor(dir: string, ports: ControlPlanePorts, state: ClusterState) {
    this.dir = dir;
    this.ports = ports;
    this.state = state;
    this.kubeconfig = join(dir, 'kubeconfig');
  }

  get server(): string {
    return `https://127.0.0.1:${this.ports.apiserver}`;
  }

  get pkiDir(): string {
    return join(this.dir, 'pki');
  }

  /** Builds (first run on a machine only) and starts etcd and kube-apiserver in a new temporary directory. */
  static async start(log: (line: string) => void): Promise<ControlPlaneInstance> {
    const binDir = await ensureBinaries(log);
    const dir = mkdtempSync(join(tmpdir(), 'agentcard-faults-'));
    await runToEnd(join(binDir, 'pki'), ['-dir', join(dir, 'pki')]);
    for (let attempt = 1; ; attempt++) {
      const [etcd, etcdPeer, apiserver] = await freePorts(3);
      const ports = { etcd: etcd!, etcdPeer: etcdPeer!, apiserver: apiserver! };
      const state: ClusterState = {
        server: `https://127.0.0.1:${apiserver}`,
        etcd: `https://127.0.0.1:${etcd}`,
        binDir,
        pids: {},
        startedAt: new Date().toISOString(),
      };
      const instance = new ControlPlaneInstance(dir, ports, state);
      try {
        await instance.startPart('etcd');
        await instance.startPart('kube-apiserver');
        writeKubeconfig(instance.kubeconfig, state.server, 'admin', 'agentcard-test-admin', instance.pkiDir);
        return instance;
      } catch (err) {
        await stopProcesses(state);
        if (attempt >= 3 || !String(err).includes('address already in use')) throw err;
        rmSync(join(dir, 'etcd'), { recursive: true, force: true });
      }
    }
  }

  /** Starts one component on this instance's ports and data, and waits until it is ready. */
  async startPart(part: Part): Promise<void> {
    if (part === 'etcd') {
      start(this.state, 'etcd', etcdArgs(this.dir, this.ports), this.dir);
      await waitForEtcd(this.dir, this.state, this.ports);
    } else {
      start(this.state, 'kube-apiserver', apiserverArgs(this.dir, this.ports), this.dir);
      await waitForApiserver(this.dir, this.state, this.ports);
    }
  }

  /** Sends `signal` to one component and waits until it has exited (SIGKILL after 15 s). */
  async stopPart(part: Part, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const pid = this.state.pids[part];
    if (pid === undefined || !isAlive(pid)) return;
    process.kill(pid, signal);
    for (let i = 0; i < 150 && isAlive(pid); i++) await sleep(100);
    if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    for (let i = 0; i < 50 && isAlive(pid); i++) await sleep(100);
  }

  /** Stops everything and removes the directory (data, certificates, logs). */
  async destroy(): Promise<void> {
    await stopProcesses(this.state);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
