/**
 * Failover benchmark: how long after the leader is killed (SIGKILL) the new leader makes its first
 * write, at N AgentCards, on the local control plane (`npm run cluster:up`).
 *
 * Two `agentcard operator` processes with leader election (lease 4 s, renew deadline 3 s, retry
 * 0.5 s, no probes, no catalogs) watch one namespace of N published AgentCards. Once every card
 * is published and both have run for a while, the leader is killed with SIGKILL and, at the same
 * moment, one card's spec is changed. Measured from the kill: when the standby says it leads, and
 * when the changed card's new bytes are in its ConfigMap (the new leader's first write). Also the
 * standby's resident memory before the kill (what a warm standby costs).
 *
 * Run: `node bench/failover.bench.ts [--cards 1000] [--root <a checkout of the operator>]`
 * (Node.js 24); `--root` runs another build of the operator (before/after comparisons).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { GROUP, PLURAL, VERSION } from '../operator/api/names.ts';
import { kubeconfigFile } from '../test/controlplane/paths.ts';
import { minimalCard } from '../test/support/cards.ts';

const { values } = parseArgs({
  options: {
    cards: { type: 'string', default: '1000' },
    root: { type: 'string', default: resolve(import.meta.dirname, '..') },
  },
});
const n = Number(values.cards);
const root = resolve(values.root!);
const log = (line: string) => process.stderr.write(`[failover] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const kc = new KubeConfig();
kc.loadFromFile(kubeconfigFile);
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const ns = `failover-${randomBytes(3).toString('hex')}`;

const card = (version: string) => ({ ...minimalCard(), version });

async function published(): Promise<number> {
  let count = 0;
  let next: string | undefined;
  do {
    const page = await core.listNamespacedConfigMap({ namespace: ns, limit: 500, _continue: next });
    count += page.items.filter((cm) => cm.metadata?.name?.endsWith('-agent-card')).length;
    next = page.metadata?._continue || undefined;
  } while (next);
  return count;
}

interface Operator {
  child: ChildProcess;
  lines: string[];
}

function operator(name: string): Operator {
  const child = spawn(
    join(root, 'node_modules', '.bin', 'node'),
    [
      join(root, 'bin', 'agentcard.js'),
      'operator',
      ...['--kubeconfig', kubeconfigFile, '--namespace', ns, '--metrics-port', '0'],
      ...['--bind-address', '127.0.0.1', '--webhook-port', '0', '--no-probes', '--no-catalogs'],
      ...['--leader-elect', '--leader-election-namespace', ns, '--leader-election-id', 'failover'],
      ...['--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '500ms'],
    ],
    { cwd: root, env: { ...process.env, POD_NAME: name, KUBECONFIG: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const lines: string[] = [];
  let buffer = '';
  const onData = (chunk: Buffer) => {
    buffer += chunk.toString();
    const parts = buffer.split('\n');
    buffer = parts.pop()!;
    lines.push(...parts);
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  child.once('exit', (code, signal) => {
    if (signal === 'SIGKILL') return;
    log(`operator ${name} exited (${code}); its last lines:`);
    for (const line of lines.slice(-5)) log(`  ${line.slice(0, 400)}`);
  });
  return { child, lines };
}

const leads = (op: Operator) => op.lines.some((l) => l.includes('"msg":"became leader"'));
const rssMiB = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function main() {
  await core.createNamespace({ body: { metadata: { name: ns } } });
  log(`creating ${n} AgentCards in ${ns}`);
  for (let i = 0; i < n; i += 20)
    await Promise.all(
      Array.from({ length: Math.min(20, n - i) }, (_, j) =>
        custom.createNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          plural: PLURAL,
          namespace: ns,
          body: {
            apiVersion: `${GROUP}/${VERSION}`,
            kind: 'AgentCard',
            metadata: { name: `card-${i + j}` },
            spec: { card: card('1.0.0') },
          },
        }),
      ),
    );
  const ops = [operator('one'), operator('two')];
  try {
    let leader: Operator | undefined;
    while (!(leader = ops.find(leads))) await sleep(200);
    const standby = ops.find((o) => o !== leader)!;
    const t0 = Date.now();
    while ((await published()) < n) await sleep(1_000);
    log(`all ${n} published after ${Date.now() - t0} ms; letting both settle for 10 s`);
    if (ops.some((o) => o.child.exitCode !== null)) throw new Error('an operator exited before the kill');
    await sleep(10_000);
    const standbyRss = rssMiB(standby.child.pid!);
    const leaderRss = rssMiB(leader.child.pid!);

    leader.child.kill('SIGKILL');
    const killed = Date.now();
    await custom.patchNamespacedCustomObject(
      {
        group: GROUP,
        version: VERSION,
        plural: PLURAL,
        namespace: ns,
        name: 'card-0',
        body: { spec: { card: card('9.9.9') } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    let ledAt = 0;
    let wroteAt = 0;
    while (!wroteAt && Date.now() - killed < 120_000) {
      if (!ledAt && leads(standby)) ledAt = Date.now();
      const cm = await core.readNamespacedConfigMap({ namespace: ns, name: 'card-0-agent-card' });
      if (cm.data?.['agent-card.json']?.includes('9.9.9')) wroteAt = Date.now();
      else await sleep(100);
    }
    if (!ledAt && leads(standby)) ledAt = wroteAt;
    const result = {
      cards: n,
      root,
      leaderMs: ledAt - killed,
      firstWriteMs: wroteAt ? wroteAt - killed : null,
      standbyRssMiB: Math.round(standbyRss),
      leaderRssMiB: Math.round(leaderRss),
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    for (const o of ops) if (o.child.exitCode === null) o.child.kill('SIGKILL');
    await core.deleteNamespace({ name: ns }).catch(() => {});
  }
}

await main();
