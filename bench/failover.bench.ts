/**
 * Failover benchmark: how long after the leader is killed (SIGKILL) the new leader makes its first
 * write, at N AgentCards, and what a standby costs in memory; optionally for two builds of the
 * operator side by side (before/after), on the local control plane (started if none runs).
 *
 * Per size, N AgentCards are created once in one namespace. Then, for each build in turn, two
 * `agentcard operator` processes (the production bundle of that build, as the image runs it;
 * leader election with the operator's default lease 15 s, renew deadline 10 s, retry 2 s, or
 * `--lease-duration`/`--renew-deadline`/`--retry-period` in seconds; no probes, no catalogs) watch
 * that namespace. Once the leader has reconciled every card (it logged a write for each of the N
 * cards, or its reconcile count reached N when they were published already) and
 * the standby's informers have synced (a build with warm standbys) or right away (one without),
 * both settle for `--settle` seconds, their memory is read, and then, `--kills` times:
 * - the leader is killed with SIGKILL and, at the same moment, two cards' specs are changed (the
 *   first and the last in the API server's list order);
 * - the new leader's log (JSON lines in a file, the same clock as the benchmark) gives, from the
 *   kill: when it took the Lease ("became leader"), its **first write** (its first "reconciled"
 *   line: the operator logs one per reconcile that wrote, once the ConfigMap and status writes
 *   returned) and each changed card reconciled for its new generation with `Ready=True`; then its
 *   reconcile count, scraped every `--scrape-every` seconds (5: a scrape is the whole /metrics
 *   page, about 1 KiB per published card, and costs the operator CPU), going up by N (every card
 *   re-planned);
 * - a new standby replaces the killed process and the next kill hits the new leader.
 * Builds cannot take turns kill by kill (each needs its own pair of processes); they run
 * one after the other on the same cards, so the machine's load is compared over minutes, not
 * seconds: repeat runs and read ratios.
 *
 * Operators write their logs to files (`--stdio file`, the default), never to a pipe: on Linux a
 * child's stderr pipe is asynchronous, and a reader slower than the writer, or none, leaves every
 * log line queued in the child's memory (`--stdio pipe`, which reads nothing, reproduces it;
 * docs/scaling.md, "Failover").
 *
 * Run: `node bench/failover.bench.ts [--cards 1000,10000] [--kills 3] [--before <checkout>]
 * [--namespace NS] [--logs DIR] [--create-concurrency 32] [--scrape-every 5] [--write]` (Node.js
 * 24): `--before`
 * names a checkout of an earlier commit (with its node_modules) whose bundle runs as "before";
 * `--namespace` names the namespace of the cards (one size only): created with its cards if
 * missing and kept, reused as it is if present; `--logs` keeps the operators' logs in DIR; cards
 * are created with 32 requests in flight by default; `--write` writes docs/BENCHMARKS.md's section.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  loadAllYaml,
  setHeaderOptions,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { CRD_FILE } from '../operator/card/crd.ts';
import { GROUP, PLURAL, VERSION } from '../operator/api/names.ts';
import { down, up } from '../test/controlplane/control.ts';
import { kubeconfigFile } from '../test/controlplane/paths.ts';
import { minimalCard } from '../test/support/cards.ts';
import { freePort } from '../test/support/ports.ts';
import { table, writeSection } from './report.ts';
import { median } from './stats.ts';

const here = resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    cards: { type: 'string', default: '1000,10000' },
    kills: { type: 'string', default: '3' },
    settle: { type: 'string', default: '10' },
    before: { type: 'string' },
    stdio: { type: 'string', default: 'file' },
    write: { type: 'boolean', default: false },
    // Keep the operators' logs in this directory (default: a temporary one, removed at the end).
    logs: { type: 'string' },
    // AgentCards created at the same time when setting up (one create request each).
    'create-concurrency': { type: 'string', default: '32' },
    // An existing namespace of published AgentCards card-0..card-(N-1), from an earlier run.
    namespace: { type: 'string' },
    // The operator's defaults (operations.md): the goal is the first write within lease + 2 s.
    'lease-duration': { type: 'string', default: '15' },
    'renew-deadline': { type: 'string', default: '10' },
    'retry-period': { type: 'string', default: '2' },
    // Seconds between two reads of an operator's reconcile count (its whole /metrics page).
    'scrape-every': { type: 'string', default: '5' },
  },
});
const sizes = values.cards!.split(',').map(Number);
const kills = Number(values.kills);
const settleMs = Number(values.settle) * 1000;
const scrapeEveryMs = Number(values['scrape-every']) * 1000;
const stdioMode = values.stdio as 'file' | 'pipe';
if (stdioMode !== 'file' && stdioMode !== 'pipe') throw new Error('--stdio is file or pipe');
const lease = {
  duration: Number(values['lease-duration']),
  renew: Number(values['renew-deadline']),
  retry: Number(values['retry-period']),
};

const log = (line: string) =>
  process.stderr.write(`[failover ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const work = mkdtempSync(join(tmpdir(), 'failover-bench-'));
const logDir = values.logs ? resolve(values.logs) : work;
mkdirSync(logDir, { recursive: true });

/** Every operator process started, so that an interrupted run does not leave them running. */
const children = new Set<ChildProcess>();
for (const sig of ['SIGINT', 'SIGTERM'] as const)
  process.once(sig, () => {
    for (const child of children) child.kill('SIGKILL');
    process.exit(130);
  });

const kc = new KubeConfig();
let core: CoreV1Api;
let custom: CustomObjectsApi;
let coordination: CoordinationV1Api;

interface Build {
  label: string;
  root: string;
  /** The staged production layout (package.json, bin/, dist/). */
  app: string;
  /** Standbys run their informers (operator/runtime exists in that checkout). */
  warm: boolean;
}

interface Operator {
  name: string;
  child: ChildProcess;
  logFile: string;
  metricsPort: number;
  /** Highest RSS seen by the sampler, KiB. */
  peakRssKiB: number;
  /** How far its log has been read, and the cards it logged a write for ("reconciled"). */
  tail: { offset: number; rest: string; wrote: Set<string> };
  /** Its reconcile count as last scraped, and when (reconcilesEvery). */
  lastCount: { at: number; value: number };
}

interface Memory {
  rssMiB: number;
  rssAnonMiB: number;
  heapUsedMiB: number;
  externalMiB: number;
}

interface KillResult {
  size: number;
  build: string;
  kill: number;
  leaseMs: number | null;
  firstWriteMs: number | null;
  firstWriteWhat: string;
  /** The changed card first in list order reconciled, Ready=True for its new generation. */
  readyFirstMs: number | null;
  /** The changed card last in list order. */
  readyLastMs: number | null;
  replannedMs: number | null;
  leader: Memory;
  standby: Memory;
  /** The new leader once it re-planned every card. */
  newLeaderRssMiB: number;
  /** The machine's 1-minute load average at the kill and when the new leader was done. */
  load: [number, number];
}

const loadAverage = () => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);

const card = (version: string) => ({ ...minimalCard(), version });

async function stage(label: string, root: string): Promise<Build> {
  const { stagePackage } = (await import(pathToFileURL(join(root, 'build', 'bundle.ts')).href)) as {
    stagePackage: (dir: string) => Promise<string>;
  };
  const app = await stagePackage(join(work, label));
  return { label, root, app, warm: existsSync(join(root, 'operator', 'runtime', 'manager.ts')) };
}

function startOperator(build: Build, ns: string, name: string, metricsPort: number): Operator {
  const logFile = join(logDir, `${ns}-${build.label}-${name}.log`);
  const fd = openSync(logFile, 'w');
  const child = spawn(
    process.execPath,
    [
      join(build.app, 'bin', 'agentcard.js'),
      'operator',
      ...['--kubeconfig', kubeconfigFile, '--namespace', ns, '--metrics-port', String(metricsPort)],
      ...['--bind-address', '127.0.0.1', '--webhook-port', '0', '--no-probes', '--no-catalogs'],
      ...['--leader-elect', '--leader-election-namespace', ns, '--leader-election-id', 'failover'],
      ...['--lease-duration', `${lease.duration}s`, '--renew-deadline', `${lease.renew}s`],
      ...['--retry-period', `${lease.retry}s`],
    ],
    {
      cwd: build.app,
      env: { ...process.env, POD_NAME: name, KUBECONFIG: '' },
      // The pipe mode reads nothing on purpose: it reproduces an unread (or slow) reader.
      stdio: stdioMode === 'file' ? ['ignore', fd, fd] : ['ignore', 'pipe', 'pipe'],
    },
  );
  closeSync(fd);
  children.add(child);
  const op: Operator = {
    name,
    child,
    logFile,
    metricsPort,
    peakRssKiB: 0,
    tail: { offset: 0, rest: '', wrote: new Set() },
    lastCount: { at: 0, value: 0 },
  };
  child.once('exit', (code, signal) => {
    if (signal === 'SIGKILL') return;
    log(`operator ${name} exited (${code ?? signal}); its last lines:`);
    for (const line of logLines(op).slice(-5)) log(`  ${line.slice(0, 400)}`);
  });
  return op;
}

function logLines(op: Operator): string[] {
  try {
    return readFileSync(op.logFile, 'utf8').split('\n');
  } catch {
    return [];
  }
}

/** The Lease's holder identity is the Pod name, an underscore and a random suffix (manager/manager.ts). */
const holds = (op: Operator, identity: string | undefined) => !!identity?.startsWith(`${op.name}_`);
const alive = (op: Operator) => op.child.exitCode === null && op.child.signalCode === null;

function procStatus(pid: number): { rss: number; anon: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(s)?.[1] ?? 0);
  return { rss: kib('VmRSS'), anon: kib('RssAnon') };
}

async function scrape(op: Operator): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${op.metricsPort}/metrics`, {
    signal: AbortSignal.timeout(10_000),
  });
  return res.text();
}

function metricSum(text: string, name: string, labels = ''): number | undefined {
  let sum: number | undefined;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (!(rest.startsWith(' ') || rest.startsWith('{'))) continue;
    if (labels && !rest.includes(labels)) continue;
    sum = (sum ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/**
 * The cards an operator logged a write for so far ("reconciled" lines), reading only what its log
 * gained since the last call. This is how the benchmark follows a first round of publishing: the
 * reconcile count is on the /metrics page, whose size grows with the cards published (about 1 KiB
 * of per-card series each: 10 MiB at 10,000 cards), and building it costs the operator CPU on the
 * cores it publishes with (docs/scaling.md, "Publishing from a fresh leader").
 */
function cardsWritten(op: Operator): number {
  let fd: number;
  try {
    fd = openSync(op.logFile, 'r');
  } catch {
    return op.tail.wrote.size;
  }
  try {
    const size = fstatSync(fd).size;
    if (size > op.tail.offset) {
      const buf = Buffer.alloc(size - op.tail.offset);
      readSync(fd, buf, 0, buf.length, op.tail.offset);
      op.tail.offset = size;
      const lines = (op.tail.rest + buf.toString('utf8')).split('\n');
      op.tail.rest = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.includes('"msg":"reconciled"')) continue;
        const name = /"name":"([^"]+)"/.exec(line)?.[1];
        if (name) op.tail.wrote.add(name);
      }
    }
  } finally {
    closeSync(fd);
  }
  return op.tail.wrote.size;
}

/**
 * The reconcile count, scraped at most every `--scrape-every` seconds (the last value otherwise):
 * a scrape is the operator's whole /metrics page (see cardsWritten), so polling it every half
 * second took most of a leader's CPU at 10,000 cards.
 */
async function reconcilesEvery(op: Operator): Promise<number> {
  if (Date.now() - op.lastCount.at >= scrapeEveryMs)
    op.lastCount = { at: Date.now(), value: await reconciles(op) };
  return op.lastCount.value;
}

/** Reconciles of AgentCards so far (the runtime's metric, else the older one both builds have). */
async function reconciles(op: Operator): Promise<number> {
  const text = await scrape(op);
  return (
    metricSum(text, 'controller_runtime_reconcile_time_seconds_count', 'controller="agentcard"') ??
    metricSum(text, 'agentcard_reconcile_duration_seconds_count') ??
    0
  );
}

async function memory(op: Operator): Promise<Memory> {
  const text = await scrape(op);
  const { rss, anon } = procStatus(op.child.pid!);
  const mib = (bytes: number | undefined) => Math.round(((bytes ?? 0) / 2 ** 20) * 10) / 10;
  return {
    rssMiB: Math.round(rss / 1024),
    rssAnonMiB: Math.round(anon / 1024),
    heapUsedMiB: mib(metricSum(text, 'nodejs_heap_size_used_bytes')),
    externalMiB: mib(metricSum(text, 'nodejs_external_memory_bytes')),
  };
}

async function holder(ns: string): Promise<string | undefined> {
  const lease = await coordination
    .readNamespacedLease({ namespace: ns, name: 'failover' })
    .catch(() => undefined);
  return lease?.spec?.holderIdentity ?? undefined;
}

async function createCards(ns: string, n: number): Promise<void> {
  const started = Date.now();
  // A pool of requests in flight (not batches waiting for their slowest): each worker creates the
  // next card as soon as its previous one is answered.
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < n; i = next++)
      await custom.createNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        plural: PLURAL,
        namespace: ns,
        body: {
          apiVersion: `${GROUP}/${VERSION}`,
          kind: 'AgentCard',
          metadata: { name: `card-${i}` },
          spec: { card: card('1.0.0') },
        },
      });
  };
  const progress = setInterval(() => log(`created ${Math.min(next, n)} of ${n}`), 30_000);
  try {
    await Promise.all(Array.from({ length: Number(values['create-concurrency']) }, worker));
  } finally {
    clearInterval(progress);
  }
  const s = (Date.now() - started) / 1000;
  log(`created ${n} AgentCards in ${ns} in ${Math.round(s)} s (${Math.round(n / s)}/s)`);
}

/** Thrown by a condition to stop waiting at once. */
class Abandon extends Error {}

/** Waits for `cond`, polling; throws after `ms`, or at once when `cond` throws an Abandon. */
async function until(what: string, ms: number, cond: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const met = await Promise.resolve()
      .then(cond)
      .catch((err: unknown) => {
        if (err instanceof Abandon) throw err;
        return false;
      });
    if (met) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(500);
  }
}

const syncedInformers = (op: Operator) =>
  logLines(op).filter((l) => l.includes('"msg":"informer synced"')).length;

/** A line of an operator's JSON log, with its time in ms since the epoch. */
interface LogEvent {
  at: number;
  msg: string;
  name?: string;
  generation?: number;
  ready?: string;
  wrote?: string;
}

function logEvents(op: Operator): LogEvent[] {
  const out: LogEvent[] = [];
  for (const line of logLines(op)) {
    if (!line.startsWith('{')) continue;
    try {
      const e = JSON.parse(line) as Omit<LogEvent, 'at'> & { time: string };
      out.push({ ...e, at: Date.parse(e.time) });
    } catch {
      /* a line being written */
    }
  }
  return out;
}

/**
 * What the new leader did after the kill, from its own log (same clock as the benchmark): when it
 * took the Lease ("became leader"), its first write (the first "reconciled" line: the operator
 * writes one per reconcile that wrote something, once the write returned), and each changed card
 * reconciled for its new generation with Ready=True.
 */
function observe(op: Operator, changed: Map<string, number>) {
  const events = logEvents(op);
  const led = events.find((e) => e.msg === 'became leader');
  const writes = events.filter((e) => e.msg === 'reconciled' && e.wrote && (!led || e.at >= led.at));
  const readyAt = new Map<string, number>();
  for (const [name, generation] of changed) {
    const e = writes.find((w) => w.name === name && w.generation === generation && w.ready === 'True');
    if (e) readyAt.set(name, e.at);
  }
  return {
    leaseAt: led?.at,
    firstWriteAt: led ? writes[0]?.at : undefined,
    firstWriteWhat: writes[0] ? `${writes[0].wrote} of ${writes[0].name}` : '',
    readyAt,
  };
}

/** One build at one size: a pair of operators, `kills` failovers. */
/** Each operator process over its whole life: peak RSS and how much it logged. */
interface ProcessFigures {
  size: number;
  build: string;
  peakRssMiB: number;
  logKiB: number;
}
const processes: ProcessFigures[] = [];

async function runBuild(build: Build, ns: string, n: number, results: KillResult[]): Promise<void> {
  const ports = await Promise.all(Array.from({ length: kills + 2 }, () => freePort()));
  let seq = 0;
  const next = () => startOperator(build, ns, `${build.label}-${seq}`, ports[seq++]!);
  const ops: Operator[] = [next(), next()];
  const sampler = setInterval(() => {
    for (const op of ops)
      if (alive(op))
        try {
          op.peakRssKiB = Math.max(op.peakRssKiB, procStatus(op.child.pid!).rss);
        } catch {
          /* exited meanwhile */
        }
  }, 1_000);
  try {
    const started = Date.now();
    let leader: Operator | undefined;
    await until('a leader', 120_000, async () => {
      const h = await holder(ns);
      leader = ops.find((o) => holds(o, h) && alive(o));
      return leader !== undefined;
    });
    // Every card published (a first round writes each card once), or every card reconciled (cards
    // published by an earlier run, --namespace, are reconciled without a write).
    await until(`${n} reconciles by the leader`, Math.max(900_000, n * 200), async () => {
      if (!alive(leader!)) throw new Abandon(`${leader!.name} exited before reconciling ${n} cards`);
      return cardsWritten(leader!) >= n || (await reconcilesEvery(leader!)) >= n;
    });
    log(
      `${build.label}: ${leader!.name} leads and reconciled ${n} in ${Math.round((Date.now() - started) / 1000)} s`,
    );
    for (let k = 1; k <= kills; k++) {
      const standby = ops.find((o) => o !== leader && alive(o))!;
      if (build.warm)
        await until(
          'the standby caches',
          600_000,
          () => syncedInformers(standby) >= syncedInformers(leader!),
        );
      await sleep(settleMs);
      if (!alive(leader!) || !alive(standby)) throw new Error('an operator exited before the kill');
      if (!holds(leader!, await holder(ns)))
        throw new Error(`${leader!.name} lost the Lease before the kill`);
      const [leaderMem, standbyMem] = [await memory(leader!), await memory(standby)];
      const before = await reconciles(standby);
      standby.lastCount = { at: 0, value: before };
      const version = `9.${k}.${Date.now() % 100_000}`;
      // The first and the last card in the API server's list order (etcd key order: card-0,
      // card-1, card-10, ...): a new leader queues the cards it finds in that order.
      const names = ['card-0', `card-${n - 1}`];
      const changed = new Map<string, number>();
      for (const name of names) {
        const current = (await custom.getNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          plural: PLURAL,
          namespace: ns,
          name,
        })) as KubernetesObject;
        changed.set(name, (current.metadata?.generation ?? 0) + 1);
      }
      const loadAtKill = loadAverage();
      const killed = Date.now();
      leader!.child.kill('SIGKILL');
      log(`${build.label} kill ${k}: ${leader!.name} killed`);
      for (const name of names)
        await custom.patchNamespacedCustomObject(
          {
            group: GROUP,
            version: VERSION,
            plural: PLURAL,
            namespace: ns,
            name,
            body: { spec: { card: card(version) } },
          },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
      let replannedAt: number | undefined;
      let seen = observe(standby, changed);
      const deadline = killed + 900_000;
      while (Date.now() < deadline && !(seen.readyAt.size === names.length && replannedAt)) {
        // Read every --scrape-every seconds: the re-plan's end is known to that precision.
        if (!replannedAt && (await reconcilesEvery(standby).catch(() => 0)) - before >= n)
          replannedAt = Date.now();
        await sleep(500);
        seen = observe(standby, changed);
        // A new leader that lost its Lease (or failed) exits: what it did is in its log, and
        // there is nothing more to wait for.
        if (!alive(standby)) {
          log(`${build.label} kill ${k}: ${standby.name} exited before it was done`);
          break;
        }
      }
      const ms = (at?: number) => (at ? at - killed : null);
      const result: KillResult = {
        size: n,
        build: build.label,
        kill: k,
        leaseMs: ms(seen.leaseAt),
        firstWriteMs: ms(seen.firstWriteAt),
        firstWriteWhat: seen.firstWriteWhat,
        readyFirstMs: ms(seen.readyAt.get(names[0]!)),
        readyLastMs: ms(seen.readyAt.get(names[1]!)),
        replannedMs: ms(replannedAt),
        leader: leaderMem,
        standby: standbyMem,
        load: [loadAtKill, loadAverage()],
        newLeaderRssMiB: alive(standby) ? Math.round(procStatus(standby.child.pid!).rss / 1024) : 0,
      };
      results.push(result);
      process.stdout.write(`${JSON.stringify(result)}\n`);
      if (!alive(standby)) throw new Error(`${standby.name} exited after kill ${k}; no further kills`);
      leader = standby;
      if (k < kills) ops.push(next());
    }
  } finally {
    clearInterval(sampler);
    for (const op of ops) {
      if (alive(op)) op.child.kill('SIGKILL');
      const bytes = existsSync(op.logFile) ? statSync(op.logFile).size : 0;
      const figures = {
        size: n,
        build: build.label,
        peakRssMiB: Math.round(op.peakRssKiB / 1024),
        logKiB: Math.round(bytes / 1024),
      };
      processes.push(figures);
      log(`${op.name}: ${JSON.stringify(figures)}`);
    }
  }
}

const medianOf = (xs: (number | null)[]) => {
  const v = xs.filter((x): x is number => x !== null);
  return v.length ? median(v) : null;
};
const secs = (ms: number | null) => (ms === null ? 'none' : (ms / 1000).toFixed(1));
const spread = (xs: (number | null)[]) => `${secs(medianOf(xs))} (${xs.map(secs).join(', ')})`;

function report(results: KillResult[], builds: Build[]): string {
  const rows: (string | number)[][] = [];
  for (const n of sizes)
    for (const b of builds) {
      const rs = results.filter((r) => r.size === n && r.build === b.label);
      if (!rs.length) continue;
      rows.push([
        n.toLocaleString('en-US'),
        b.warm ? `${b.label} (warm standby)` : `${b.label} (cold standby)`,
        spread(rs.map((r) => r.leaseMs)),
        spread(rs.map((r) => r.firstWriteMs)),
        spread(rs.map((r) => r.readyFirstMs)),
        spread(rs.map((r) => r.readyLastMs)),
        spread(rs.map((r) => r.replannedMs)),
        medianOf(rs.map((r) => r.leader.rssMiB))!,
        medianOf(rs.map((r) => r.standby.rssMiB))!,
        `${medianOf(rs.map((r) => r.standby.heapUsedMiB))} / ${medianOf(rs.map((r) => r.leader.heapUsedMiB))}`,
      ]);
    }
  const peaks = sizes.flatMap((n) =>
    builds.flatMap((b) => {
      const ps = processes.filter((p) => p.size === n && p.build === b.label);
      if (!ps.length) return [];
      const rss = ps.map((p) => p.peakRssMiB);
      const logs = ps.map((p) => p.logKiB);
      return [
        `${n.toLocaleString('en-US')} ${b.label}: ${Math.min(...rss)} to ${Math.max(...rss)} MiB ` +
          `(log ${Math.min(...logs)} to ${Math.max(...logs)} KiB)`,
      ];
    }),
  );
  const timings = table(
    [
      'AgentCards',
      'build',
      'Lease taken, s: median (each kill)',
      'first write, s',
      'changed card first in list order Ready, s',
      'changed card last in list order Ready, s',
      'every card re-planned, s',
      'leader RSS, MiB',
      'standby RSS, MiB',
      'heap used standby / leader, MiB',
    ],
    rows,
  );
  const loads = results.map((r) => [...r.load]).flat();
  return [
    `\`node bench/failover.bench.ts --cards ${sizes.join(',')} --kills ${kills}${builds.length > 1 ? ' --before <checkout>' : ''}\`:`,
    `two operators (production bundle of each build; lease ${lease.duration} s, renew deadline ${lease.renew} s,`,
    `retry ${lease.retry} s; no probes, no catalogs) over N published AgentCards; the leader killed with SIGKILL`,
    "and, at that moment, two cards changed (the first and the last in the API server's list order).",
    'Times are from the kill, from the new leader\'s log (same clock): the Lease taken ("became leader");',
    'its first write (its first "reconciled" line, logged once a reconcile\'s writes have returned);',
    'each changed card reconciled for its new generation with `Ready=True`; its reconcile count up by N',
    `(every card re-planned; read every ${scrapeEveryMs / 1000} s). Memory: RSS (/proc) and V8 heap used (metrics) of both processes after`,
    `${settleMs / 1000} s of rest before the kill. Builds run one after the other on the same cards, not`,
    'interleaved: compare ratios from one run. Operators log to files (see docs/scaling.md, "Failover").',
    '',
    timings,
    '',
    `Peak RSS of every operator process over its life (sampled each second): ${peaks.join('; ')}.`,
    ...(loads.length
      ? [
          '',
          `Load average (1 min) at the kills and when each new leader was done: ${Math.min(...loads)} to ${Math.max(...loads)}.`,
        ]
      : []),
  ].join('\n');
}

async function main(): Promise<void> {
  const { started } = await up(log);
  kc.loadFromFile(kubeconfigFile);
  core = kc.makeApiClient(CoreV1Api);
  custom = kc.makeApiClient(CustomObjectsApi);
  coordination = kc.makeApiClient(CoordinationV1Api);
  const namespaces: string[] = [];
  const results: KillResult[] = [];
  const builds: Build[] = [];
  try {
    const [crd] = loadAllYaml(readFileSync(join(here, CRD_FILE), 'utf8')) as KubernetesObject[];
    await KubernetesObjectApi.makeApiClient(kc).patch(
      crd!,
      undefined,
      undefined,
      'agentcard-tests',
      true,
      PatchStrategy.ServerSideApply,
    );
    await sleep(2_000);
    if (values.before) builds.push(await stage('before', resolve(values.before)));
    builds.push(await stage('after', here));
    log(
      `builds: ${builds.map((b) => `${b.label} (${b.warm ? 'warm' : 'cold'} standby)`).join(', ')}; stdio ${stdioMode}`,
    );
    for (const n of sizes) {
      const reuse = values.namespace && sizes.length === 1 ? values.namespace : undefined;
      const ns = reuse ?? `failover-${randomBytes(3).toString('hex')}`;
      const exists = reuse
        ? await core.readNamespace({ name: reuse }).then(
            () => true,
            () => false,
          )
        : false;
      if (!exists) {
        // A named namespace is kept for the next run; a generated one is deleted at the end.
        if (!reuse) namespaces.push(ns);
        await core.createNamespace({ body: { metadata: { name: ns } } });
        await createCards(ns, n);
      }
      await coordination.deleteNamespacedLease({ namespace: ns, name: 'failover' }).catch(() => {});
      for (const b of builds) {
        try {
          await runBuild(b, ns, n, results);
        } catch (err) {
          log(`${b.label} at ${n}: ${(err as Error).message}`);
        }
        // The next build starts from an expired Lease, not the killed leader's.
        await coordination.deleteNamespacedLease({ namespace: ns, name: 'failover' }).catch(() => {});
      }
      if (!reuse) await core.deleteNamespace({ name: ns }).catch(() => {});
    }
    const body = report(results, builds);
    process.stdout.write(`\n${body}\n`);
    if (values.write) writeSection('failover', 'Failover', body);
  } finally {
    for (const ns of namespaces) await core.deleteNamespace({ name: ns }).catch(() => {});
    if (started) await down(log);
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
