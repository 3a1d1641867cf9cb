/**
 * Start time and memory of `agentcard operator` and `agentcard sidecar`, side by side in one run:
 *
 * - before the build step: the TypeScript sources of BASELINE (the last commit without it), with
 *   Node's compile cache warmed the way its image build warmed it (bin/warm-compile-cache.js);
 * - the bundle (build/bundle.ts) of this checkout, laid out as the image and the npm package
 *   hold it, without a compile cache, and with one warmed by a first run (is warming still worth
 *   it?);
 * - the TypeScript sources of this checkout, as tests and `npx agentcard` in a checkout run them
 *   (no compile cache, and client-node's generated code loads: only the bundle leaves it out).
 *
 * Start time: from spawn until the process answers (the operator's /readyz, after its caches
 * have synced against the local control plane, with no AgentCard to reconcile; the sidecar's
 * /.well-known/agent-card.json). RSS: one second after that, and the peak (VmHWM). The variants
 * run in turn in every round, so load from other work on the machine affects them alike.
 *
 * `node bench/startup.bench.ts [--rounds N]`; rewrites the `## Start time and memory` section of
 * docs/BENCHMARKS.md. Needs the repository's history (BASELINE) and Go for the control plane.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { stagePackage } from '../build/bundle.ts';
import { KubeClient, CONTENT_TYPE } from '../operator/kube/client.ts';
import { loadKubeConfig } from '../operator/kube/config.ts';
import { SIDECAR_NODE_OPTIONS } from '../operator/sidecar/runtime.ts';
import { down, up } from '../test/controlplane/control.ts';
import { kubeconfigFile } from '../test/controlplane/paths.ts';
import { freePorts } from '../test/support/ports.ts';
import { table, writeSection } from './report.ts';
import { median } from './stats.ts';

/** The last commit before the build step: TypeScript run by Node, compile cache warmed in the image. */
const BASELINE = 'cae2237a6876db247edd230886f1a8e864caabdc';
const root = resolve(import.meta.dirname, '..');
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '7' } } });
const ROUNDS = Number(values.rounds);
const log = (line: string) => process.stderr.write(`[startup] ${line}\n`);

type Variant = { label: string; bin: string; env: NodeJS.ProcessEnv };
type Sample = { startMs: number; rssMiB: number; peakMiB: number };

function baselineTree(dir: string): string {
  const archive = spawnSync(
    'git',
    ['-C', root, 'archive', '--format=tar', BASELINE, 'bin', 'operator', 'package.json'],
    {
      maxBuffer: 256 * 2 ** 20,
    },
  );
  if (archive.status !== 0) {
    throw new Error(
      `git archive ${BASELINE} failed (a shallow clone lacks it): ${archive.stderr.toString().trim()}`,
    );
  }
  mkdirSync(dir, { recursive: true });
  const tar = spawnSync('tar', ['-x', '-C', dir], { input: archive.stdout });
  if (tar.status !== 0) throw new Error(`tar failed: ${tar.stderr.toString()}`);
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  const cache = join(dir, '.compile-cache');
  const warm = spawnSync(process.execPath, [join(dir, 'bin', 'warm-compile-cache.js')], {
    env: { ...process.env, NODE_COMPILE_CACHE: cache },
    encoding: 'utf8',
  });
  if (warm.status !== 0) throw new Error(`warming the baseline's compile cache failed: ${warm.stderr}`);
  return cache;
}

function getStatus(url: string): Promise<number> {
  return new Promise((resolveStatus) => {
    const req = get(url, (res) => {
      res.resume();
      resolveStatus(res.statusCode ?? 0);
    });
    req.on('error', () => resolveStatus(0));
    req.setTimeout(1_000, () => req.destroy());
  });
}

function procStatus(pid: number): { rssMiB: number; peakMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rssMiB: kib('VmRSS') / 1024, peakMiB: kib('VmHWM') / 1024 };
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((done) => {
    if (child.exitCode !== null || child.signalCode !== null) return done();
    child.once('exit', () => done());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
  });
}

/** Spawns, polls `url` every 5 ms until it answers 200 (30 s at most), then measures memory. */
async function measure(argv: string[], env: NodeJS.ProcessEnv, url: string): Promise<Sample> {
  const started = performance.now();
  const child = spawn(process.execPath, argv, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  try {
    const deadline = started + 30_000;
    while ((await getStatus(url)) !== 200) {
      if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}: ${stderr}`);
      if (performance.now() > deadline) throw new Error(`${url} not ready within 30 s: ${stderr}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    const startMs = performance.now() - started;
    await new Promise((r) => setTimeout(r, 1_000));
    return { startMs, ...procStatus(child.pid!) };
  } finally {
    await stop(child);
  }
}

async function installCrd(): Promise<void> {
  const client = new KubeClient(loadKubeConfig({ kubeconfig: kubeconfigFile }));
  const crd = parseYaml(readFileSync(join(root, 'crds', 'agentcard.dev_agentcards.yaml'), 'utf8')) as {
    metadata: { name: string };
  };
  const path = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`;
  await client.request('PATCH', path, {
    query: { fieldManager: 'agentcard-bench', force: true },
    body: crd,
    contentType: CONTENT_TYPE.apply,
  });
  for (let i = 0; i < 100; i++) {
    const got = await client.request<{ status?: { conditions?: Array<{ type: string; status: string }> } }>(
      'GET',
      path,
    );
    if (got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the AgentCard CRD did not become Established');
}

function sidecarFiles(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const card = {
    name: 'Startup bench agent',
    description: 'Fixture of the start-up benchmark',
    version: '1.0.0',
    supportedInterfaces: [
      { url: 'https://agent.example.com/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ],
    capabilities: {},
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'echo', name: 'Echo', description: 'Echoes text', tags: ['echo'] }],
  };
  writeFileSync(join(dir, 'agent-card.json'), JSON.stringify(card));
  writeFileSync(join(dir, 'jwks.json'), '{"keys":[]}');
  writeFileSync(join(dir, 'cache-max-age-seconds'), '300');
  return dir;
}

/** A port picked free can be taken by another process before ours binds it: then try new ports. */
async function retryOnPortClash(run: () => Promise<Sample>): Promise<Sample> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if (attempt >= 3 || !String(err).includes('already in use')) throw err;
    }
  }
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'agentcard-bench-startup-'));
  const { started } = await up(log);
  try {
    await installCrd();
    const baselineCache = baselineTree(join(work, 'baseline'));
    const app = await stagePackage(join(work, 'app'));
    const bundleCache = join(work, 'bundle-compile-cache');
    const variants: Variant[] = [
      {
        label: 'TypeScript sources + warmed compile cache (before)',
        bin: join(work, 'baseline', 'bin', 'agentcard.js'),
        env: { NODE_COMPILE_CACHE: baselineCache },
      },
      { label: 'bundle (after)', bin: join(app, 'bin', 'agentcard.js'), env: {} },
      {
        label: 'bundle + warmed compile cache',
        bin: join(app, 'bin', 'agentcard.js'),
        env: { NODE_COMPILE_CACHE: bundleCache },
      },
      {
        label: 'TypeScript sources of this checkout (tests, npx)',
        bin: join(root, 'bin', 'agentcard.js'),
        env: {},
      },
    ];
    const volume = sidecarFiles(join(work, 'volume'));
    const commands = {
      operator: (v: Variant): Promise<Sample> =>
        retryOnPortClash(async () => {
          const [metrics] = await freePorts(1);
          return measure(
            [
              v.bin,
              'operator',
              `--kubeconfig=${kubeconfigFile}`,
              '--namespace=bench-startup',
              '--no-leader-elect',
              '--no-probes',
              '--webhook-port=0',
              `--metrics-port=${metrics}`,
              '--bind-address=127.0.0.1',
            ],
            { ...process.env, AGENTCARD_LOG_LEVEL: 'warn', ...v.env },
            `http://127.0.0.1:${metrics}/readyz`,
          );
        }),
      sidecar: (v: Variant): Promise<Sample> =>
        retryOnPortClash(async () => {
          const [port, metrics] = await freePorts(2);
          return measure(
            [v.bin, 'sidecar', '--dir', volume, `--port=${port}`, `--metrics-port=${metrics}`],
            // The injected sidecar container's NODE_OPTIONS (operator/sidecar/runtime.ts).
            { ...process.env, NODE_OPTIONS: SIDECAR_NODE_OPTIONS, ...v.env },
            `http://127.0.0.1:${port}/.well-known/agent-card.json`,
          );
        }),
    };
    // One run of each first, not measured: it fills the bundle's compile cache and warms the
    // file system cache for every variant.
    for (const command of Object.values(commands)) for (const v of variants) await command(v);
    const samples: Record<string, Record<string, Sample[]>> = {};
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, command] of Object.entries(commands)) {
        const order = round % 2 === 0 ? variants : [...variants].reverse();
        for (const v of order) {
          const s = await command(v);
          ((samples[name] ??= {})[v.label] ??= []).push(s);
        }
      }
      log(`round ${round + 1}/${ROUNDS} done`);
    }
    const rows: (string | number)[][] = [];
    for (const [name, byVariant] of Object.entries(samples)) {
      const before = byVariant[variants[0]!.label]!;
      for (const v of variants) {
        const s = byVariant[v.label]!;
        const start = median(s.map((x) => x.startMs));
        const best = Math.min(...s.map((x) => x.startMs));
        const rss = median(s.map((x) => x.rssMiB));
        const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
        rows.push([
          name,
          v.label,
          `${start.toFixed(0)} ms`,
          ratio(start, median(before.map((x) => x.startMs))),
          `${best.toFixed(0)} ms`,
          `${rss.toFixed(1)} MiB`,
          ratio(rss, median(before.map((x) => x.rssMiB))),
          `${median(s.map((x) => x.peakMiB)).toFixed(1)} MiB`,
        ]);
      }
    }
    const body = [
      `Medians of ${ROUNDS} interleaved rounds; ratios against the first row of each command. ` +
        `"before" is commit ${BASELINE.slice(0, 7)} run as its image ran it. The operator starts against ` +
        'the local control plane (no leader election, no probes, no webhook) and counts as started at ' +
        'its first /readyz 200; the sidecar at its first 200 for /.well-known/agent-card.json, with the ' +
        "injected container's NODE_OPTIONS. RSS is read one second later. The image and the npm " +
        'package run the bundle without a compile cache.',
      '',
      table(
        ['command', 'build', 'start (median)', 'vs before', 'start (best)', 'RSS', 'vs before', 'peak RSS'],
        rows,
      ),
    ].join('\n');
    writeSection('startup', 'Start time and memory', body);
    process.stdout.write(`${body}\n`);
  } finally {
    if (started) await down(log);
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
