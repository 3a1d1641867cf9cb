/**
 * Sidecar benchmark: requests/s, p99 latency and memory for GET /.well-known/agent-card.json
 * over keep-alive connections on loopback, side by side in one run:
 *
 * - the sidecar (`agentcard sidecar`, with the NODE_OPTIONS the injected container uses, with
 *   and without a warmed compile cache),
 * - nginx (Debian package) serving the same bytes as a static file, one worker process,
 * - @a2a-js/sdk's Express `agentCardHandler`,
 * - a bare `node:http` server answering the same bytes (the floor for a Node process), for
 *   the memory comparison.
 *
 * Every server and the load generator (wrk when installed, else autocannon; the same for all
 * targets) run as separate processes, in interleaved rounds (see ROUND_ORDER). Run alone with `node bench/sidecar.bench.ts`; it rewrites the `## Sidecar` section
 * of docs/BENCHMARKS.md. `--quick` shortens every phase (for a smoke run, not for the record).
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { arch, cpus, loadavg, release, tmpdir, totalmem, type } from 'node:os';
import { join } from 'node:path';
import { replaceSection } from './report.ts';
import { SIDECAR_NODE_OPTIONS } from '../operator/sidecar/runtime.ts';
import { freePort } from '../test/support/ports.ts';

const ROOT = join(import.meta.dirname, '..');
const CARD_PATH = '/.well-known/agent-card.json';
const QUICK = process.argv.includes('--quick');
const DURATION_S = QUICK ? 2 : 5;
/** Before the first round, each target's JIT and caches are warmed for this long. */
const WARMUP_S = QUICK ? 1 : 3;
/** Before every measured run, a short run opens fresh connections and wakes the server. */
const RUN_WARMUP_S = 1;
const ROUNDS = QUICK ? 2 : 7;
/**
 * The order of the throughput runs in a round. The sidecar sits between nginx and the SDK
 * handler, so each of its ratios compares two runs made back to back; every second round runs
 * the list backwards (an ABBA design), so a slow drift in the machine's load favours no target.
 */
const ROUND_ORDER = [
  'nginx',
  'sidecar',
  '@a2a-js/sdk agentCardHandler',
  'sidecar, cold cache',
  'bare node:http',
];
let machineLoad = { before: 0, after: 0 };
const CONNECTIONS = 16;
const MEMORY_REQUESTS = 10_000;

// A bare node:http server in plain JavaScript: no TypeScript stripping, no modules of ours.
function bareServerSource(port: number, file: string): string {
  return `
    import { createServer } from 'node:http';
    import { readFileSync } from 'node:fs';
    const body = readFileSync(${JSON.stringify(file)});
    createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': body.length });
      res.end(body);
    }).listen(${port}, '127.0.0.1', () => process.stdout.write('ready\\n'));`;
}

// ---------------------------------------------------------------------------------------------

interface Target {
  name: string;
  note: string;
  /** Starts the server; resolves with its process (the one whose tree is measured). */
  start(port: number): Promise<ChildProcess>;
  /** Participates in the throughput comparison (the memory-only ones do not). */
  throughput: boolean;
}

interface LoadResult {
  rps: number;
  p99: number;
  p50: number;
  non2xx: number;
  errors: number;
  total: number;
  /** Server CPU time (user + system, all threads and children) per request, microseconds. */
  cpuUsPerRequest?: number;
  /** Share of its core the load generator (wrk) used during the run, 0..1. */
  loadGeneratorBusy?: number;
}

interface Row {
  target: Target;
  /** The throughput runs, one per round, in round order. */
  runs: LoadResult[];
  /** The median run by requests/s, with the median CPU time per request of all runs. */
  load?: LoadResult;
  rssAfter10k: number;
  rssAfterLoad?: number;
}

async function main(): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'agentcard-bench-'));
  const children: ChildProcess[] = [];
  const stopAll = () => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL'));
  process.on('exit', stopAll);
  try {
    await chmod(work, 0o755); // nginx's worker runs as an unprivileged user
    const card = await makeCard(work);
    const node = process.execPath;
    const env = { ...process.env };
    delete env.NODE_OPTIONS;

    const cacheDir = join(work, 'compile-cache');
    // Warm the compile cache the way an image build would: load every sidecar module once.
    spawnSync(node, [join(ROOT, 'bin/agentcard.js'), 'sidecar', '--help'], {
      env: { ...env, NODE_COMPILE_CACHE: cacheDir },
      stdio: 'ignore',
    });

    const sidecar = (withCache: boolean) => async (port: number) => {
      const child = spawn(
        ...pin(0, node, [
          join(ROOT, 'bin/agentcard.js'),
          'sidecar',
          '--dir',
          card.dir,
          '--port',
          String(port),
          '--metrics-port',
          String(await freePort()),
          '--address',
          '127.0.0.1',
        ]),
        {
          env: {
            ...env,
            NODE_OPTIONS: SIDECAR_NODE_OPTIONS,
            ...(withCache ? { NODE_COMPILE_CACHE: cacheDir } : {}),
          },
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      children.push(child);
      await waitForOutput(child, 'stderr', '"msg":"listening"');
      return child;
    };
    const bare = (options: string | undefined) => async (port: number) => {
      const child = spawn(...pin(0, node, ['--input-type=module', '-e', bareServerSource(port, card.file)]), {
        env: { ...env, ...(options ? { NODE_OPTIONS: options } : {}) },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      children.push(child);
      await waitForOutput(child, 'stdout', 'ready');
      return child;
    };

    const nginxBin = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => existsSync(p));
    const targets: Target[] = [
      {
        name: 'sidecar',
        note: `agentcard sidecar, NODE_OPTIONS="${SIDECAR_NODE_OPTIONS}", warmed compile cache (as in the image)`,
        start: sidecar(true),
        throughput: true,
      },
      {
        name: 'sidecar, cold cache',
        note: 'the same without a compile cache: Node loads its TypeScript stripper',
        start: sidecar(false),
        throughput: true,
      },
    ];
    if (nginxBin) {
      targets.push({
        name: 'nginx',
        note: `${nginxVersion(nginxBin)}, 1 worker process, static file, access log off`,
        start: async (port) => {
          const child = await startNginx(nginxBin, work, card.dir, port);
          children.push(child);
          return child;
        },
        throughput: true,
      });
    }
    targets.push(
      {
        name: '@a2a-js/sdk agentCardHandler',
        note: 'Express 5 + agentCardHandler (1.3.0), card object from memory',
        start: async (port) => {
          const child = spawn(...pin(0, node, [import.meta.filename, 'serve-sdk', String(port), card.file]), {
            env,
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          children.push(child);
          await waitForOutput(child, 'stdout', 'ready');
          return child;
        },
        throughput: true,
      },
      {
        name: 'bare node:http',
        note: 'plain JavaScript, default V8 flags: the floor for a Node process',
        start: bare(undefined),
        throughput: true,
      },
      {
        name: 'bare node:http, sidecar flags',
        note: `plain JavaScript, NODE_OPTIONS="${SIDECAR_NODE_OPTIONS}"`,
        start: bare(SIDECAR_NODE_OPTIONS),
        throughput: false,
      },
    );

    // Phase 1, memory: each target on a fresh process, RSS after exactly 10,000 requests.
    const rows: (Row & { url: string; child: ChildProcess })[] = [];
    for (const target of targets) {
      const port = await freePort();
      process.stderr.write(`bench: starting ${target.name}\n`);
      const child = await target.start(port);
      const url = `http://127.0.0.1:${port}${CARD_PATH}`;
      await checkBytes(url, card.bytes, target.name);
      await runLoad(url, { amount: MEMORY_REQUESTS });
      rows.push({ target, url, child, runs: [], rssAfter10k: treeRss(child.pid!) });
    }
    // Phase 2, throughput: rounds in which every target runs once (order: ROUND_ORDER, backwards
    // in every second round), so that load from elsewhere on a shared machine spreads over all of them.
    const loadBefore = loadavg()[0]!;
    const measured = rows.filter((r) => r.target.throughput);
    const position = (r: Row) => ROUND_ORDER.indexOf(r.target.name) >>> 0; // unknown names last
    measured.sort((a, b) => position(a) - position(b));
    for (const r of measured) await runLoad(r.url, { duration: WARMUP_S });
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? measured : [...measured].reverse();
      for (const r of order) {
        process.stderr.write(`bench: round ${round + 1}/${ROUNDS} ${r.target.name}\n`);
        await runLoad(r.url, { duration: RUN_WARMUP_S });
        const cpuBefore = treeCpuSeconds(r.child.pid!);
        const run = await runLoad(r.url, { duration: DURATION_S });
        run.cpuUsPerRequest = ((treeCpuSeconds(r.child.pid!) - cpuBefore) * 1e6) / run.total;
        r.runs.push(run);
      }
    }
    for (const r of measured) {
      r.load = median(r.runs);
      r.rssAfterLoad = treeRss(r.child.pid!);
    }
    machineLoad = { before: loadBefore, after: loadavg()[0]! };
    for (const r of rows) await stop(r.child);

    const section = renderSection(rows, nginxBin !== undefined);
    process.stdout.write(section);
    if (!QUICK) replaceSection('sidecar', section);
    else process.stderr.write('bench: --quick run, docs/BENCHMARKS.md left unchanged\n');
  } finally {
    stopAll();
    await rm(work, { recursive: true, force: true });
  }
}

async function makeCard(work: string): Promise<{ dir: string; file: string; bytes: Buffer }> {
  const dir = join(work, 'card');
  await mkdir(dir, { mode: 0o755 });
  await mkdir(join(dir, '.well-known'), { mode: 0o755 });
  // A realistic signed card of about 1.5 KB (the sidecar serves bytes; the signature is not
  // checked here).
  const card = {
    name: 'weather-agent',
    description: 'Forecasts, warnings and historical weather data for any city.',
    version: '2.3.1',
    supportedInterfaces: [
      { url: 'https://weather.example.com/a2a/jsonrpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: 'https://weather.example.com/a2a/rest', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
      { url: 'https://weather.example.com:443', protocolBinding: 'GRPC', protocolVersion: '1.0' },
    ],
    provider: { organization: 'Example Weather', url: 'https://example.com' },
    capabilities: { streaming: true, pushNotifications: false },
    securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'JWT' } } },
    securityRequirements: [{ schemes: { bearer: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: [
      {
        id: 'forecast',
        name: 'Forecast',
        description: 'Hourly and daily forecasts for the next ten days.',
        tags: ['weather', 'forecast'],
        examples: ['Will it rain in Lisbon tomorrow?'],
      },
      {
        id: 'warnings',
        name: 'Warnings',
        description: 'Active severe weather warnings for a region.',
        tags: ['weather', 'alerts'],
      },
    ],
    signatures: [
      {
        protected: 'eyJhbGciOiJFZERTQSIsImtpZCI6ImsxIiwidHlwIjoiSk9TRSJ9',
        signature: 'x'.repeat(86),
      },
    ],
  };
  const bytes = Buffer.from(JSON.stringify(card));
  const files: Record<string, string | Buffer> = {
    'agent-card.json': bytes,
    'agent.json': JSON.stringify({ name: card.name, url: card.supportedInterfaces[0]!.url }),
    'jwks.json': '{"keys":[]}',
    'cache-max-age-seconds': '300',
  };
  for (const [name, content] of Object.entries(files))
    await writeFile(join(dir, name), content, { mode: 0o644 });
  // nginx serves the same bytes from a file at the same path.
  await writeFile(join(dir, '.well-known', 'agent-card.json'), bytes, { mode: 0o644 });
  return { dir, file: join(dir, 'agent-card.json'), bytes };
}

async function startNginx(bin: string, work: string, cardDir: string, port: number): Promise<ChildProcess> {
  const prefix = join(work, 'nginx');
  await mkdir(prefix, { recursive: true });
  const conf = join(prefix, 'nginx.conf');
  await writeFile(
    conf,
    `worker_processes 1;
daemon off;
master_process on;
pid ${prefix}/nginx.pid;
error_log ${prefix}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  keepalive_timeout 65;
  client_body_temp_path ${prefix}/body;
  proxy_temp_path ${prefix}/proxy;
  fastcgi_temp_path ${prefix}/fastcgi;
  uwsgi_temp_path ${prefix}/uwsgi;
  scgi_temp_path ${prefix}/scgi;
  server {
    listen 127.0.0.1:${port};
    root ${cardDir};
    location = ${CARD_PATH} {
      default_type application/json;
      add_header Cache-Control "public, max-age=300";
      add_header Access-Control-Allow-Origin "*";
      add_header X-Content-Type-Options "nosniff";
    }
  }
}
`,
  );
  const child = spawn(...pin(0, bin, ['-p', prefix, '-c', conf]), { stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 100; i++) {
    if (await canConnect(port)) return child;
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(
    `nginx did not start: ${await readFile(join(prefix, 'error.log'), 'utf8').catch(() => '')}`,
  );
}

function nginxVersion(bin: string): string {
  const out = spawnSync(bin, ['-v'], { encoding: 'utf8' });
  return (out.stderr || out.stdout).trim().replace('nginx version: ', '');
}

const WRK = ['/usr/bin/wrk', '/usr/local/bin/wrk'].find((p) => existsSync(p));
const TASKSET =
  cpus().length >= 2 ? ['/usr/bin/taskset', '/bin/taskset'].find((p) => existsSync(p)) : undefined;
/** CPU pinning: servers on core 0, the load generator on core 1 (when taskset is there). */
const pin = (core: number, cmd: string, args: string[]): [string, string[]] =>
  TASKSET ? [TASKSET, ['-c', String(core), cmd, ...args]] : [cmd, args];

/**
 * The load generator, in its own process and the same for every target: wrk (C, one thread)
 * when installed, because a JavaScript client saturates its core before nginx does; otherwise
 * autocannon. A fixed request count (the memory phase) always uses autocannon.
 */
async function runLoad(url: string, opts: { duration?: number; amount?: number }): Promise<LoadResult> {
  if (WRK && opts.duration) return runWrk(url, opts.duration);
  const args = [join(ROOT, 'node_modules/autocannon/autocannon.js'), '-j', '-c', String(CONNECTIONS)];
  if (opts.amount) args.push('-a', String(opts.amount));
  else args.push('-d', String(opts.duration));
  args.push(url);
  const [cmd, argv] = pin(1, process.execPath, args);
  const out = spawnSync(cmd, argv, { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024, timeout: 120_000 });
  if (out.status !== 0) throw new Error(`autocannon failed: ${out.stderr}`);
  const r = JSON.parse(out.stdout.trim().split('\n').pop()!) as {
    requests: { average: number; total: number };
    latency: { p99: number; p50: number };
    non2xx: number;
    errors: number;
    duration: number;
  };
  return {
    rps: opts.amount ? r.requests.total / r.duration : r.requests.average,
    p99: r.latency.p99,
    p50: r.latency.p50,
    non2xx: r.non2xx,
    errors: r.errors,
    total: r.requests.total,
  };
}

/** The run with the median requests/s, carrying the median CPU time per request of all runs. */
function median(runs: LoadResult[]): LoadResult {
  const run = [...runs].sort((a, b) => a.rps - b.rps)[Math.floor(runs.length / 2)]!;
  return { ...run, cpuUsPerRequest: medianOf(runs.map((r) => r.cpuUsPerRequest!)) };
}

/** The median of numbers (the mean of the middle two for an even count). */
function medianOf(values: number[]): number {
  const v = [...values].sort((a, b) => a - b);
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
}

function runWrk(url: string, seconds: number): LoadResult {
  // wrk runs under a shell whose `times` then prints the CPU time of its children (user and
  // system, last line): how busy the load generator's own core was.
  const [cmd, argv] = pin(1, '/bin/sh', [
    '-c',
    '"$@" || exit $?; times',
    'sh',
    WRK!,
    '-t1',
    `-c${CONNECTIONS}`,
    `-d${seconds}s`,
    '--latency',
    url,
  ]);
  const out = spawnSync(cmd, argv, { encoding: 'utf8', timeout: (seconds + 30) * 1000 });
  if (out.status !== 0) throw new Error(`wrk failed: ${out.stderr}`);
  const text = out.stdout;
  const times = /(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$/.exec(text);
  const wrkCpu = times
    ? Number(times[1]) * 60 + Number(times[2]) + Number(times[3]) * 60 + Number(times[4])
    : NaN;
  const ms = (label: string) => {
    const m = new RegExp(`^\\s*${label}\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(text);
    if (!m) return NaN;
    const v = Number(m[1]);
    return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
  };
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(text)?.[1] ?? 0);
  const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(text);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1] ?? NaN),
    p50: ms('50%'),
    p99: ms('99%'),
    non2xx,
    errors: errors ? errors.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
    total: Number(/(\d+) requests in/.exec(text)?.[1] ?? 0),
    loadGeneratorBusy: wrkCpu / seconds,
  };
}

const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/**
 * CPU time of a process and its children (utime + stime from /proc/PID/stat, which covers all
 * threads). Unlike requests/s, CPU time per request hardly moves when other work competes for
 * the cores of a shared machine.
 */
function treeCpuSeconds(pid: number): number {
  const cpuOf = (p: number) => {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // utime, stime
    } catch {
      return 0;
    }
  };
  const children = spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).stdout.trim();
  return [pid, ...children.split('\n').filter(Boolean).map(Number)].reduce((sum, p) => sum + cpuOf(p), 0);
}

/** Resident memory of a process and its children (nginx: master + worker), in bytes. */
function treeRss(pid: number): number {
  const status = (p: number) => {
    try {
      return readFileSync(`/proc/${p}/status`, 'utf8');
    } catch {
      return '';
    }
  };
  const rssOf = (p: number) => Number(/VmRSS:\s+(\d+) kB/.exec(status(p))?.[1] ?? 0) * 1024;
  let total = rssOf(pid);
  const children = spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).stdout.trim();
  for (const c of children.split('\n').filter(Boolean)) total += rssOf(Number(c));
  return total;
}

async function checkBytes(url: string, expected: Buffer, name: string): Promise<void> {
  const res = await fetch(url);
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200 || !body.equals(expected)) {
    throw new Error(`${name} does not serve the same bytes (status ${res.status}, ${body.length} bytes)`);
  }
}

function waitForOutput(child: ChildProcess, stream: 'stdout' | 'stderr', text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`no '${text}' within 20 s`)), 20_000);
    child[stream]!.on('data', (d: Buffer) => {
      seen += d.toString();
      if (seen.includes(text)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${seen.slice(0, 500)}`)));
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5000).unref();
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(true)); // in use: nginx is listening
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(false)));
  });
}

// ---------------------------------------------------------------------------------------------

const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

function renderSection(rows: Row[], haveNginx: boolean): string {
  const find = (name: string) => rows.find((r) => r.target.name === name);
  const side = find('sidecar')!;
  const cold = find('sidecar, cold cache')!;
  const nginx = find('nginx');
  const sdk = find('@a2a-js/sdk agentCardHandler')!;
  const bare = find('bare node:http')!;
  const bareFlags = find('bare node:http, sidecar flags')!;
  const ratio = (a: number, b: number) => (a / b).toFixed(2);
  const verdict = (ok: boolean) => (ok ? 'met' : '**missed**');
  const order = rows
    .filter((r) => r.target.throughput)
    .map((r) => r.target.name)
    .sort((a, b) => (ROUND_ORDER.indexOf(a) >>> 0) - (ROUND_ORDER.indexOf(b) >>> 0));

  const lines: string[] = [];
  lines.push('## Sidecar', '');
  lines.push(
    `Run: ${new Date().toISOString().slice(0, 10)}, \`node bench/sidecar.bench.ts\`, Node.js ${process.version}, ` +
      `${cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${cpus().length} cores (shared with other work), ` +
      `${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM, ${type()} ${release()} ${arch()}.`,
    '',
    `Method, the same for every target: load from ${WRK ? 'wrk (one thread)' : 'autocannon'} in its own process, ` +
      `${CONNECTIONS} keep-alive connections on 127.0.0.1, no pipelining, GET ${CARD_PATH} (the same bytes ` +
      `from every target)` +
      (TASKSET ? ', servers pinned to core 0 and the load generator to core 1 (taskset)' : '') +
      `. Each target is warmed for ${WARMUP_S} s, then ${ROUNDS} rounds run every target once for ` +
      `${DURATION_S} s, each run preceded by a ${RUN_WARMUP_S} s run on fresh connections. A round's order is ` +
      `${order.join(' → ')}, and every second round runs it backwards, so the sidecar's runs and those it is ` +
      'compared with are back to back and a drift in the load of the shared machine favours no target. ' +
      "The table shows each target's median run by requests/s (p50 and p99 are that run's) and its median " +
      'CPU time per request over all rounds (server process tree, user + system, from /proc: it moves much ' +
      'less than requests/s when other work competes for the cores). "Load generator core busy" is the CPU ' +
      "time of wrk over the run's length: near 100%, the load generator rather than the server sets the pace, " +
      'so requests/s understate that server. ' +
      `RSS is read from /proc (master + workers for nginx) after exactly ${MEMORY_REQUESTS.toLocaleString('en')} ` +
      'requests on a fresh process, and again after the throughput rounds. ' +
      `Load average of the machine: ${machineLoad.before.toFixed(1)} before the rounds, ` +
      `${machineLoad.after.toFixed(1)} after (2 cores: above 2 means other work competed).`,
    '',
    '| target | requests/s | CPU µs/request | requests/s per core (from CPU) | p50 ms | p99 ms | load generator core busy | RSS after 10,000 req (MiB) | RSS after load (MiB) | notes |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
  );
  for (const r of rows) {
    const l = r.load;
    lines.push(
      `| ${r.target.name} | ${l ? Math.round(l.rps).toLocaleString('en') : '-'} | ${
        l?.cpuUsPerRequest ? l.cpuUsPerRequest.toFixed(1) : '-'
      } | ${l?.cpuUsPerRequest ? Math.round(1e6 / l.cpuUsPerRequest).toLocaleString('en') : '-'} | ${
        l ? l.p50.toFixed(2) : '-'
      } | ${l ? l.p99.toFixed(2) : '-'} | ${
        l?.loadGeneratorBusy !== undefined && !Number.isNaN(l.loadGeneratorBusy)
          ? `${Math.round(l.loadGeneratorBusy * 100)}%`
          : '-'
      } | ${mib(r.rssAfter10k)} | ${r.rssAfterLoad ? mib(r.rssAfterLoad) : '-'} | ${r.target.note}${
        l && (l.non2xx || l.errors) ? `; ${l.non2xx} non-2xx, ${l.errors} errors` : ''
      } |`,
    );
  }
  if (!haveNginx) lines.push('', 'nginx is not installed on this machine, so its row is missing.');

  // Requests/s of every round, so the spread behind the medians is visible.
  lines.push('', 'Requests/s by round (thousands):', '');
  lines.push(`| target | ${side.runs.map((_, i) => `round ${i + 1}`).join(' | ')} |`);
  lines.push(`| --- | ${side.runs.map(() => '---:').join(' | ')} |`);
  for (const name of order) {
    const r = find(name)!;
    lines.push(`| ${name} | ${r.runs.map((run) => (run.rps / 1000).toFixed(1)).join(' | ')} |`);
  }

  lines.push('', 'Goals:', '');
  // Each throughput goal is judged three ways: the ratio of the median requests/s; the median of
  // the per-round ratios (each from two runs made back to back); and the capacity per core
  // derived from CPU time per request, which other work on the machine disturbs far less.
  const perCore = (r: Row) => 1e6 / r.load!.cpuUsPerRequest!;
  const goal = (label: string, other: Row | undefined, min: number) => {
    if (!other?.load)
      return lines.push(`- ${label}: not measured (${other ? 'no load run' : 'nginx absent'}).`);
    const ofMedians = side.load!.rps / other.load.rps;
    const paired = side.runs.map((run, i) => run.rps / other.runs[i]!.rps);
    const pairedMedian = medianOf(paired);
    const capacity = perCore(side) / perCore(other);
    const all = ofMedians >= min && pairedMedian >= min && capacity >= min;
    lines.push(
      `- ${label}: ${verdict(all)}. Ratio of the median requests/s ${ofMedians.toFixed(2)}x ` +
        `(${verdict(ofMedians >= min)}); per round, back to back: median ${pairedMedian.toFixed(2)}x ` +
        `(${verdict(pairedMedian >= min)}), from ${Math.min(...paired).toFixed(2)}x to ` +
        `${Math.max(...paired).toFixed(2)}x, ${paired.filter((x) => x >= min).length} of ${paired.length} rounds ` +
        `at or above ${min}x; per core from CPU time ${capacity.toFixed(2)}x (${verdict(capacity >= min)}).`,
    );
  };
  goal('requests/s >= 0.7x nginx', nginx, 0.7);
  goal('requests/s >= 3x the SDK handler', sdk, 3);
  const xm = side.rssAfter10k / bare.rssAfter10k;
  lines.push(
    `- RSS after 10,000 requests <= 1.25x bare node:http: ${ratio(side.rssAfter10k, bare.rssAfter10k)}x ` +
      `(${mib(side.rssAfter10k)} vs ${mib(bare.rssAfter10k)} MiB), ${verdict(xm <= 1.25)}. ` +
      `Against the bare server with the same flags: ${ratio(side.rssAfter10k, bareFlags.rssAfter10k)}x. ` +
      `Without the compile cache the sidecar is at ${ratio(cold.rssAfter10k, bare.rssAfter10k)}x.`,
  );
  if (nginx) {
    lines.push(
      `- Memory next to nginx: the sidecar holds ${mib(side.rssAfter10k)} MiB, nginx ${mib(nginx.rssAfter10k)} MiB ` +
        '(master + worker).',
    );
  }
  lines.push('');
  return lines.join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------------
// Entry: this file re-runs itself as `serve-sdk` so that the SDK server is its own process.

if (process.argv[2] === 'serve-sdk') {
  const [, , , port, file] = process.argv;
  const express = (await import('express')).default;
  const { agentCardHandler } = await import('@a2a-js/sdk/server/express');
  const card = JSON.parse(readFileSync(file!, 'utf8'));
  const app = express();
  app.use(CARD_PATH, agentCardHandler({ agentCardProvider: async () => card, cache: { maxAge: 300 } }));
  app.listen(Number(port), '127.0.0.1', () => process.stdout.write('ready\n'));
} else {
  await main();
}
