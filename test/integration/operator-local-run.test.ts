/**
 * `agentcard operator` run on a developer's machine, the way `make run` runs a kubebuilder
 * project: the only configuration is ~/.kube/config (no --kubeconfig, no KUBECONFIG, not in a
 * Pod). It starts with the webhook off, takes the leader Lease in the context's namespace,
 * reconciles an AgentCard, and gives the Lease back on Ctrl-C (SIGINT). Only the metrics address
 * is passed, to keep the test on a free loopback port.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { Api, condition, installCrd, sampleCard, waitFor, watchLogs } from '../support/operator.ts';
import { repoRoot } from '../support/paths.ts';
import { createTestNamespace, kubeConfig, kubeconfigPath, type TestNamespace } from '../support/cluster.ts';
import { freePort } from '../support/ports.ts';
import { agentcardBin } from '../support/test-package.ts';

const node = join(repoRoot, 'node_modules', '.bin', 'node');
let home: string;
let ns: TestNamespace;
let api: Api;

/** The environment of a shell on a laptop: HOME, PATH, nothing about Kubernetes. */
function localEnv(): NodeJS.ProcessEnv {
  return { HOME: home, PATH: process.env.PATH ?? '/usr/bin:/bin', AGENTCARD_LOG_LEVEL: 'info' };
}

function run(args: string[]) {
  const child = spawn(node, [agentcardBin(), 'operator', ...args], {
    cwd: home,
    env: localEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const { lines, exited, find: logged } = watchLogs(child);
  return { child, lines, exited, logged };
}

beforeAll(async () => {
  api = new Api(kubeConfig());
  await installCrd(api.kc);
  ns = await createTestNamespace('local-run');
  home = mkdtempSync(join(tmpdir(), 'agentcard-home-'));
  mkdirSync(join(home, '.kube'));
  // The admin kubeconfig, its context pointed at the test's namespace (as `kubectl config
  // set-context --current --namespace` would).
  const config = parse(readFileSync(kubeconfigPath(), 'utf8')) as {
    contexts: Array<{ name: string; context: Record<string, unknown> }>;
    'current-context': string;
  };
  for (const c of config.contexts) if (c.name === config['current-context']) c.context.namespace = ns.name;
  writeFileSync(join(home, '.kube', 'config'), stringify(config));
});

afterAll(async () => {
  await ns?.cleanup();
  if (home) rmSync(home, { recursive: true, force: true });
});

describe('agentcard operator on a developer machine', () => {
  it('starts from ~/.kube/config alone, with the webhook off, and reconciles', async () => {
    const metricsPort = await freePort();
    const op = run([`--metrics-port=${metricsPort}`, '--bind-address=127.0.0.1']);
    try {
      await waitFor(
        'the operator to lead',
        async () => op.logged('became leader') ?? op.child.exitCode !== null,
      );
      expect(op.child.exitCode, op.lines.join('\n')).toBeNull();
      expect(op.logged('campaigning for the leader lease')).toMatchObject({ leaseNamespace: ns.name });
      // No webhook: nothing listens on its default port's behalf, and nothing asked for a sidecar image.
      expect(op.lines.join('\n')).not.toMatch(/webhook/i);

      const lease = await api.kc.makeApiClient(CoordinationV1Api).readNamespacedLease({
        name: 'agentcard-operator',
        namespace: ns.name,
      });
      expect(lease.spec?.holderIdentity).toBeTruthy();

      await api.createCard(ns.name, 'local', { card: sampleCard() });
      const published = await waitFor('the AgentCard to be Published', async () => {
        const card = await api.getCard(ns.name, 'local');
        return condition(card, 'Published')?.status === 'True' ? card : undefined;
      });
      expect(published.status?.card?.configMap).toBe('local-agent-card');
      // Probes are on, as in a cluster: the sample's interfaces (example.com hosts) get a verdict.
      await waitFor(
        'a probe verdict',
        async () =>
          condition(await api.getCard(ns.name, 'local'), 'InterfacesReachable')?.reason !== undefined,
      );
      expect((await api.getConfigMap(ns.name, 'local-agent-card'))?.data?.['agent-card.json']).toBeTruthy();
      const readyz = await fetch(`http://127.0.0.1:${metricsPort}/readyz`);
      expect(readyz.status).toBe(200);
    } finally {
      op.child.kill('SIGINT');
    }
    expect(await op.exited).toBe(0);
    expect(op.logged('released the leader lease')).toBeDefined();
    const after = await api.kc.makeApiClient(CoordinationV1Api).readNamespacedLease({
      name: 'agentcard-operator',
      namespace: ns.name,
    });
    expect(after.spec?.holderIdentity ?? '').toBe('');
  });

  it('without any kubeconfig, says where it looked, in one line (exit 1)', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'agentcard-home-'));
    try {
      const child = spawn(node, [agentcardBin(), 'operator'], {
        cwd: empty,
        env: { ...localEnv(), HOME: empty },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
      const code = await new Promise<number | null>((r) => child.once('exit', r));
      expect(code).toBe(1);
      expect(stderr.trim().split('\n')).toHaveLength(1);
      expect(stderr).toMatch(
        /^agentcard: no Kubernetes configuration: .*--kubeconfig.*KUBECONFIG.*~\/\.kube\/config/,
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
