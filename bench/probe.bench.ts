/**
 * Probe cost benchmark: 10,000 interfaces (2,500 AgentCards x 4 interfaces: JSONRPC 1.0,
 * HTTP+JSON 1.0, GRPC 1.0, JSONRPC 0.3) served by a few @a2a-js/sdk peer processes on
 * 127.0.0.1, probed by one ProbeScheduler, with the controller's status step
 * (nextInterfacesStatus) counting the API writes it would make.
 *
 * The interval is the real 60 s by default (about 2.5 minutes in all: 90 s of warm-up while the
 * first rounds spread, then one interval measured); PROBE_BENCH_INTERVAL_S scales it down for a
 * quicker run, and CPU is then extrapolated linearly back to 60 s (which underestimates: a
 * 20 s run gave 2/3 of the CPU the 60 s run measured). Only this process is measured; the peers
 * run in child processes. Writes the `## Probes` section of docs/BENCHMARKS.md.
 *
 * First, the floor of one probe's CPU, side by side: PROBE_BENCH_FLOOR_PROBES (default 4,000)
 * JSON-RPC probes of one peer, 16 in flight, by probeInterface in this process and by a Go
 * program on net/http doing the same exchange (bench/go-probe: fresh connection, POST, answer
 * parsed as JSON), each measuring its own process's CPU; two rounds each, taking turns. In the
 * same turns, pairs of a JSON-RPC and an HTTP+JSON probe of one origin, with a connection each
 * and on one round connection, for what sharing a round's connection saves.
 *
 *   node bench/probe.bench.ts            (env: PROBE_BENCH_INTERFACES, PROBE_BENCH_INTERVAL_S,
 *                                         PROBE_BENCH_PEERS, PROBE_BENCH_FLOOR_PROBES)
 */
import { execFile, fork, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import os from 'node:os';
import { replaceSection } from './report.ts';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { A2APeers } from '../test/support/a2a-peers.ts';
import { goProgram } from '../test/support/go-tools.ts';

type PeerUrls = Pick<A2APeers, 'jsonrpc' | 'rest' | 'grpc'>;
/** Probes in flight in the floor comparison. */
const FLOOR_IN_FLIGHT = 16;

if (process.argv.includes('--peer')) {
  // Child: serve one set of peers until the parent goes away.
  const { startA2APeers } = await import('../test/support/a2a-peers.ts');
  const peers = await startA2APeers();
  process.send!({ jsonrpc: peers.jsonrpc, rest: peers.rest, grpc: peers.grpc } satisfies PeerUrls);
  process.on('disconnect', () => process.exit(0));
} else {
  await main();
}

async function main(): Promise<void> {
  const { createAddressPolicy } = await import('../operator/probe/policy.ts');
  const { ProbeScheduler } = await import('../operator/probe/scheduler.ts');
  const { nextInterfacesStatus } = await import('../operator/probe/status.ts');
  type Status = ReturnType<typeof nextInterfacesStatus>;

  const TOTAL = Number(process.env.PROBE_BENCH_INTERFACES ?? 10_000);
  const INTERVAL_S = Number(process.env.PROBE_BENCH_INTERVAL_S ?? 60);
  const PEERS = Number(process.env.PROBE_BENCH_PEERS ?? 3);
  const HOSTS = 50; // distinct host names (all resolving to 127.0.0.1) for the per-host limit
  const REAL_INTERVAL_S = 60;
  const CARDS = Math.ceil(TOTAL / 4);
  const WARMUP_MS = INTERVAL_S * 1000 * 1.5; // the first rounds spread over [0.5, 1.5] x interval
  const MEASURE_MS = Math.max(INTERVAL_S * 1000, 30_000);
  const HARD_LIMIT_MS = WARMUP_MS + MEASURE_MS + 120_000;

  const children: ChildProcess[] = [];
  const killAll = () => children.forEach((c) => c.connected && c.disconnect());
  const guard = setTimeout(() => {
    process.stderr.write('probe bench: hard time limit reached\n');
    killAll();
    process.exit(1);
  }, HARD_LIMIT_MS);

  const self = fileURLToPath(import.meta.url);
  const peerUrls: PeerUrls[] = await Promise.all(
    Array.from(
      { length: PEERS },
      () =>
        new Promise<PeerUrls>((resolve, reject) => {
          const child = fork(self, ['--peer'], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
          children.push(child);
          child.once('message', (m) => resolve(m as PeerUrls));
          child.once('exit', (code) => reject(new Error(`peer exited with ${code}`)));
        }),
    ),
  );

  const floor = await probeFloor(peerUrls[0]!);

  const resolver = async () => [{ address: '127.0.0.1', family: 4 }];
  const withHost = (url: string, host: string) => url.replace('127.0.0.1', host);
  const statuses = new Map<string, Pick<Status, 'interfaces' | 'condition'>>();
  let measuring = false;
  let writes = 0;
  let rounds = 0;
  const latencies: number[] = [];
  const reasons = new Map<string, number>();

  const scheduler = new ProbeScheduler({
    policy: createAddressPolicy({ allowCidrs: ['127.0.0.0/8'] }),
    resolver,
    globalConcurrency: 64,
    perHostConcurrency: 4,
    onResults(key, results) {
      const prev = statuses.get(key);
      const out = nextInterfacesStatus({
        previous: prev?.interfaces,
        previousCondition: prev?.condition,
        results,
        now: new Date(),
        generation: 1,
      });
      if (out.writeNeeded) statuses.set(key, { interfaces: out.interfaces, condition: out.condition });
      if (!measuring) return;
      rounds++;
      if (out.writeNeeded) writes++;
      for (const r of results) {
        latencies.push(r.latencyMs);
        reasons.set(r.reason, (reasons.get(r.reason) ?? 0) + 1);
      }
    },
  });

  // A full GC before the heap readings, so they show live memory rather than garbage not yet collected.
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  gc();
  const rssBefore = process.memoryUsage().rss;
  const heapBefore = process.memoryUsage().heapUsed;
  for (let c = 0; c < CARDS; c++) {
    const p = peerUrls[c % PEERS]!;
    const host = `agent-${c % HOSTS}.bench`;
    scheduler.upsert(`bench/card-${c}`, {
      interfaces: [
        { url: withHost(p.jsonrpc, host), protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url: withHost(p.rest, host), protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
        { url: withHost(p.grpc, host), protocolBinding: 'GRPC', protocolVersion: '1.0' },
        { url: withHost(p.jsonrpc, host), protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      ].slice(0, Math.min(4, TOTAL - c * 4)),
      intervalMs: INTERVAL_S * 1000,
      timeoutMs: 5000,
    });
  }

  await sleep(WARMUP_MS);
  measuring = true;
  gc();
  const heapStart = process.memoryUsage().heapUsed;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let peakRss = 0;
  let peakHeap = 0;
  const sampler = setInterval(() => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
  }, 500);
  await sleep(MEASURE_MS);
  const cpu = process.cpuUsage(cpu0);
  const wallMs = performance.now() - t0;
  measuring = false;
  clearInterval(sampler);
  gc();
  const heapEnd = process.memoryUsage().heapUsed;
  const stats = scheduler.stats();
  await scheduler.stop();
  killAll();
  clearTimeout(guard);

  const cpuFraction = (cpu.user + cpu.system) / 1000 / wallMs;
  const scale = REAL_INTERVAL_S / INTERVAL_S;
  const probes = latencies.length;
  latencies.sort((a, b) => a - b);
  const pct = (q: number) => latencies[Math.min(probes - 1, Math.floor(q * probes))] ?? 0;
  const mib = (b: number) => (b / 1024 / 1024).toFixed(0);
  const reasonText = [...reasons].map(([r, n]) => `${r} ${n}`).join(', ');
  const cpuModel = os.cpus()[0]?.model.trim() ?? 'unknown CPU';

  const section = `## Probes

\`node bench/probe.bench.ts\`, ${new Date().toISOString().slice(0, 10)}, Node ${process.version}, ${os.cpus().length} cores (${cpuModel}), shared with other work.

Setup: ${TOTAL.toLocaleString('en')} interfaces in ${CARDS.toLocaleString('en')} AgentCards (JSONRPC 1.0, HTTP+JSON 1.0, GRPC 1.0, JSONRPC 0.3 each), served by ${PEERS} @a2a-js/sdk peer processes on 127.0.0.1 under ${HOSTS} host names (a resolver in the bench maps them to 127.0.0.1, so DNS costs nothing here); one ProbeScheduler (global concurrency 64, per host 4, timeout 5 s; a round's HTTP interfaces of one origin share the connection it opens, gRPC opens its own) plus the controller's status step (\`nextInterfacesStatus\`). ${scale === 1 ? 'Real 60 s interval;' : `The interval is scaled from 60 s to ${INTERVAL_S} s (${scale.toFixed(1)}x the real probe rate) to bound the run, CPU extrapolated back;`} measured over ${(MEASURE_MS / 1000).toFixed(0)} s after a ${(WARMUP_MS / 1000).toFixed(0)} s warm-up. Only the prober's process is measured; the peers run in child processes.

| measure | value |
|---|---|
| probes in the window | ${probes.toLocaleString('en')} (${(probes / (wallMs / 1000)).toFixed(0)}/s; ${reasonText}) |
${
  scale === 1
    ? `| **CPU at the 60 s interval** | **${cpuFraction.toFixed(3)} of a core** (goal < 0.3) |`
    : `| CPU at the ${INTERVAL_S} s interval | ${cpuFraction.toFixed(3)} of a core |
| **CPU at a 60 s interval (extrapolated: / ${scale.toFixed(1)})** | **${(cpuFraction / scale).toFixed(3)} of a core** (goal < 0.3) |`
}
| memory | RSS ${mib(rssBefore)} MiB before the scheduler (after the floor's rounds in this process), highest ${mib(peakRss)} MiB sampled in the window (heap ${mib(peakHeap)} MiB including garbage) |
| live heap after a full GC | ${mib(heapBefore)} MiB before the scheduler, ${mib(heapStart)} MiB at the start of the window, ${mib(heapEnd)} MiB at its end |
| probe latency (loopback) | p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms |
| status rounds in the window | ${rounds.toLocaleString('en')} |
| API writes in the window once stable | ${writes} (${((writes / wallMs) * 60_000).toFixed(1)}/min; verdict or reason changes only) |
| lastProbeTime refresh writes | none by default; with \`--probe-status-refresh 10m\`, 1 per AgentCard per 10 min = ${(CARDS / 10).toFixed(0)}/min for ${CARDS.toLocaleString('en')} cards |
| in flight at the end | ${stats.active} active, ${stats.waiting} waiting |

One probe's CPU against its floor (${floor.probes.toLocaleString('en')} JSON-RPC probes of one peer, ${FLOOR_IN_FLIGHT} in flight, a fresh connection each; each side measures its own process, two rounds each taking turns, the better round of each):

| prober | CPU per probe | vs the floor |
| --- | --- | --- |
| probeInterface (Node.js, undici) | ${floor.oursMs.toFixed(3)} ms | ${(floor.oursMs / floor.goMs).toFixed(2)}x |
| floor: Go net/http, same exchange (bench/go-probe) | ${floor.goMs.toFixed(3)} ms | 1.00x |

What a round's connection saves, measured the same way (${floor.probes.toLocaleString('en')} probes in pairs: a JSON-RPC and an HTTP+JSON probe of one origin, one after the other):

| pair of probes | CPU per probe | vs a connection each |
| --- | --- | --- |
| a connection each | ${floor.pairOwnMs.toFixed(3)} ms | 1.00x |
| one round connection (RoundConnection, as the scheduler asks them) | ${floor.pairSharedMs.toFixed(3)} ms | ${(floor.pairSharedMs / floor.pairOwnMs).toFixed(2)}x |
`;
  replaceSection('probe', section);
  process.stdout.write(section);
}

/**
 * CPU per JSON-RPC probe of `peer`: probeInterface in this process vs the Go floor
 * (bench/go-probe), the same number of probes with the same number in flight, taking turns.
 * Beside it, what a round's connection saves: a JSON-RPC and an HTTP+JSON probe of one origin,
 * a connection each, and the same pair on one RoundConnection (as the scheduler asks them).
 */
async function probeFloor(
  peer: PeerUrls,
): Promise<{ probes: number; oursMs: number; goMs: number; pairOwnMs: number; pairSharedMs: number }> {
  const { createAddressPolicy } = await import('../operator/probe/policy.ts');
  const { probeInterface } = await import('../operator/probe/probe.ts');
  const { RoundConnection } = await import('../operator/probe/http.ts');
  const probes = Number(process.env.PROBE_BENCH_FLOOR_PROBES ?? 4000);
  const policy = createAddressPolicy({ allowCidrs: ['127.0.0.0/8'] });
  const url = peer.jsonrpc;
  const target = { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' };
  const pair = [target, { url: peer.rest, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' }];
  /** CPU per probe of `probes / 2` pairs, 16 in flight, with a round connection per pair or not. */
  const pairs = async (shared: boolean) => {
    let next = 0;
    let failed = 0;
    const cpu0 = process.cpuUsage();
    await Promise.all(
      Array.from({ length: FLOOR_IN_FLIGHT }, async () => {
        while ((next += 2) <= probes) {
          const roundConnection = shared ? new RoundConnection() : undefined;
          for (const t of pair) {
            const r = await probeInterface(t, { timeoutMs: 5000, policy, roundConnection });
            if (!r.reachable) failed++;
          }
          roundConnection?.close();
        }
      }),
    );
    const cpu = process.cpuUsage(cpu0);
    if (failed) throw new Error(`probe floor: ${failed} of the pairs' probes failed`);
    return (cpu.user + cpu.system) / 1000 / probes;
  };
  const go = await goProgram({
    sourceDir: fileURLToPath(new URL('go-probe', import.meta.url)),
    sources: ['go.mod', 'main.go'],
    cacheName: 'go-probe',
    binName: 'go-probe',
  });
  const ours = async () => {
    let next = 0;
    let failed = 0;
    const cpu0 = process.cpuUsage();
    await Promise.all(
      Array.from({ length: FLOOR_IN_FLIGHT }, async () => {
        while (next++ < probes) {
          const r = await probeInterface(target, { timeoutMs: 5000, policy });
          if (!r.reachable) failed++;
        }
      }),
    );
    const cpu = process.cpuUsage(cpu0);
    if (failed) throw new Error(`probe floor: ${failed} of our probes failed`);
    return (cpu.user + cpu.system) / 1000 / probes;
  };
  const theirs = async () => {
    const { stdout } = await promisify(execFile)(go, [
      `-url=${url}`,
      `-n=${probes}`,
      `-c=${FLOOR_IN_FLIGHT}`,
    ]);
    const r = JSON.parse(stdout) as {
      probes: number;
      errors: number;
      cpuSeconds: number;
      firstError?: string;
    };
    if (r.errors) throw new Error(`probe floor: ${r.errors} Go probes failed (${r.firstError})`);
    return (r.cpuSeconds * 1000) / r.probes;
  };
  await ours(); // warm-up: JIT and the peer
  await pairs(true);
  const oursMs: number[] = [];
  const goMs: number[] = [];
  const pairOwnMs: number[] = [];
  const pairSharedMs: number[] = [];
  for (let round = 0; round < 2; round++) {
    oursMs.push(await ours());
    goMs.push(await theirs());
    pairOwnMs.push(await pairs(false));
    pairSharedMs.push(await pairs(true));
  }
  const list = (xs: number[]) => xs.map((x) => x.toFixed(3)).join(', ');
  process.stderr.write(
    `probe floor: ours ${list(oursMs)} ms, Go ${list(goMs)} ms per probe; pairs ${list(pairOwnMs)} ms, on a round connection ${list(pairSharedMs)} ms\n`,
  );
  return {
    probes,
    oursMs: Math.min(...oursMs),
    goMs: Math.min(...goMs),
    pairOwnMs: Math.min(...pairOwnMs),
    pairSharedMs: Math.min(...pairSharedMs),
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
