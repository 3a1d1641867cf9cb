// `npm run demo -- --once --node` on the node cluster the project runs (the demo reuses it and
// leaves it running): every step succeeds, `kubectl get pods -A` shows the operator and the demo
// agent really running, and the card served by the injected nginx sidecar through the agent's
// Service verifies. The release and the namespace are gone afterwards.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { kubectl } from '../node/control.ts';
import { repoRoot } from '../support/paths.ts';
import { CHART_CRD_NAMES } from '../../build/chart-crds.ts';

const state = inject('nodeCluster');

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
    const timer = setTimeout(() => child.kill('SIGINT'), 840_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('npm run demo -- --once --node', () => {
  afterAll(async () => {
    // The demo's uninstall leaves the chart's CRDs (crds.keep), annotated with its release: the
    // next file's install into another namespace would be refused them.
    await kubectl(state, ['delete', 'crd', ...CHART_CRD_NAMES, '--ignore-not-found']).catch(() => undefined);
  });

  it('runs the demo in real Pods, shows them, verifies the served card and cleans up', async () => {
    const namespace = `demo-node-${process.pid}`;
    const result = await runDemo(['--once', '--node', '--namespace', namespace]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('demo on the node cluster: real Pods');
    const steps = [...result.stdout.matchAll(/^\[(\d+)\/(\d+)\] /gm)];
    expect(steps.at(-1)![1]).toBe(steps.at(-1)![2]);
    // kubectl get pods -A: the operator, the demo agent (agent + native sidecar) and CoreDNS run.
    const pods = result.stdout.slice(result.stdout.indexOf('$ kubectl get pods -A'));
    expect(pods).toMatch(/^agentcard-system\s+agentcard-agentcard-operator-\S+\s+1\/1\s+Running/m);
    expect(pods).toMatch(new RegExp(`^${namespace}\\s+demo-agent-\\S+\\s+2/2\\s+Running`, 'm'));
    expect(pods).toMatch(/^kube-system\s+coredns-\S+\s+1\/1\s+Running/m);
    expect(result.stdout).toMatch(/^support-agent\s+True\s+True\s+3\/3/m);
    expect(result.stdout).toMatch(/Verification:\s+verified: kid \S+/);
    expect(result.stdout).toContain('uninstall the release agentcard: done');
    expect(result.stdout).toContain(`delete namespace ${namespace}: done`);
    const releases = await kubectl(state, [
      'get',
      'deployments',
      '-n',
      'agentcard-system',
      '-o',
      'name',
    ]).catch(() => '');
    expect(releases.trim()).toBe('');
  }, 900_000);
});
