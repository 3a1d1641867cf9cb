// `npm run cluster:down -- --node`, the command users run, on a node of its own: `cluster:up -- --node`
// starts a second node in another state folder (AGENTCARD_NODE_CLUSTER_DIR; the project's node
// keeps serving the other test files), `cluster:down -- --node` stops it, and nothing of it is
// left: no process, cgroup, mount, namespace (no process in it, no bind mount of it), no new
// interface in the host's network namespace, no state folder. The project's node is untouched.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { isNodeClusterReady, nodeLeftovers, NODE_NAME, type NodeClusterState } from '../node/control.ts';
import { repoRoot } from '../support/paths.ts';

const mainNode = inject('nodeCluster');
const parent = mkdtempSync(join(tmpdir(), 'agentcard-down-'));
const dir = join(parent, 'node');
const env = { ...process.env, AGENTCARD_NODE_CLUSTER_DIR: dir };

function npmRun(args: string[], timeoutMs: number): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      'npm',
      ['run', ...args],
      { cwd: repoRoot, env, timeout: timeoutMs, maxBuffer: 16 << 20 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, output: `${stdout}${stderr}` });
      },
    );
  });
}

describe('npm run cluster:down -- --node', () => {
  afterAll(async () => {
    // A failed assertion must not leave the second node running.
    await npmRun(['cluster:down', '--', '--node'], 120_000);
    rmSync(parent, { recursive: true, force: true });
  });

  it(
    'stops a node started by cluster:up -- --node and leaves nothing behind',
    { timeout: 900_000 },
    async () => {
      const up = await npmRun(['cluster:up', '--', '--node'], 600_000);
      expect(up.code, up.output).toBe(0);
      const state = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as NodeClusterState;
      expect(state.dir).toBe(dir);
      expect(state.cgroupRoot).not.toBe(mainNode.cgroupRoot);
      const kubectl = await new Promise<string>((resolve, reject) =>
        execFile(
          join(state.toolsDir, 'kubectl'),
          [`--kubeconfig=${join(dir, 'kubeconfig')}`, 'get', 'node', NODE_NAME, '--no-headers'],
          (err, stdout, stderr) => (err ? reject(new Error(stderr || err.message)) : resolve(stdout)),
        ),
      );
      expect(kubectl).toMatch(new RegExp(`^${NODE_NAME}\\s+Ready\\s`));

      // The check sees a running node: its namespaces and host interfaces were recorded, and its
      // processes, namespaces and folder are reported while it runs.
      expect(Object.keys(state.namespaces ?? {}).sort()).toEqual(['mnt', 'net', 'pid']);
      expect(state.namespaces?.net).not.toBe(mainNode.namespaces?.net);
      expect(state.hostInterfaces).toContain('lo');
      const running = nodeLeftovers(state);
      expect(running).toContain(`node init process ${state.initPid}`);
      // Its init (`unshare`'s child, `pause`) is in all three of the node's namespaces.
      const { net, mnt, pid } = state.namespaces!;
      expect(running.some((l) => l.endsWith(`in the node's namespaces ${net}, ${mnt}, ${pid}`))).toBe(true);
      expect(running).toContain(dir);

      const downAt = Date.now();
      const down = await npmRun(['cluster:down', '--', '--node'], 120_000);
      expect(down.code, down.output).toBe(0);
      expect(down.output).toContain('node cluster stopped');
      expect(nodeLeftovers(state, downAt)).toEqual([]);

      // The project's node, in its own namespaces and cgroup root, still runs.
      expect(await isNodeClusterReady(mainNode)).toBe(true);
    },
  );
});
