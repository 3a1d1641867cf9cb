/**
 * Controller scale benchmark: 1,000 AgentCards on the local control plane.
 *
 * Measures, for a real `agentcard operator` process (no leader election, no probes):
 * - time from the operator's start until every AgentCard is Ready (observed through a watch);
 * - API-server writes per card, counted by the API server itself (apiserver_request_total);
 * - the operator's peak RSS (VmHWM);
 * and, as the floor, the time a bare script takes to make the same writes (one ConfigMap apply,
 * one status apply per card by 4 workers, and the same Event per card through a background sender
 * with 2 writes in flight, as the operator does) for 1,000 other AgentCards.
 * Results go to the `## Controller scale` section of docs/BENCHMARKS.md.
 *
 * Run: `node bench/scale.bench.ts [--cards 1000] [--concurrency 4] [--runs 5]` (Node.js 24, e.g. through
 * npx); the machine is shared, so each figure is the median of several runs.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { request } from 'node:https';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  loadAllYaml,
  makeInformer,
  type KubernetesListObject,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { CRD_FILE } from '../operator/card/crd.ts';
import { generateSigningJwk } from '../operator/card/keygen.ts';
import { GROUP, PLURAL, VERSION } from '../operator/api/names.ts';
import { poolConnections } from '../operator/kube/config.ts';
import { down, up } from '../test/controlplane/control.ts';
import { kubeconfigFile } from '../test/controlplane/paths.ts';
import { table, writeSection } from './report.ts';

const root = resolve(import.meta.dirname, '..');
const RESOURCE = { group: GROUP, version: VERSION, plural: PLURAL };
const log = (line: string) => process.stderr.write(`[scale] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const { values } = parseArgs({
  options: {
    cards: { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '4' },
    runs: { type: 'string', default: '5' },
  },
});
const N = Number(values.cards);
const CONCURRENCY = Number(values.concurrency);
const RUNS = Number(values.runs);

/** Runs `fn` over `items` with at most `limit` in flight. */
async function pool<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

async function apiGet(kc: KubeConfig, path: string): Promise<string> {
  const opts: Parameters<typeof request>[1] = { method: 'GET' };
  await kc.applyToHTTPSOptions(opts);
  return new Promise((ok, fail) => {
    const req = request(new URL(path, kc.getCurrentCluster()!.server), opts, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => ok(body));
    });
    req.on('error', fail);
    req.end();
  });
}

/** Write requests by resource, from the API server's own counters. */
async function writeCounters(kc: KubeConfig): Promise<Record<string, number>> {
  const text = await apiGet(kc, '/metrics');
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

function card(i: number) {
  return {
    name: `Agent ${i}`,
    description: 'Answers questions about the weather forecast for a city.',
    version: '1.0.0',
    supportedInterfaces: [
      { url: `https://agent-${i}.example.com/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ],
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      { id: 'forecast', name: 'Forecast', description: 'Gives the forecast for a city', tags: ['weather'] },
    ],
  };
}

async function prepareNamespace(kc: KubeConfig, name: string): Promise<string[]> {
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  await core.createNamespace({ body: { metadata: { name } } });
  const jwk = JSON.stringify(await generateSigningJwk('ES256', 'bench-1'));
  await core.createNamespacedSecret({
    namespace: name,
    body: { metadata: { name: 'key', labels: { 'agentcard.dev/signing-key': 'true' } }, stringData: { jwk } },
  });
  const names = Array.from({ length: N }, (_, i) => `card-${String(i).padStart(4, '0')}`);
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
        },
      },
    }),
  );
  return names;
}

/** Starts the operator; resolves when every AgentCard in `namespace` is Ready. */
/** Watches `namespace` and resolves `all` once every AgentCard has been seen Ready. */
async function watchReady(kc: KubeConfig, namespace: string) {
  const ready = new Set<string>();
  let resolveAll!: () => void;
  const all = new Promise<void>((r) => (resolveAll = r));
  type Card = KubernetesObject & { status?: { conditions?: Array<{ type: string; status: string }> } };
  const custom = kc.makeApiClient(CustomObjectsApi);
  const informer = makeInformer<Card>(
    kc,
    `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`,
    async () =>
      (await custom.listNamespacedCustomObject({ ...RESOURCE, namespace })) as KubernetesListObject<Card>,
  );
  const seen = (obj: Card) => {
    if (obj.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
      ready.add(obj.metadata!.name!);
    if (ready.size === N) resolveAll();
  };
  informer.on('add', seen);
  informer.on('update', seen);
  await informer.start();
  return { all, stop: () => informer.stop() };
}

/**
 * Node's compile cache, warmed the way the image build warms it (bin/warm-compile-cache.js, see
 * the Dockerfile): the operator then starts without stripping TypeScript or loading the stripper.
 */
const compileCache = mkdtempSync(join(tmpdir(), 'agentcard-bench-cache-'));
function warmCompileCache(): void {
  for (const args of [['bin/warm-compile-cache.js'], ['bench/scale-floor.ts', '--warm']]) {
    const warm = spawnSync(process.execPath, [join(root, args[0]!), ...args.slice(1)], {
      env: { ...process.env, NODE_COMPILE_CACHE: compileCache },
      encoding: 'utf8',
    });
    if (warm.status !== 0) throw new Error(`warming the compile cache failed: ${warm.stderr}`);
  }
}

async function runOperator(kc: KubeConfig, namespace: string) {
  const watcher = await watchReady(kc, namespace);
  const allReady = watcher.all;
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      join(root, 'bin', 'agentcard.js'),
      'operator',
      '--kubeconfig',
      kubeconfigFile,
      '--namespace',
      namespace,
      '--no-leader-elect',
      '--no-probes',
      '--webhook-port',
      '0',
      '--metrics-port',
      '0',
      '--bind-address',
      '127.0.0.1',
      '--concurrency',
      String(CONCURRENCY),
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, AGENTCARD_LOG_LEVEL: 'info', NODE_COMPILE_CACHE: compileCache },
    },
  );
  let stderr = '';
  let port = 0;
  let syncedAt = 0;
  let rssAtSyncKiB = NaN;
  child.stderr!.on('data', (c: Buffer) => {
    stderr = (stderr + c.toString()).slice(-8000);
    port ||= Number(/"metricsPort":(\d+)/.exec(stderr)?.[1] ?? 0);
    if (!syncedAt && stderr.includes('"msg":"caches synced; reconciling"')) {
      syncedAt = performance.now();
      rssAtSyncKiB = Number(
        /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? NaN,
      );
    }
  });
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  const timeout = setTimeout(() => child.kill('SIGKILL'), 20 * 60_000);
  await Promise.race([
    allReady,
    exited.then(() => Promise.reject(new Error(`operator exited early: ${stderr}`))),
  ]);
  const seconds = (performance.now() - started) / 1000;
  await sleep(3_000); // let anything still to come arrive before counting and measuring
  const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
  const peakKiB = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  const stat = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const cpuSeconds = (Number(stat[11]) + Number(stat[12])) / 100; // utime + stime, in clock ticks
  const metrics = port ? await (await fetch(`http://127.0.0.1:${port}/metrics`)).text() : '';
  const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1] ?? NaN);
  const reconcileMs =
    (metric('agentcard_reconcile_duration_seconds_sum') /
      metric('agentcard_reconcile_duration_seconds_count')) *
    1000;
  const heapMiB = metric('nodejs_heap_size_used_bytes') / 2 ** 20;
  const reconciles = metric('agentcard_reconcile_duration_seconds_count');
  await watcher.stop();
  child.kill('SIGTERM');
  await exited;
  clearTimeout(timeout);
  return {
    seconds,
    startupSeconds: (syncedAt - started) / 1000,
    peakMiB: peakKiB / 1024,
    rssAtSyncMiB: rssAtSyncKiB / 1024,
    cpuSeconds,
    reconcileMs,
    reconciles,
    heapMiB,
  };
}

/**
 * The floor: bench/scale-floor.ts, a bare script making the same writes with the same
 * parallelism, as its own process with the same compile cache, timed like the operator: from its
 * start until a watch has seen every AgentCard Ready.
 */
async function bareWrites(kc: KubeConfig, namespace: string, data: Record<string, string>) {
  const dataFile = join(compileCache, `floor-data-${namespace}.json`);
  writeFileSync(dataFile, JSON.stringify(data));
  const watcher = await watchReady(kc, namespace);
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      join(root, 'bench', 'scale-floor.ts'),
      ...['--kubeconfig', kubeconfigFile, '--namespace', namespace],
      ...['--concurrency', String(CONCURRENCY), '--data', dataFile],
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, NODE_COMPILE_CACHE: compileCache } },
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
  op: Awaited<ReturnType<typeof runOperator>>;
  floorSeconds: number;
  perCard: Record<string, number>;
}

/** One run: N AgentCards reconciled by the operator, then the floor on N others. */
async function oneRun(kc: KubeConfig, run: number, namespaces: string[]): Promise<RunResult> {
  const suffix = randomBytes(3).toString('hex');
  const nsOperator = `bench-scale-${suffix}`;
  const nsFloor = `bench-floor-${suffix}`;
  namespaces.push(nsOperator, nsFloor);
  log(`run ${run}: creating ${N} AgentCards in ${nsOperator}`);
  const names = await prepareNamespace(kc, nsOperator);
  const before = await writeCounters(kc);
  log(`run ${run}: starting the operator (concurrency ${CONCURRENCY})`);
  const op = await runOperator(kc, nsOperator);
  const after = await writeCounters(kc);
  const perCard = Object.fromEntries(Object.keys(after).map((k) => [k, (after[k]! - before[k]!) / N]));
  log(
    `run ${run}: all Ready in ${op.seconds.toFixed(1)} s (caches synced after ${op.startupSeconds.toFixed(1)} s, ` +
      `RSS then ${op.rssAtSyncMiB.toFixed(0)} MiB), peak RSS ${op.peakMiB.toFixed(0)} MiB, heap ${op.heapMiB.toFixed(0)} MiB, ` +
      `CPU ${op.cpuSeconds.toFixed(1)} s, mean reconcile ${op.reconcileMs.toFixed(1)} ms over ${op.reconciles} reconciles`,
  );
  log(`run ${run}: floor, creating ${N} AgentCards in ${nsFloor}`);
  const core = kc.makeApiClient(CoreV1Api);
  const template = (
    await core.readNamespacedConfigMap({ namespace: nsOperator, name: `${names[0]}-agent-card` })
  ).data!;
  await prepareNamespace(kc, nsFloor);
  const floorSeconds = await bareWrites(kc, nsFloor, template);
  log(
    `run ${run}: floor, the same writes in ${floorSeconds.toFixed(1)} s (ratio ${(op.seconds / floorSeconds).toFixed(2)}x)`,
  );
  return { op, floorSeconds, perCard };
}

/** What the numbers mean; kept next to the code that produces them. */
const NOTES = `What the operator does to stay close to the floor (see the README, "API client"):
it makes its calls as plain JSON over undici with client-node's KubeConfig for authentication,
and loads KubeConfig without client-node's generated API classes (24 MB of JavaScript). Before
that change, on the same machine, a run took about 6.8 s of operator CPU, peaked at about 180 MiB
and was 1.4x to 1.6x the floor; loading the generated classes alone added about 33 MiB of RSS. The
operator sets V8's \`--optimize-for-size\` for itself: single runs without it used about 20% less CPU
and peaked about 30 MiB higher. It also starts with the compile cache the image build warms
(bin/warm-compile-cache.js), as does the floor script; without it, Node's TypeScript stripper stays
resident (about 15 MiB more). Both time measurements include process start (module loading, about
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

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const { started } = await up(log);
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigFile);
  // One connection pool for the benchmark's own calls (see operator/kube/config.ts).
  poolConnections(kc);
  const namespaces: string[] = [];
  try {
    warmCompileCache();
    // loadAllYaml gives client-node's typed model, which keeps the CRD's CEL rules and enums.
    const [crd] = loadAllYaml(readFileSync(join(root, CRD_FILE), 'utf8')) as KubernetesObject[];
    await KubernetesObjectApi.makeApiClient(kc).patch(
      crd!,
      undefined,
      undefined,
      'agentcard-tests',
      true,
      PatchStrategy.ServerSideApply,
    );
    for (;;) {
      const got = await kc
        .makeApiClient(ApiextensionsV1Api)
        .readCustomResourceDefinition({ name: `${PLURAL}.${GROUP}` });
      if (got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      await sleep(200);
    }
    const runs: RunResult[] = [];
    for (let run = 1; run <= RUNS; run++) {
      runs.push(await oneRun(kc, run, namespaces));
      // Independent runs: the next one starts on an API server without this run's objects.
      await deleteNamespaces(kc, namespaces.splice(0));
    }

    const ratios = runs.map((r) => r.op.seconds / r.floorSeconds);
    // Other work on the machine comes and goes; comparing the medians of each side is steadier
    // than pairing each operator run with the floor run that followed it.
    const opMedian = median(runs.map((r) => r.op.seconds));
    const floorMedian = median(runs.map((r) => r.floorSeconds));
    const ratio = opMedian / floorMedian;
    const peak = Math.max(...runs.map((r) => r.op.peakMiB));
    const writes = (k: string) => median(runs.map((r) => r.perCard[k]!));
    const objectWrites = writes('configmaps') + writes('status');
    const verdict = (ok: boolean) => (ok ? 'met' : '**not met**');
    writeSection(
      'controller-scale',
      'Controller scale',
      [
        `\`node bench/scale.bench.ts --cards ${N} --concurrency ${CONCURRENCY} --runs ${RUNS}\`. The local control ` +
          'plane (etcd, kube-apiserver, kube-controller-manager) runs on the same cores.',
        '',
        `Each run: ${N} AgentCards (each signed with one ES256 key from a labelled Secret) exist before a real ` +
          '`agentcard operator` process starts (`--no-probes`, no leader election); time runs from its start until a ' +
          'watch has seen every AgentCard Ready. The floor is a bare script (bench/scale-floor.ts, its own process, ' +
          `the operator's REST client) making the same writes for ${N} other AgentCards: it lists them, then per card ` +
          `a ConfigMap apply then a status apply, ${CONCURRENCY} cards in parallel, and the Published Event sent in the ` +
          'background with 2 in flight; timed the same way, from its start. API writes are counted by the API ' +
          'server (`apiserver_request_total`).',
        '',
        table(
          ['measure', 'result', 'goal'],
          [
            [
              `time to all Ready, operator / floor (medians of ${RUNS} runs: ${opMedian.toFixed(1)} s / ${floorMedian.toFixed(1)} s)`,
              `${ratio.toFixed(2)}x (median of the per-run ratios: ${median(ratios).toFixed(2)}x)`,
              `<= 1.3x: ${verdict(ratio <= 1.3)}`,
            ],
            [
              'object writes per new card (ConfigMap + status)',
              `${objectWrites.toFixed(2)} (${writes('configmaps').toFixed(2)} + ${writes('status').toFixed(2)})`,
              `<= 2: ${verdict(objectWrites <= 2)}`,
            ],
            ['Events per new card', writes('events').toFixed(2), '(not in the goal)'],
            [
              'operator peak RSS (VmHWM, worst run)',
              `${peak.toFixed(0)} MiB`,
              `< 150 MiB: ${verdict(peak < 150)}`,
            ],
          ],
        ),
        '',
        table(
          [
            'run',
            'operator: all Ready',
            'floor',
            'ratio',
            'caches synced after',
            'operator CPU',
            'mean reconcile',
            'RSS when synced',
            'peak RSS',
          ],
          runs.map((r, i) => [
            i + 1,
            `${r.op.seconds.toFixed(1)} s`,
            `${r.floorSeconds.toFixed(1)} s`,
            `${ratios[i]!.toFixed(2)}x`,
            `${r.op.startupSeconds.toFixed(1)} s`,
            `${r.op.cpuSeconds.toFixed(1)} s`,
            `${r.op.reconcileMs.toFixed(0)} ms`,
            `${r.op.rssAtSyncMiB.toFixed(0)} MiB`,
            `${r.op.peakMiB.toFixed(0)} MiB`,
          ]),
        ),
        '',
        NOTES,
      ].join('\n'),
    );
    log('results written to docs/BENCHMARKS.md');
  } finally {
    await deleteNamespaces(kc, namespaces);
    if (started) await down(log);
    rmSync(compileCache, { recursive: true, force: true });
  }
}

await main();
