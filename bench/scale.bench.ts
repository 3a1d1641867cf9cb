/**
 * Controller scale benchmark: AgentCards on the local control plane, at several sizes.
 *
 * For each size (default 1,000, 3,000 and 10,000 AgentCards, each with 3 interfaces: JSON-RPC,
 * HTTP+JSON and gRPC), a real `agentcard operator` process (no leader election, no probes) is
 * measured:
 * - time from the operator's start until every AgentCard is Ready (observed through a watch);
 * - API-server writes per card, counted by the API server itself (apiserver_request_total);
 * - the operator's peak RSS (VmHWM) and CPU;
 * and, as the floor, the time a bare script takes to make the same writes (one ConfigMap apply,
 * one status apply per card by 4 workers, with the data and the status the operator wrote for one
 * of its cards, and the same Event per card through a background sender with 2 writes in flight,
 * as the operator does) for as many other AgentCards.
 *
 * At the largest size the operator is then started again on the published cards with probes on
 * (every interface points at real @a2a-js/sdk peers on loopback addresses, probed every 60 s):
 * peak RSS, CPU per core over the measured window, API writes during a steady window (goal 0)
 * that starts once a watch has seen every interface's first verdict and the writes have stopped,
 * then the time from a spec change to the new card in the ConfigMap, one card at a time.
 * Results go to the `## Controller scale` section of docs/BENCHMARKS.md, with docs/scale.svg.
 *
 * With `--before <checkout>` (a checkout of an earlier commit, with its node_modules) the bench
 * compares two builds instead: per size and run, each build's operator reconciles its own n
 * AgentCards, the order of the builds alternating from run to run, and the results go to the
 * `## Controller scale, before and after` section (no floor, no probes phase).
 *
 * Run: `node bench/scale.bench.ts [--cards 1000,3000,10000] [--runs 1] [--steady-seconds 300]
 * [--spec-changes 50] [--no-probes] [--before <checkout>]` (Node.js 24, e.g. through npx).
 * `--probes-only` runs only the probes part at the largest size (the cards are published by an
 * operator with probes off first, no floor) and writes only the `## Controller scale, probes on`
 * section; `--cpu-prof <dir>` profiles every operator run and `--heap-snapshot <dir>` the probes-on one.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  loadAllYaml,
  makeInformer,
  type KubernetesListObject,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { generateSigningJwk } from '../operator/card/keygen.ts';
import { GROUP, PLURAL, VERSION } from '../operator/api/names.ts';
import { stagePackage } from '../build/bundle.ts';
import { down, up } from '../test/controlplane/control.ts';
import { kubeconfigFile } from '../test/controlplane/paths.ts';
import { summarizeHeapSnapshot } from './heap-summary.ts';
import { lineChartsSvg } from './plot.ts';
import { table, writeSection } from './report.ts';
import { apiServerMetrics } from './api-writes.ts';
import { median } from './stats.ts';

const root = resolve(import.meta.dirname, '..');
const RESOURCE = { group: GROUP, version: VERSION, plural: PLURAL };
const log = (line: string) => process.stderr.write(`[scale] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const USAGE =
  'usage: node bench/scale.bench.ts [--cards 1000,3000,10000] [--concurrency 4] [--runs 1]\n' +
  '  [--steady-seconds 300] [--spec-changes 50] [--no-probes | --probes-only] [--before <checkout>]\n' +
  '  [--cpu-prof <dir>] [--heap-snapshot <dir>]   (what each does: the comment at the top of this file)\n';

/** The options, or the usage and exit 2 when one is unknown or malformed (exit 0 for --help). */
function options() {
  try {
    return parseArgs({ options: OPTIONS, allowNegative: true });
  } catch (err) {
    process.stderr.write(`scale bench: ${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
    process.exit(2);
  }
}

const OPTIONS = {
  help: { type: 'boolean', default: false },
  cards: { type: 'string', default: '1000,3000,10000' },
  concurrency: { type: 'string', default: '4' },
  runs: { type: 'string', default: '1' },
  'steady-seconds': { type: 'string', default: '300' },
  'spec-changes': { type: 'string', default: '50' },
  probes: { type: 'boolean', default: true },
  peer: { type: 'string' },
  'heap-snapshot': { type: 'string' },
  /** Only the probes part at the largest size: publish the cards, then probes on (no floor). */
  'probes-only': { type: 'boolean', default: false },
  /** Writes a V8 CPU profile of each operator run into this directory (at its exit). */
  'cpu-prof': { type: 'string' },
  before: { type: 'string' },
} as const;
const { values } = options();
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const SIZES = values.cards.split(',').map(Number);
const CONCURRENCY = Number(values.concurrency);
const RUNS = Number(values.runs);
const STEADY_S = Number(values['steady-seconds']);
const SPEC_CHANGES = Number(values['spec-changes']);
/** Stops with what is wrong when an option is not a whole number of at least `min`. */
function requireWhole(name: string, value: number, min: number): void {
  if (!Number.isInteger(value) || value < min) {
    process.stderr.write(`scale bench: --${name} must be a whole number of at least ${min}\n`);
    process.exit(2);
  }
}
for (const size of SIZES) requireWhole('cards', size, 1);
requireWhole('concurrency', CONCURRENCY, 1);
requireWhole('runs', RUNS, 1);
requireWhole('steady-seconds', STEADY_S, 1);
// The probes report gives the spec changes' percentiles: at least one change is measured.
requireWhole('spec-changes', SPEC_CHANGES, 1);
/** Loopback addresses the peers listen on: the probes' per-host limit (4) applies per address. */
const PEER_PROCESSES = 6;
const PEER_HOSTS = Array.from({ length: 24 }, (_, i) => `127.0.0.${i + 2}`);
const PROBE_INTERVAL_S = 60;
type PeerUrls = { jsonrpc: string; rest: string; grpc: string };

/** Runs `fn` over `items` with at most `limit` in flight. */
async function pool<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** Write requests by resource, from the API server's own counters. */
async function writeCounters(kc: KubeConfig): Promise<Record<string, number>> {
  const text = await apiServerMetrics(kc);
  const out: Record<string, number> = { configmaps: 0, status: 0, events: 0 };
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const l = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    const n = Number(line.slice(line.lastIndexOf(' ') + 1));
    const write = ['PATCH', 'APPLY', 'POST', 'PUT'].includes(l.verb ?? '');
    if (!write) continue;
    if (l.resource === 'configmaps' && (l.verb === 'PATCH' || l.verb === 'APPLY')) out.configmaps! += n;
    if (l.resource === PLURAL && l.subresource === 'status') out.status! += n;
    if (l.resource === 'events' && l.verb === 'POST') out.events! += n;
  }
  return out;
}

/** Resolves true once the write counters have not moved for `quietMs` (false after `limitMs`). */
async function writesQuiet(kc: KubeConfig, quietMs: number, limitMs: number): Promise<boolean> {
  const until = performance.now() + limitMs;
  let last = JSON.stringify(await writeCounters(kc));
  let since = performance.now();
  while (performance.now() < until) {
    await sleep(1_000);
    const now = JSON.stringify(await writeCounters(kc));
    if (now !== last) [last, since] = [now, performance.now()];
    else if (performance.now() - since >= quietMs) return true;
  }
  return false;
}

/** Where card i's interfaces point: the peers in turn (example.com hosts when there are none). */
let peers: PeerUrls[] = [];
function interfaces(i: number) {
  const p = peers[i % Math.max(peers.length, 1)];
  return [
    {
      url: p?.jsonrpc ?? `https://agent-${i}.example.com/a2a`,
      protocolBinding: 'JSONRPC',
      protocolVersion: '1.0',
    },
    {
      url: p?.rest ?? `https://agent-${i}.example.com/rest`,
      protocolBinding: 'HTTP+JSON',
      protocolVersion: '1.0',
    },
    { url: p?.grpc ?? `https://agent-${i}.example.com:443`, protocolBinding: 'GRPC', protocolVersion: '1.0' },
  ];
}

function card(i: number, version = '1.0.0') {
  return {
    name: `Agent ${i}`,
    description: 'Answers questions about the weather forecast for a city.',
    version,
    supportedInterfaces: interfaces(i),
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      { id: 'forecast', name: 'Forecast', description: 'Gives the forecast for a city', tags: ['weather'] },
    ],
  };
}

async function prepareNamespace(kc: KubeConfig, name: string, n: number): Promise<string[]> {
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  await core.createNamespace({ body: { metadata: { name } } });
  const jwk = JSON.stringify(await generateSigningJwk('ES256', 'bench-1'));
  await core.createNamespacedSecret({
    namespace: name,
    body: { metadata: { name: 'key', labels: { 'agentcard.dev/signing-key': 'true' } }, stringData: { jwk } },
  });
  const names = Array.from({ length: n }, (_, i) => `card-${String(i).padStart(5, '0')}`);
  await pool(names, 16, (n) =>
    custom.createNamespacedCustomObject({
      ...RESOURCE,
      namespace: name,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'AgentCard',
        metadata: { name: n },
        spec: {
          card: card(Number(n.slice(5))),
          signing: { keys: [{ secretRef: { name: 'key', key: 'jwk' } }] },
          probe: { interval: `${PROBE_INTERVAL_S}s` },
        },
      },
    }),
  );
  return names;
}

/**
 * Watches `namespace`: `all` resolves once every AgentCard has been seen Ready, `probed` once
 * every one has its interfaces' first verdict in its status (InterfacesReachable neither
 * pending nor disabled, a lastProbeTime on each interface).
 */
async function watchReady(kc: KubeConfig, namespace: string, n: number) {
  const ready = new Set<string>();
  const probed = new Set<string>();
  let resolveAll!: () => void;
  const all = new Promise<void>((r) => (resolveAll = r));
  let resolveProbed!: () => void;
  const allProbed = new Promise<void>((r) => (resolveProbed = r));
  type Card = KubernetesObject & {
    status?: {
      conditions?: Array<{ type: string; status: string; reason?: string }>;
      interfaces?: Array<{ lastProbeTime?: string }>;
    };
  };
  const custom = kc.makeApiClient(CustomObjectsApi);
  const informer = makeInformer<Card>(
    kc,
    `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`,
    async () =>
      (await custom.listNamespacedCustomObject({ ...RESOURCE, namespace })) as KubernetesListObject<Card>,
  );
  const seen = (obj: Card) => {
    const name = obj.metadata!.name!;
    if (obj.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) ready.add(name);
    if (ready.size === n) resolveAll();
    const reachable = obj.status?.conditions?.find((c) => c.type === 'InterfacesReachable');
    const interfaces = obj.status?.interfaces ?? [];
    if (
      reachable &&
      reachable.reason !== 'ProbesPending' &&
      reachable.reason !== 'ProbesDisabled' &&
      interfaces.length === 3 &&
      interfaces.every((i) => i.lastProbeTime)
    ) {
      probed.add(name);
    } else probed.delete(name);
    if (probed.size === n) resolveProbed();
  };
  informer.on('add', seen);
  informer.on('update', seen);
  await informer.start();
  return { all, allProbed, stop: () => informer.stop() };
}

/**
 * The operator and the floor script run as production does: bundled (build/bundle.ts), laid out
 * as the npm package and the image are, so no TypeScript is stripped at run time.
 */
const work = mkdtempSync(join(tmpdir(), 'agentcard-bench-scale-'));
let app = '';
/** The earlier build's package, with `--before`. */
let appBefore = '';
async function buildProduction(): Promise<void> {
  app = await stagePackage(join(work, 'app'), { 'scale-floor': 'bench/scale-floor.ts' });
  if (!values.before) return;
  const earlier = (await import(pathToFileURL(join(resolve(values.before), 'build', 'bundle.ts')).href)) as {
    stagePackage: (dir: string) => Promise<string>;
  };
  appBefore = await earlier.stagePackage(join(work, 'before'));
}

interface OperatorRun {
  child: ChildProcess;
  port: number;
  started: number;
  syncedAt: number;
  rssAtSyncKiB: number;
  /** When it logged that every AgentCard was reconciled once (0: not yet). */
  caughtUpAt: number;
  /** How long each scrape of its /metrics took, in order. */
  scrapeSeconds: number[];
  exited: Promise<number | null>;
  stderr: () => string;
}

/** Starts a real `agentcard operator` process watching `namespace`. */
async function startOperator(
  namespace: string,
  probes: boolean,
  snapshotDir?: string,
  build = app,
): Promise<OperatorRun> {
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      // --cpu-prof DIR: a V8 CPU profile of each operator run, written into DIR when it stops.
      ...(values['cpu-prof'] ? ['--cpu-prof', '--cpu-prof-dir', resolve(values['cpu-prof'])] : []),
      join(build, 'bin', 'agentcard.js'),
      'operator',
      ...['--kubeconfig', kubeconfigFile, '--namespace', namespace, '--no-leader-elect'],
      ...(probes ? ['--probe-allow-cidr', '127.0.0.0/8'] : ['--no-probes']),
      ...['--webhook-port', '0', '--metrics-port', '0', '--bind-address', '127.0.0.1'],
      ...['--concurrency', String(CONCURRENCY)],
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      cwd: snapshotDir ?? root,
      env: {
        ...process.env,
        AGENTCARD_LOG_LEVEL: 'info',
        // SIGUSR2 then writes a heap snapshot into the working directory (--heap-snapshot).
        ...(snapshotDir
          ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --heapsnapshot-signal=SIGUSR2` }
          : {}),
      },
    },
  );
  let stderr = '';
  const run: OperatorRun = {
    child,
    port: 0,
    started,
    syncedAt: 0,
    rssAtSyncKiB: NaN,
    caughtUpAt: 0,
    scrapeSeconds: [],
    exited: new Promise<number | null>((r) => child.once('exit', r)),
    stderr: () => stderr,
  };
  child.stderr!.on('data', (c: Buffer) => {
    stderr = (stderr + c.toString()).slice(-8000);
    run.port ||= Number(/"metricsPort":(\d+)/.exec(stderr)?.[1] ?? 0);
    if (!run.syncedAt && stderr.includes('"msg":"caches synced; reconciling"')) {
      run.syncedAt = performance.now();
      run.rssAtSyncKiB = Number(
        /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? NaN,
      );
    }
    if (!run.caughtUpAt && stderr.includes('"msg":"every AgentCard reconciled once"'))
      run.caughtUpAt = performance.now();
  });
  return run;
}

/** Peak RSS (MiB) and CPU seconds of a running process, from /proc. */
function processUsage(pid: number): {
  peakMiB: number;
  rssMiB: number;
  rssFileMiB: number;
  cpuSeconds: number;
} {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return {
    peakMiB: Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024,
    rssMiB: Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024,
    rssFileMiB: Number(/RssFile:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024,
    cpuSeconds: (Number(stat[11]) + Number(stat[12])) / 100, // utime + stime, in clock ticks
  };
}

/**
 * The operator's metrics: a metric's value, summed over its label sets (NaN when absent);
 * `name{label="value"}` sums only the series with that one label.
 */
async function operatorMetrics(run: OperatorRun): Promise<(name: string) => number> {
  const started = performance.now();
  const text = run.port ? await (await fetch(`http://127.0.0.1:${run.port}/metrics`)).text() : '';
  // From the request to the last byte: with probes on, the scrape shares the event loop with them.
  run.scrapeSeconds.push((performance.now() - started) / 1000);
  const sums = new Map<string, number>();
  const add = (key: string, value: number) => sums.set(key, (sums.get(key) ?? 0) + value);
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0];
    if (!name) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    add(name, value);
    const labels = /^\{(.*)\}/.exec(line.slice(name.length))?.[1] ?? '';
    for (const pair of labels.match(/[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"/g) ?? [])
      add(`${name}{${pair}}`, value);
  }
  return (name: string) => sums.get(name) ?? NaN;
}

async function stopOperator(run: OperatorRun): Promise<void> {
  run.child.kill('SIGTERM');
  await run.exited;
}

/** The operator from its start until every one of the `n` AgentCards is Ready. */
async function runOperator(kc: KubeConfig, namespace: string, n: number, build = app) {
  const watcher = await watchReady(kc, namespace, n);
  const op = await startOperator(namespace, false, undefined, build);
  const timeout = setTimeout(() => op.child.kill('SIGKILL'), 30 * 60_000);
  await Promise.race([
    watcher.all,
    op.exited.then(() => Promise.reject(new Error(`operator exited early: ${op.stderr()}`))),
  ]);
  const seconds = (performance.now() - op.started) / 1000;
  await sleep(3_000); // let anything still to come arrive before counting and measuring
  const usage = processUsage(op.child.pid!);
  const metric = await operatorMetrics(op);
  // The runtime's metric (agentcard_reconcile_duration_seconds is its deprecated twin).
  const reconcileSum = metric('controller_runtime_reconcile_time_seconds_sum{controller="agentcard"}');
  const reconcileCount = metric('controller_runtime_reconcile_time_seconds_count{controller="agentcard"}');
  const reconcileMs = (reconcileSum / reconcileCount) * 1000;
  await watcher.stop();
  await stopOperator(op);
  clearTimeout(timeout);
  return {
    seconds,
    startupSeconds: (op.syncedAt - op.started) / 1000,
    peakMiB: usage.peakMiB,
    rssAtSyncMiB: op.rssAtSyncKiB / 1024,
    cpuSeconds: usage.cpuSeconds,
    reconcileMs,
    reconciles: reconcileCount,
    heapMiB: metric('nodejs_heap_size_used_bytes') / 2 ** 20,
  };
}

/**
 * The floor: bench/scale-floor.ts, a bare script making the same writes with the same
 * parallelism, as its own process bundled like the operator, timed like the operator: from its
 * start until a watch has seen every AgentCard Ready.
 */
async function bareWrites(
  kc: KubeConfig,
  namespace: string,
  n: number,
  data: Record<string, string>,
  status: unknown,
) {
  const dataFile = join(work, `floor-data-${namespace}.json`);
  writeFileSync(dataFile, JSON.stringify(data));
  const statusFile = join(work, `floor-status-${namespace}.json`);
  writeFileSync(statusFile, JSON.stringify(status));
  const watcher = await watchReady(kc, namespace, n);
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      join(app, 'dist', 'scale-floor.js'),
      ...['--kubeconfig', kubeconfigFile, '--namespace', namespace],
      ...['--concurrency', String(CONCURRENCY), '--data', dataFile, '--status', statusFile],
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  await Promise.race([
    watcher.all,
    exited.then((code) => (code === 0 ? watcher.all : Promise.reject(new Error(`floor failed: ${stderr}`)))),
  ]);
  const seconds = (performance.now() - started) / 1000;
  if ((await exited) !== 0) throw new Error(`floor failed: ${stderr}`);
  await watcher.stop();
  return seconds;
}

interface RunResult {
  cards: number;
  op: Awaited<ReturnType<typeof runOperator>>;
  floorSeconds: number;
  perCard: Record<string, number>;
  /** The namespace the operator reconciled (kept for the probes phase of the last run). */
  namespace: string;
}

/** One run: n AgentCards reconciled by the operator, then the floor on n others. */
async function oneRun(kc: KubeConfig, n: number, run: number, namespaces: string[]): Promise<RunResult> {
  const suffix = randomBytes(3).toString('hex');
  const nsOperator = `bench-scale-${suffix}`;
  const nsFloor = `bench-floor-${suffix}`;
  namespaces.push(nsOperator, nsFloor);
  log(`${n} cards, run ${run}: creating ${n} AgentCards in ${nsOperator}`);
  const names = await prepareNamespace(kc, nsOperator, n);
  const before = await writeCounters(kc);
  log(`${n} cards, run ${run}: starting the operator (concurrency ${CONCURRENCY})`);
  const op = await runOperator(kc, nsOperator, n);
  const after = await writeCounters(kc);
  const perCard = Object.fromEntries(Object.keys(after).map((k) => [k, (after[k]! - before[k]!) / n]));
  log(
    `${n} cards, run ${run}: all Ready in ${op.seconds.toFixed(1)} s (caches synced after ${op.startupSeconds.toFixed(1)} s, ` +
      `RSS then ${op.rssAtSyncMiB.toFixed(0)} MiB), peak RSS ${op.peakMiB.toFixed(0)} MiB, heap ${op.heapMiB.toFixed(0)} MiB, ` +
      `CPU ${op.cpuSeconds.toFixed(1)} s, mean reconcile ${op.reconcileMs.toFixed(1)} ms over ${op.reconciles} reconciles`,
  );
  log(`${n} cards, run ${run}: floor, creating ${n} AgentCards in ${nsFloor}`);
  const core = kc.makeApiClient(CoreV1Api);
  const template = (
    await core.readNamespacedConfigMap({ namespace: nsOperator, name: `${names[0]}-agent-card` })
  ).data!;
  // The status the operator wrote for that card: the floor applies the same fields.
  const { status } = (await kc
    .makeApiClient(CustomObjectsApi)
    .getNamespacedCustomObject({ ...RESOURCE, namespace: nsOperator, name: names[0]! })) as {
    status: unknown;
  };
  await prepareNamespace(kc, nsFloor, n);
  const floorSeconds = await bareWrites(kc, nsFloor, n, template, status);
  log(
    `${n} cards, run ${run}: floor, the same writes in ${floorSeconds.toFixed(1)} s (ratio ${(op.seconds / floorSeconds).toFixed(2)}x)`,
  );
  return { cards: n, op, floorSeconds, perCard, namespace: nsOperator };
}

type OperatorResult = Awaited<ReturnType<typeof runOperator>>;

interface ComparisonRun {
  cards: number;
  /** Which build ran first in this run. */
  first: 'before' | 'after';
  before: OperatorResult & { writesPerCard: number };
  after: OperatorResult & { writesPerCard: number };
}

/**
 * One run of `--before`: each build's operator on n AgentCards of its own namespace, one after
 * the other, in the order given (alternated by the caller so that neither build always runs on
 * the fuller API server).
 */
async function comparisonRun(
  kc: KubeConfig,
  n: number,
  run: number,
  namespaces: string[],
): Promise<ComparisonRun> {
  const first = run % 2 === 1 ? 'after' : 'before';
  const order = first === 'after' ? (['after', 'before'] as const) : (['before', 'after'] as const);
  const results: Partial<Record<'before' | 'after', ComparisonRun['after']>> = {};
  for (const label of order) {
    const namespace = `bench-${label}-${randomBytes(3).toString('hex')}`;
    namespaces.push(namespace);
    log(`${n} cards, run ${run}, ${label}: creating ${n} AgentCards in ${namespace}`);
    await prepareNamespace(kc, namespace, n);
    const writes0 = await writeCounters(kc);
    const op = await runOperator(kc, namespace, n, label === 'after' ? app : appBefore);
    const writes1 = await writeCounters(kc);
    const writesPerCard = (writes1.configmaps! - writes0.configmaps! + writes1.status! - writes0.status!) / n;
    log(
      `${n} cards, run ${run}, ${label}: all Ready in ${op.seconds.toFixed(1)} s (caches synced after ` +
        `${op.startupSeconds.toFixed(1)} s), peak RSS ${op.peakMiB.toFixed(0)} MiB, RSS at sync ${op.rssAtSyncMiB.toFixed(0)} MiB, ` +
        `heap ${op.heapMiB.toFixed(0)} MiB, CPU ${op.cpuSeconds.toFixed(1)} s, writes per card ${writesPerCard.toFixed(2)}`,
    );
    results[label] = { ...op, writesPerCard };
  }
  return { cards: n, first, before: results.before!, after: results.after! };
}

function reportComparison(bySize: ComparisonRun[][]): void {
  const rows: (string | number)[][] = [];
  for (const runs of bySize) {
    const m = (get: (r: ComparisonRun) => number) => median(runs.map(get));
    // The ratio of each run's pair (the two builds ran minutes apart on the same machine), then
    // their median: the load of a shared machine moves both builds of a run more alike than it
    // moves runs, so a ratio of medians taken across runs would mix loads.
    const pair = (
      label: string,
      unit: string,
      digits: number,
      get: (o: OperatorResult & { writesPerCard: number }) => number,
    ) => {
      const ratios = runs.map((r) => get(r.after) / get(r.before));
      rows.push([
        runs[0]!.cards,
        label,
        `${m((r) => get(r.before)).toFixed(digits)}${unit}`,
        `${m((r) => get(r.after)).toFixed(digits)}${unit}`,
        ratios.map((x) => x.toFixed(2)).join(', '),
        `${median(ratios).toFixed(2)}x`,
      ]);
    };
    pair('time to all Ready', ' s', 1, (o) => o.seconds);
    pair('caches synced', ' s', 1, (o) => o.startupSeconds);
    pair('peak RSS', ' MiB', 0, (o) => o.peakMiB);
    pair('RSS when caches synced', ' MiB', 0, (o) => o.rssAtSyncMiB);
    pair('heap in use when all Ready', ' MiB', 0, (o) => o.heapMiB);
    pair('operator CPU to all Ready', ' s', 1, (o) => o.cpuSeconds);
    pair('API writes per card (ConfigMap + status)', '', 2, (o) => o.writesPerCard);
  }
  const every = bySize.flatMap((runs) =>
    runs.map(
      (r, i) =>
        `run ${i + 1} at ${r.cards} (${r.first} first): before ${r.before.seconds.toFixed(1)} s / ${r.before.peakMiB.toFixed(0)} MiB, ` +
        `after ${r.after.seconds.toFixed(1)} s / ${r.after.peakMiB.toFixed(0)} MiB`,
    ),
  );
  writeSection(
    'controller-scale-before-after',
    'Controller scale, before and after',
    [
      `\`node bench/scale.bench.ts --cards ${SIZES.join(',')} --runs ${RUNS} --no-probes --before <checkout>\`: ` +
        `two builds of the operator, each a real \`agentcard operator\` process with its defaults (every ` +
        'controller on: AgentCards, catalogs, adoption, certificates; `--no-probes`, no leader election) reconciling ' +
        `its own AgentCards (3 interfaces each, signed) from its start until a watch has seen every one Ready; the ` +
        'builds take turns within each run, their order alternating from run to run. Before and after: the ' +
        "medians of the runs; the ratio: each run's after / before, then their median.",
      '',
      table(['AgentCards', 'measure', 'before', 'after', 'after / before, each run', 'median ratio'], rows),
      '',
      `Every run: ${every.join('; ')}.`,
    ].join('\n'),
  );
}

/** Resolves once process `pid` no longer holds `file` open (its /proc/PID/fd links). */
async function untilClosed(pid: number, file: string): Promise<void> {
  const fds = `/proc/${pid}/fd`;
  const open = () =>
    readdirSync(fds).some((fd) => {
      try {
        return readlinkSync(join(fds, fd)) === file;
      } catch {
        return false; // closed meanwhile
      }
    });
  while (open()) await sleep(1_000);
}

/** Writes the operator's heap snapshot into `dir` and logs where its memory goes. */
async function heapSnapshot(op: OperatorRun, dir: string): Promise<void> {
  const before = new Set(readdirSync(dir));
  op.child.kill('SIGUSR2');
  for (let i = 0; i < 600; i++) {
    await sleep(1_000);
    const file = readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (!file) continue;
    // Written in one go but slowly, with pauses (a size that stops changing for a while is no
    // sign of the end): read it once the operator has closed it, which V8 does when done.
    await untilClosed(op.child.pid!, resolve(dir, file));
    const { total, rows } = summarizeHeapSnapshot(join(dir, file));
    log(`heap snapshot ${join(dir, file)}: ${(total / 2 ** 20).toFixed(1)} MiB in objects; largest:`);
    for (const r of rows.slice(0, 20))
      log(`  ${(r.selfBytes / 2 ** 20).toFixed(2).padStart(7)} MiB ${String(r.count).padStart(8)} ${r.name}`);
    return;
  }
  log('no heap snapshot appeared');
}

/**
 * Real A2A peers (HTTP for JSON-RPC and HTTP+JSON, h2c for gRPC), one set per loopback address,
 * the addresses shared out over PEER_PROCESSES processes. Enough addresses that the probes'
 * per-host limit (4 in flight) is not what limits them: 24 x 4 is above the global 64.
 */
async function startPeers(children: ChildProcess[]): Promise<PeerUrls[]> {
  const self = fileURLToPath(import.meta.url);
  const groups = Array.from({ length: PEER_PROCESSES }, (_, g) =>
    PEER_HOSTS.filter((_, i) => i % PEER_PROCESSES === g),
  );
  const sets = await Promise.all(
    groups.map(
      (addresses) =>
        new Promise<PeerUrls[]>((resolvePeers, reject) => {
          const child = fork(self, ['--peer', addresses.join(',')], {
            stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
          });
          children.push(child);
          child.once('message', (m) => resolvePeers(m as PeerUrls[]));
          child.once('exit', (code) => reject(new Error(`peer exited with ${code}`)));
        }),
    ),
  );
  return sets.flat();
}

interface ProbePhase {
  cards: number;
  interfaces: number;
  warmupSeconds: number;
  measuredSeconds: number;
  cpuCores: number;
  peakMiB: number;
  /** When the peak RSS was reached (seconds after the start, and the phase). */
  peakWhen: string;
  rssMiB: number;
  /** Of the RSS: pages of mapped files (the Node.js executable and its libraries). */
  rssFileMiB: number;
  heapMiB: number;
  /** V8's heap as committed (in use or not), and memory outside it that V8 knows of (Buffers). */
  heapTotalMiB: number;
  externalMiB: number;
  /** The two scrapes of /metrics that open and close the steady window, in seconds. */
  scrapeSeconds: number[];
  probesPerSecond: number;
  steadyWrites: Record<string, number>;
  specChange: { n: number; p50: number; p99: number; max: number };
}

/**
 * The operator on `namespace`'s published cards with probes on: first probe rounds (warm-up),
 * then a steady window in which no API write is expected, then spec changes one at a time.
 */
async function probePhase(kc: KubeConfig, namespace: string, n: number): Promise<ProbePhase> {
  const watcher = await watchReady(kc, namespace, n);
  const snapshotDir = values['heap-snapshot'];
  if (snapshotDir) mkdirSync(snapshotDir, { recursive: true });
  const op = await startOperator(namespace, true, snapshotDir);
  const guard = setTimeout(() => op.child.kill('SIGKILL'), (STEADY_S + 30 * 60) * 1000);
  // When the peak RSS was reached: VmHWM read every second, its last rise and the phase it fell in.
  let phase = 'start'; // until the operator logs that its caches synced
  let peakAt = { seconds: 0, phase, mib: 0 };
  const peakWatch = setInterval(() => {
    try {
      const { peakMiB } = processUsage(op.child.pid!);
      if (phase === 'start' && op.syncedAt) phase = 'caches synced, first rounds';
      if (peakMiB > peakAt.mib)
        peakAt = { seconds: (performance.now() - op.started) / 1000, phase, mib: peakMiB };
    } catch {
      // The process has gone.
    }
  }, 1_000);
  try {
    // First rounds spread over [0.5, 1.5] x the interval; each card's status changes once (its
    // interfaces get their first verdict). The steady window starts when the watch has seen that
    // status on every card, i.e. once the last of those writes has landed.
    const exited = op.exited.then(() => Promise.reject(new Error(`operator exited: ${op.stderr()}`)));
    await Promise.race([Promise.all([watcher.all, watcher.allProbed]), exited]);
    // Their Events go out in the background (2 in flight): wait until the API server has counted
    // no write for 5 s in a row (at most 2 minutes).
    if (!(await writesQuiet(kc, 5_000, 120_000)))
      log('probes: the API writes did not stop for 5 s within 2 minutes; measuring anyway');
    const warmupSeconds = (performance.now() - op.started) / 1000;
    log(
      `probes: every interface has its first verdict and the writes are quiet after ${warmupSeconds.toFixed(0)} s; ` +
        `steady window of ${STEADY_S} s`,
    );
    // The operator runs with its defaults: no lastProbeTime refresh (--probe-status-refresh 0),
    // so a healthy fleet's steady state has nothing to write.
    // The steady state's garbage-collector setting comes once every card was reconciled.
    log(
      op.caughtUpAt
        ? `probes: every AgentCard reconciled once ${((op.caughtUpAt - op.started) / 1000).toFixed(0)} s after the start`
        : 'probes: the operator has not yet reconciled every AgentCard once; measuring anyway',
    );
    phase = 'steady window';
    const beforeWrites = await writeCounters(kc);
    const cpu0 = processUsage(op.child.pid!).cpuSeconds;
    const probes0 = (await operatorMetrics(op))('agentcard_probes_total');
    const t0 = performance.now();
    await sleep(STEADY_S * 1000);
    const measuredSeconds = (performance.now() - t0) / 1000;
    const usage = processUsage(op.child.pid!);
    const metric = await operatorMetrics(op);
    const afterWrites = await writeCounters(kc);
    // The peak includes this scrape of /metrics, as it includes the one that opened the window
    // (a Prometheus scrape costs the same); it stops before a heap snapshot, which makes the
    // process grow by its own size. Read now, so that the figure and its time agree.
    const peakMiB = processUsage(op.child.pid!).peakMiB;
    clearInterval(peakWatch);
    if (peakMiB > peakAt.mib)
      peakAt = { seconds: (performance.now() - op.started) / 1000, phase, mib: peakMiB };
    if (snapshotDir)
      await heapSnapshot(op, snapshotDir).catch((err: unknown) => log(`heap snapshot: ${String(err)}`));
    const steadyWrites = Object.fromEntries(
      Object.keys(afterWrites).map((k) => [k, afterWrites[k]! - beforeWrites[k]!]),
    );
    log(
      `probes: peak RSS ${peakAt.mib.toFixed(0)} MiB reached ${peakAt.seconds.toFixed(0)} s after the start (${peakAt.phase})`,
    );
    const heapMiB = metric('nodejs_heap_size_used_bytes') / 2 ** 20;
    const heapTotalMiB = metric('nodejs_heap_size_total_bytes') / 2 ** 20;
    const externalMiB = metric('nodejs_external_memory_bytes') / 2 ** 20;
    const scrapeSeconds = op.scrapeSeconds.slice(-2);
    log(
      `probes: steady ${measuredSeconds.toFixed(0)} s, CPU ${((usage.cpuSeconds - cpu0) / measuredSeconds).toFixed(3)} core, ` +
        `peak RSS ${peakMiB.toFixed(0)} MiB, RSS ${usage.rssMiB.toFixed(0)} MiB (files ${usage.rssFileMiB.toFixed(0)}), ` +
        `heap ${heapMiB.toFixed(0)} of ${heapTotalMiB.toFixed(0)} MiB, external ${externalMiB.toFixed(0)} MiB, ` +
        `scrapes ${scrapeSeconds.map((t) => t.toFixed(2)).join(' and ')} s, writes ${JSON.stringify(steadyWrites)}`,
    );

    // Spec changes, one at a time: time from the patch's answer to the new card in the ConfigMap.
    const core = kc.makeApiClient(CoreV1Api);
    const custom = kc.makeApiClient(CustomObjectsApi);
    const latencies: number[] = [];
    for (let k = 0; k < SPEC_CHANGES; k++) {
      const i = Math.floor((k * n) / SPEC_CHANGES);
      const name = `card-${String(i).padStart(5, '0')}`;
      const version = `2.0.${k}`;
      await custom.patchNamespacedCustomObject(
        { ...RESOURCE, namespace, name, body: { spec: { card: { version } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      const t = performance.now();
      for (;;) {
        const cm = await core.readNamespacedConfigMap({ namespace, name: `${name}-agent-card` });
        if (cm.data?.['agent-card.json']?.includes(`"version":"${version}"`)) break;
        if (performance.now() - t > 60_000) throw new Error(`spec change of ${name} not published in 60 s`);
        await sleep(20);
      }
      latencies.push((performance.now() - t) / 1000);
      await sleep(1_000);
    }
    const sorted = [...latencies].sort((a, b) => a - b);
    const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;
    return {
      cards: n,
      interfaces: n * 3,
      warmupSeconds,
      measuredSeconds,
      cpuCores: (usage.cpuSeconds - cpu0) / measuredSeconds,
      peakMiB,
      peakWhen: `${peakAt.seconds.toFixed(0)} s after the start, ${peakAt.phase}`,
      rssMiB: usage.rssMiB,
      rssFileMiB: usage.rssFileMiB,
      heapMiB,
      heapTotalMiB,
      externalMiB,
      scrapeSeconds,
      probesPerSecond: (metric('agentcard_probes_total') - probes0) / measuredSeconds,
      steadyWrites,
      specChange: { n: sorted.length, p50: q(0.5), p99: q(0.99), max: sorted.at(-1)! },
    };
  } finally {
    clearTimeout(guard);
    clearInterval(peakWatch);
    await watcher.stop();
    await stopOperator(op);
  }
}

const NOTES = `What the operator does to stay close to the floor (see docs/design.md, "API client"):
it makes its calls as plain JSON over undici with client-node's KubeConfig for authentication,
and its bundle leaves client-node's generated API classes out (24 MB of JavaScript). Before
that change, on the same machine, a run took about 6.8 s of operator CPU, peaked at about 180 MiB
and was 1.4x to 1.6x the floor; loading the generated classes alone added about 33 MiB of RSS. The
operator sets V8's \`--optimize-for-size\` for itself: single runs without it used about 20% less CPU
and peaked about 30 MiB higher; and, once every AgentCard has been reconciled (after the time
measured here), \`--heap-growing-percent=25\`, so that the old generation is not collected each
time it grows by a tenth (docs/scaling.md, "How often the garbage collector runs").
It runs bundled (build/bundle.ts), as does the floor script, so Node's TypeScript stripper is never
loaded. Both time measurements include process start (module loading, about
0.3 s for the operator) and the list of the AgentCards. Single runs on this shared machine vary by
20% or more, so the medians and every run are shown.`;

async function deleteNamespaces(kc: KubeConfig, names: string[]): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  for (const name of names) await core.deleteNamespace({ name }).catch(() => {});
  const deadline = Date.now() + 5 * 60_000;
  for (const name of names) {
    while (Date.now() < deadline) {
      const gone = await core.readNamespace({ name }).then(
        () => false,
        (err: unknown) => (err as { code?: number }).code === 404,
      );
      if (gone) break;
      await sleep(1_000);
    }
  }
}

async function main(): Promise<void> {
  const { started } = await up(log);
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigFile);
  const namespaces: string[] = [];
  const children: ChildProcess[] = [];
  try {
    await buildProduction();
    if (values.probes) peers = await startPeers(children);
    // Every CRD of crds/ (the catalog kinds too, so that every controller has its kinds to watch);
    // loadAllYaml gives client-node's typed model, which keeps the CRD's CEL rules and enums.
    const crdNames: string[] = [];
    for (const file of readdirSync(join(root, 'crds')).filter((f) => f.endsWith('.yaml'))) {
      for (const crd of loadAllYaml(readFileSync(join(root, 'crds', file), 'utf8')) as KubernetesObject[]) {
        await KubernetesObjectApi.makeApiClient(kc).patch(
          crd,
          undefined,
          undefined,
          'agentcard-tests',
          true,
          PatchStrategy.ServerSideApply,
        );
        crdNames.push(crd.metadata!.name!);
      }
    }
    for (const name of crdNames) {
      for (;;) {
        const got = await kc.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name });
        if (got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
        await sleep(200);
      }
    }
    if (values.before) {
      const compared: ComparisonRun[][] = [];
      for (const n of SIZES) {
        const runs: ComparisonRun[] = [];
        for (let run = 1; run <= RUNS; run++) {
          runs.push(await comparisonRun(kc, n, run, namespaces));
          await deleteNamespaces(kc, namespaces.splice(0));
        }
        compared.push(runs);
      }
      reportComparison(compared);
      log('results written to docs/BENCHMARKS.md');
      return;
    }
    if (values['probes-only']) {
      const n = SIZES.at(-1)!;
      const namespace = `bench-scale-${randomBytes(3).toString('hex')}`;
      namespaces.push(namespace);
      log(
        `probes only, ${n} cards: creating ${n} AgentCards in ${namespace}, publishing them with probes off`,
      );
      await prepareNamespace(kc, namespace, n);
      const published = await runOperator(kc, namespace, n);
      log(`probes only: published in ${published.seconds.toFixed(1)} s; probes on`);
      reportProbes(await probePhase(kc, namespace, n));
      log('results written to docs/BENCHMARKS.md');
      return;
    }
    const bySize: RunResult[][] = [];
    let probes: ProbePhase | undefined;
    for (const [s, n] of SIZES.entries()) {
      const runs: RunResult[] = [];
      for (let run = 1; run <= RUNS; run++) {
        runs.push(await oneRun(kc, n, run, namespaces));
        const last = s === SIZES.length - 1 && run === RUNS;
        if (last && values.probes) probes = await probePhase(kc, runs.at(-1)!.namespace, n);
        // Independent runs: the next one starts on an API server without this run's objects.
        await deleteNamespaces(kc, namespaces.splice(0));
      }
      bySize.push(runs);
    }
    report(bySize, probes);
    if (probes) reportProbes(probes);
    log('results written to docs/BENCHMARKS.md and docs/scale.svg');
  } finally {
    children.forEach((c) => c.connected && c.disconnect());
    await deleteNamespaces(kc, namespaces);
    if (started) await down(log);
    rmSync(work, { recursive: true, force: true });
  }
}

function report(bySize: RunResult[][], probes: ProbePhase | undefined): void {
  const verdict = (ok: boolean) => (ok ? 'met' : '**not met**');
  const rows = bySize.map((runs) => {
    const opMedian = median(runs.map((r) => r.op.seconds));
    const floorMedian = median(runs.map((r) => r.floorSeconds));
    const writes = (k: string) => median(runs.map((r) => r.perCard[k]!));
    return {
      cards: runs[0]!.cards,
      opMedian,
      floorMedian,
      ratio: opMedian / floorMedian,
      peak: Math.max(...runs.map((r) => r.op.peakMiB)),
      cpu: median(runs.map((r) => r.op.cpuSeconds)),
      objectWrites: writes('configmaps') + writes('status'),
      cmWrites: writes('configmaps'),
      statusWrites: writes('status'),
      events: writes('events'),
      runs,
    };
  });
  const largest = rows.at(-1)!;
  writeFileSync(
    join(root, 'docs', 'scale.svg'),
    lineChartsSvg(
      rows.map((r) => r.cards),
      [
        {
          title: 'time to all Ready (s)',
          series: { operator: rows.map((r) => r.opMedian), floor: rows.map((r) => r.floorMedian) },
        },
        { title: 'operator peak RSS (MiB)', series: { operator: rows.map((r) => r.peak) } },
        { title: 'operator CPU to all Ready (s)', series: { operator: rows.map((r) => r.cpu) } },
      ],
      'AgentCards',
    ),
  );
  const runPair = (x: RunResult) =>
    `${x.op.seconds.toFixed(1)} / ${x.floorSeconds.toFixed(1)} s (${(x.op.seconds / x.floorSeconds).toFixed(2)}x)`;
  // Used only with more than one size.
  const growth = (get: (r: (typeof rows)[number]) => number) => {
    const first = rows[0]!;
    return (get(largest) / get(first) / (largest.cards / first.cards)).toFixed(2);
  };
  const goalRows: (string | number)[][] = [
    [
      `time until all Ready vs the floor, ${largest.cards} cards (${largest.opMedian.toFixed(1)} s / ${largest.floorMedian.toFixed(1)} s)`,
      `${largest.ratio.toFixed(2)}x`,
      `<= 1.2x: ${verdict(largest.ratio <= 1.2)}`,
    ],
    [
      'API writes per new card (ConfigMap + status)',
      `${largest.objectWrites.toFixed(2)} (${largest.cmWrites.toFixed(2)} + ${largest.statusWrites.toFixed(2)})`,
      `<= 2: ${verdict(largest.objectWrites <= 2)}`,
    ],
  ];
  if (probes) {
    const steady = probes.steadyWrites.configmaps! + probes.steadyWrites.status!;
    goalRows.push(
      [
        `operator peak RSS with probes on (${probes.interfaces} interfaces at ${PROBE_INTERVAL_S} s)`,
        `${probes.peakMiB.toFixed(0)} MiB`,
        `<= 256 MiB: ${verdict(probes.peakMiB <= 256)}`,
      ],
      [
        `operator CPU with probes on (steady window, ${probes.probesPerSecond.toFixed(0)} probes/s)`,
        `${probes.cpuCores.toFixed(3)} core`,
        `<= 0.3 core: ${verdict(probes.cpuCores <= 0.3)}`,
      ],
      [
        `API writes in steady state (${probes.measuredSeconds.toFixed(0)} s with probes on)`,
        `${steady} (ConfigMaps ${probes.steadyWrites.configmaps}, status ${probes.steadyWrites.status}, Events ${probes.steadyWrites.events})`,
        `0: ${verdict(steady === 0)}`,
      ],
      [
        `spec change to new card published, while ${probes.cards} cards are steady (${probes.specChange.n} changes)`,
        `p50 ${probes.specChange.p50.toFixed(2)} s, p99 ${probes.specChange.p99.toFixed(2)} s (max ${probes.specChange.max.toFixed(2)} s)`,
        `p99 <= 2 s: ${verdict(probes.specChange.p99 <= 2)}`,
      ],
    );
  }
  writeSection(
    'controller-scale',
    'Controller scale',
    [
      `\`node bench/scale.bench.ts --cards ${SIZES.join(',')} --concurrency ${CONCURRENCY} --runs ${RUNS} ` +
        (probes ? `--steady-seconds ${STEADY_S} --spec-changes ${SPEC_CHANGES}\`. ` : '--no-probes`. ') +
        'The local control plane (etcd, ' +
        'kube-apiserver, kube-controller-manager) runs on the same cores.',
      '',
      'Each run: the AgentCards (3 interfaces each: JSON-RPC, HTTP+JSON, gRPC; each card signed with one ES256 ' +
        'key from a labelled Secret) exist before a real `agentcard operator` process starts (`--no-probes`, no ' +
        'leader election); time runs from its start until a watch has seen every AgentCard Ready. The floor is a ' +
        "bare script (bench/scale-floor.ts, its own process, the operator's REST client) making the same writes for " +
        `as many other AgentCards: it lists them, then per card a ConfigMap apply then a status apply (the data and ` +
        `the status the operator wrote for one of its cards), ${CONCURRENCY} ` +
        'cards in parallel, and the Published Event sent in the background with 2 in flight; timed the same way, ' +
        'from its start. API writes are counted by the API server (`apiserver_request_total`).' +
        (probes
          ? ` At ${probes.cards} cards the operator then runs again on the published cards with probes on: every ` +
            `interface points at real @a2a-js/sdk peers (on ${PEER_HOSTS.length} loopback addresses in ` +
            `${PEER_PROCESSES} processes), probed every ${PROBE_INTERVAL_S} s; after ${probes.warmupSeconds.toFixed(0)} s of first ` +
            `rounds, a steady window of ${probes.measuredSeconds.toFixed(0)} s is measured, then ${probes.specChange.n} ` +
            'spec changes one at a time (time from the patch to the new card in the ConfigMap, polled every 20 ms).'
          : ''),
      '',
      table(['measure', 'result', 'goal'], goalRows),
      '',
      '![time, memory and CPU by number of AgentCards](scale.svg)',
      '',
      table(
        [
          'AgentCards',
          'operator: all Ready',
          'floor',
          'ratio',
          'writes per card',
          'Events per card',
          'operator CPU',
          'peak RSS',
        ],
        rows.map((r) => [
          r.cards,
          `${r.opMedian.toFixed(1)} s`,
          `${r.floorMedian.toFixed(1)} s`,
          `${r.ratio.toFixed(2)}x`,
          r.objectWrites.toFixed(2),
          r.events.toFixed(2),
          `${r.cpu.toFixed(1)} s`,
          `${r.peak.toFixed(0)} MiB`,
        ]),
      ),
      '',
      [
        rows.length > 1
          ? `Growth from ${rows[0]!.cards} to ${largest.cards} cards, as a multiple of linear growth (1.00 = linear): ` +
            `time to all Ready ${growth((r) => r.opMedian)}, operator CPU ${growth((r) => r.cpu)}, ` +
            `peak RSS ${growth((r) => r.peak)} (RSS has a fixed base of Node.js and the modules).`
          : '',
        RUNS > 1
          ? `Every run, operator / floor (the operator first, then the floor, in each run): ${rows
              .map((r) => `${r.cards} cards: ${r.runs.map(runPair).join(', ')}`)
              .join('; ')}.`
          : '',
        probes
          ? `With probes on, heap in use at the end of the steady window: ${probes.heapMiB.toFixed(0)} MiB, RSS ${probes.rssMiB.toFixed(0)} MiB.`
          : '',
      ]
        .filter(Boolean)
        .join(' '),
      '',
      NOTES,
    ].join('\n'),
  );
}

/** The `## Controller scale, probes on` section: the probes part's goals at the largest size. */
function reportProbes(probes: ProbePhase): void {
  const verdict = (ok: boolean) => (ok ? 'met' : '**not met**');
  const steady = probes.steadyWrites.configmaps! + probes.steadyWrites.status!;
  const msPerProbe = (probes.cpuCores / probes.probesPerSecond) * 1000;
  writeSection(
    'controller-scale-probes',
    'Controller scale, probes on',
    [
      `\`nice -n 5 node bench/scale.bench.ts --probes-only --cards ${probes.cards} --steady-seconds ${STEADY_S} ` +
        `--spec-changes ${SPEC_CHANGES}\` (or the last size of a full run). ${probes.cards} AgentCards (3 interfaces ` +
        'each: JSON-RPC, HTTP+JSON, gRPC) are published by an operator with probes off, then a real `agentcard ' +
        'operator` process (no leader election, no memory limit) starts on them with probes on: every interface ' +
        `points at real @a2a-js/sdk peers (on ${PEER_HOSTS.length} loopback addresses in ${PEER_PROCESSES} processes), ` +
        `probed every ${PROBE_INTERVAL_S} s. After ${probes.warmupSeconds.toFixed(0)} s of first rounds (every ` +
        `interface has a verdict, the writes are quiet) a steady window of ${probes.measuredSeconds.toFixed(0)} s is ` +
        `measured, then ${probes.specChange.n} spec changes one at a time. Peak RSS is the process's VmHWM over its ` +
        'whole life (the list at start included); CPU is utime + stime over the steady window. The floor of one ' +
        "probe's CPU is the Go client of the `## Probes` section.",
      '',
      table(
        ['measure', 'result', 'goal'],
        [
          [
            `operator peak RSS with probes on (${probes.interfaces} interfaces at ${PROBE_INTERVAL_S} s)`,
            `${probes.peakMiB.toFixed(0)} MiB (${probes.peakWhen})`,
            `<= 256 MiB: ${verdict(probes.peakMiB <= 256)}`,
          ],
          [
            `operator CPU with probes on (steady window, ${probes.probesPerSecond.toFixed(0)} probes/s)`,
            `${probes.cpuCores.toFixed(3)} core (${msPerProbe.toFixed(2)} ms per probe)`,
            `<= 0.3 core: ${verdict(probes.cpuCores <= 0.3)}`,
          ],
          [
            `API writes in steady state (${probes.measuredSeconds.toFixed(0)} s with probes on)`,
            `${steady} (ConfigMaps ${probes.steadyWrites.configmaps}, status ${probes.steadyWrites.status}, Events ${probes.steadyWrites.events})`,
            `0: ${verdict(steady === 0)}`,
          ],
          [
            `spec change to new card published, while ${probes.cards} cards are steady (${probes.specChange.n} changes)`,
            `p50 ${probes.specChange.p50.toFixed(2)} s, p99 ${probes.specChange.p99.toFixed(2)} s`,
            `p99 <= 2 s: ${verdict(probes.specChange.p99 <= 2)}`,
          ],
        ],
      ),
      '',
      `At the end of the steady window: RSS ${probes.rssMiB.toFixed(0)} MiB, of which ` +
        `${probes.rssFileMiB.toFixed(0)} MiB are pages of mapped files (the Node.js executable and its libraries); ` +
        `V8's heap ${probes.heapTotalMiB.toFixed(0)} MiB committed, ${probes.heapMiB.toFixed(0)} MiB in use; ` +
        `external memory (Buffers) ${probes.externalMiB.toFixed(0)} MiB. ` +
        `The scrapes of \`/metrics\` that opened and closed the window took ` +
        `${probes.scrapeSeconds.map((t) => t.toFixed(2)).join(' and ')} s from the request to the last byte.`,
    ].join('\n'),
  );
}

if (values.peer) {
  // Child: serve one set of peers on each of the given loopback addresses until the parent goes.
  const { startA2APeers } = await import('../test/support/a2a-peers.ts');
  const sets = await Promise.all(values.peer.split(',').map((listen) => startA2APeers({ listen })));
  process.send!(sets.map((p) => ({ jsonrpc: p.jsonrpc, rest: p.rest, grpc: p.grpc })) satisfies PeerUrls[]);
  process.on('disconnect', () => process.exit(0));
} else {
  await main();
}
