/**
 * `npm run demo -- --once` from start to end, on the control plane the suite runs (the demo
 * reuses it and then leaves it as it found it): every step succeeds, the table, the served card
 * URL and a verified signature are printed, and the demo's processes are gone afterwards.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { kubeConfig } from '../support/cluster.ts';
import { repoRoot } from '../support/paths.ts';
import { useClusterLock } from '../support/cluster-lock.ts';

// Beside any file but the others of its family: see vitest.config.ts.
useClusterLock('cluster-catalogs');

function runDemo(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(repoRoot, 'scripts', 'demo.ts'), ...args], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => child.kill('SIGINT'), 240_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('npm run demo -- --once', () => {
  it('runs every step, prints the table, the card URL and its verification, and cleans up', async () => {
    const namespace = `demo-${randomBytes(4).toString('hex')}`;
    // --local: the process path, on the control plane this suite runs (the node path is
    // test/e2e/demo.test.ts, in the node project).
    const result = await runDemo(['--once', '--local', '--namespace', namespace]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    // Its first line says which of its two modes it ran in, and why.
    expect(result.stdout.split('\n')[0]).toMatch(
      /^agentcard-operator local demo: local processes, no kubelet \(as asked; logs in \S+\)$/,
    );
    const steps = [...result.stdout.matchAll(/^\[(\d+)\/(\d+)\] /gm)];
    expect(steps.length).toBeGreaterThan(5);
    expect(steps.at(-1)![1]).toBe(steps.at(-1)![2]);
    // The Deployment example's Pod went through the webhook (API server -> HTTPS -> operator).
    expect(result.stdout).toMatch(/Pod demo-agent-\S+ has the agentcard-sidecar/);
    // The chart's default mode end to end: nginx runs with the configuration the webhook wrote
    // into that Pod (the machine has Debian's nginx, as the conformance suite needs).
    expect(result.stdout).toContain("(nginx with the Pod's own configuration, the default mode)");
    expect(result.stdout).toMatch(/^NAME\s+READY\s+SIGNED\s+INTERFACES\s+VERSION\s+AGE/m);
    expect(result.stdout).toMatch(/Served card:\s+http:\/\/127\.0\.0\.1:\d+\/\.well-known\/agent-card\.json/);
    expect(result.stdout).toMatch(/Verification:\s+\S*.*verified/i);
    // The cluster catalog of the demo's agents, served and verified.
    expect(result.stdout).toMatch(/Catalog:\s+http:\/\/127\.0\.0\.1:\d+\/\.well-known\/ai-catalog\.json/);
    expect(result.stdout).toMatch(/lists 3 agent\(s\); signature verified: kid \S+-agents-demo/);
    expect(result.stdout).toContain(`delete ClusterAgentCatalog ${namespace}-agents: done`);
    // Two audiences of examples/agentcard-audiences.yaml, each served its own signed card by Host.
    expect(result.stdout).toMatch(
      /Audiences:\s+default \(Host: 127\.0\.0\.1\): http:\/\/127\.0\.0\.1:\d+\S*, verified/,
    );
    expect(result.stdout).toMatch(
      /public \(Host: weather\.example\.com\): https:\/\/weather\.example\.com\/agents\/weather\/\S+, verified/,
    );
    // the last step: agentcard discover against the served card (the default audience of
    // examples/agentcard-audiences.yaml: two interfaces of the demo agent), verified and probed
    expect(result.stdout).toMatch(/^\$ agentcard discover http:\/\/127\.0\.0\.1:\d+ --jwks /m);
    expect(result.stdout).toMatch(
      /^ok\s+.*\s+verified \S+\s+2\/2 up\s+http:\/\/127\.0\.0\.1:\d+\/\.well-known\/agent-card\.json$/m,
    );
    expect(result.stdout).toContain('1 card, 1 ok, 0 catalogs, 0 errors');
    // It did not start the control plane, so it removed only its namespace.
    expect(result.stdout).toContain(`delete namespace ${namespace}: done`);
    const ns = await kubeConfig()
      .makeApiClient(CoreV1Api)
      .readNamespace({ name: namespace })
      .catch((err: { code?: number }) => err.code);
    expect(ns === 404 || (typeof ns === 'object' && ns.status?.phase === 'Terminating')).toBe(true);
  }, 300_000);

  it('fails with a clear message and a non-zero exit on a bad flag', async () => {
    const result = await runDemo(['--frobnicate']);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/^demo: .*frobnicate/);
  });
});
