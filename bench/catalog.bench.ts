/**
 * Catalog benchmark: N AgentCards (default 10,000) in one ClusterAgentCatalog on the local
 * control plane, with a real `agentcard operator` process (no leader election, no probes).
 *
 * Measures:
 * - the time from the last AgentCard seen Ready to the catalog republished with every card
 *   (its status.entries = N, written after its ConfigMaps), both observed through watches;
 * - the time from one card's change (a new spec.card.version) to the catalog partition holding
 *   that version, while the N cards are steady: one change at a time, median and p99 of
 *   --changes of them (each includes the AgentCard reconcile: the card Ready with its new version);
 * - API writes in steady state over a quiet period (counted by the API server);
 * - the operator's RSS added by the catalog controller: the same operator restarted over the same
 *   published state, catalogs on and catalogs off (--no-catalogs), RSS once steady, side by side;
 * - bytes published and served per entry (catalog JSON, and the HTML page).
 * Results go to the `## Catalogs` section of docs/BENCHMARKS.md.
 *
 * Run: `node bench/catalog.bench.ts [--cards 10000] [--changes 50]` (Node.js 24, e.g. through npx).
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
  KubernetesObjectApi,
  PatchStrategy,
  loadAllYaml,
  makeInformer,
  type KubernetesListObject,
  type KubernetesObject,
  type V1ConfigMap,
} from '@kubernetes/client-node';
import { CRD_FILE } from '../operator/card/crd.ts';
import { CATALOG_CRDS } from '../operator/catalog/crd.ts';
import { CATALOG_LABEL, GROUP, PLURAL, VERSION } from '../operator/api/names.ts';
import { down, up } from '../test/controlplane/control.ts';
import { kubeconfigFile } from '../test/controlplane/paths.ts';
import { table, writeSection } from './report.ts';
import { apiWrites } from './api-writes.ts';

/** What the operator writes here, counted at the API server. */
const WRITTEN_RESOURCES = ['configmaps', 'agentcards', 'clusteragentcatalogs'];

const root = resolve(import.meta.dirname, '..');
const log = (line: string) => process.stderr.write(`[catalog] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const { values } = parseArgs({
  options: { cards: { type: 'string', default: '10000' }, changes: { type: 'string', default: '50' } },
});
const N = Number(values.cards);
const CHANGES = Number(values.changes);
const CARDS = { group: GROUP, version: VERSION, plural: PLURAL };
/** The nearest-rank percentile (p in 0..100) of v. */
const percentile = (v: number[], p: number) =>
  [...v].sort((a, b) => a - b)[Math.max(0, Math.ceil((p / 100) * v.length) - 1)]!;

async function pool<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

const spec = (i: number, version = '1.0.0') => ({
  card: {
    name: `Agent ${i}`,
    description: 'Answers questions about the weather forecast for a city.',
    version,
    supportedInterfaces: [
      { url: `https://agent-${i}.example.com/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ],
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      { id: 'forecast', name: 'Forecast', description: 'Gives the forecast for a city', tags: ['weather'] },
    ],
  },
});

type Operator = {
  child: ChildProcess;
  ready: Promise<void>;
  rssMiB: () => number;
  stop: () => Promise<void>;
};

function startOperator(namespace: string, catalogs: boolean): Operator {
  const child = spawn(
    process.execPath,
    [
      join(root, 'bin', 'agentcard.js'),
      'operator',
      '--kubeconfig',
      kubeconfigFile,
      '--namespace',
      namespace,
      '--operator-namespace',
      namespace,
      ...(catalogs ? ['--cluster-catalogs'] : ['--no-catalogs']),
      '--no-leader-elect',
      '--no-probes',
      '--webhook-port',
      '0',
      '--metrics-port',
      '0',
      '--bind-address',
      '127.0.0.1',
      '--resync',
      '0',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, AGENTCARD_LOG_LEVEL: 'info' } },
  );
  let stderr = '';
  let resolveReady!: () => void;
  const ready = new Promise<void>((r) => (resolveReady = r));
  child.stderr!.on('data', (c: Buffer) => {
    stderr = (stderr + c.toString()).slice(-20000);
    if (stderr.includes('"msg":"caches synced; reconciling"')) resolveReady();
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    child,
    ready: Promise.race([
      ready,
      exited.then(() => Promise.reject(new Error(`operator exited: ${stderr.slice(-2000)}`))),
    ]),
    rssMiB: () =>
      Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Waits until the API server sees no write for `quietMs` (the operator is idle); bounded. */
async function settle(kc: KubeConfig, quietMs = 10_000, maxMs = 15 * 60_000): Promise<void> {
  const deadline = Date.now() + maxMs;
  let last = await apiWrites(kc, WRITTEN_RESOURCES);
  let since = Date.now();
  while (Date.now() < deadline) {
    await sleep(1_000);
    const now = await apiWrites(kc, WRITTEN_RESOURCES);
    if (now !== last) {
      last = now;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) return;
  }
  throw new Error('the operator did not settle');
}

async function main(): Promise<void> {
  const { started } = await up(log);
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigFile);
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const objects = KubernetesObjectApi.makeApiClient(kc);
  const namespace = `catalog-bench-${randomBytes(3).toString('hex')}`;
  const catalogName = `bench-${namespace.slice(-6)}`;
  let op: Operator | undefined;
  try {
    for (const file of [CRD_FILE, ...CATALOG_CRDS.map((c) => c.file)]) {
      const [crd] = loadAllYaml(readFileSync(join(root, file), 'utf8')) as KubernetesObject[];
      await objects.patch(crd!, undefined, undefined, 'agentcard-bench', true, PatchStrategy.ServerSideApply);
    }
    await sleep(2_000);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    log(`creating ${N} AgentCards in ${namespace}`);
    const names = Array.from({ length: N }, (_, i) => `agent-${i}`);
    await pool(names, 16, (n) =>
      custom.createNamespacedCustomObject({
        ...CARDS,
        namespace,
        body: {
          apiVersion: `${GROUP}/${VERSION}`,
          kind: 'AgentCard',
          metadata: { name: n },
          spec: spec(Number(n.slice(6))),
        },
      }),
    );
    await custom.createClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'clusteragentcatalogs',
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'ClusterAgentCatalog',
        metadata: { name: catalogName },
        spec: {
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
          publisher: 'bench.example.com',
        },
      },
    });

    // Watches: the time each card is first seen Ready, and the catalog's status.entries.
    type Card = KubernetesObject & {
      status?: { observedGeneration?: number; conditions?: Array<{ type: string; status: string }> };
    };
    const readyAt = new Map<string, number>();
    // The time each card was first seen Ready at a generation ("name@generation"), for the part
    // of a change's time spent before the catalog could list it.
    const readyAtGeneration = new Map<string, number>();
    const cards = makeInformer<Card>(
      kc,
      `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`,
      async () =>
        (await custom.listNamespacedCustomObject({ ...CARDS, namespace })) as KubernetesListObject<Card>,
    );
    const onCard = (c: Card) => {
      const name = c.metadata!.name!;
      if (!c.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True')) return;
      if (!readyAt.has(name)) readyAt.set(name, performance.now());
      const generation = c.status.observedGeneration;
      if (generation !== undefined && generation === c.metadata?.generation) {
        const key = `${name}@${generation}`;
        if (!readyAtGeneration.has(key)) readyAtGeneration.set(key, performance.now());
      }
    };
    cards.on('add', onCard);
    cards.on('update', onCard);
    await cards.start();
    let fullAt = 0;
    type Catalog = KubernetesObject & { status?: { entries?: number; partitions?: number; bytes?: number } };
    const catalogs = makeInformer<Catalog>(
      kc,
      `/apis/${GROUP}/${VERSION}/clusteragentcatalogs`,
      async () =>
        (await custom.listClusterCustomObject({
          group: GROUP,
          version: VERSION,
          plural: 'clusteragentcatalogs',
        })) as KubernetesListObject<Catalog>,
    );
    let status: Catalog['status'] = {};
    const onCatalog = (c: Catalog) => {
      if (c.metadata?.name !== catalogName) return;
      status = c.status ?? {};
      if (!fullAt && status.entries === N) fullAt = performance.now();
    };
    catalogs.on('add', onCatalog);
    catalogs.on('update', onCatalog);
    await catalogs.start();

    const t0 = performance.now();
    op = startOperator(namespace, true);
    await op.ready;
    log('operator synced; waiting for every card Ready and the catalog complete');
    const deadline = Date.now() + 30 * 60_000;
    while ((readyAt.size < N || !fullAt) && Date.now() < deadline) await sleep(200);
    if (readyAt.size < N || !fullAt)
      throw new Error(`only ${readyAt.size} Ready, catalog entries ${status.entries}`);
    const lastReady = Math.max(...readyAt.values());
    const toCatalogMs = fullAt - lastReady;
    const allReadyS = (lastReady - t0) / 1000;
    log(
      `all Ready after ${allReadyS.toFixed(1)} s; catalog complete ${toCatalogMs.toFixed(0)} ms after the last`,
    );
    await settle(kc);

    // Steady state: no write for a quiet period.
    const w0 = await apiWrites(kc, WRITTEN_RESOURCES);
    await sleep(15_000);
    const steadyWrites = (await apiWrites(kc, WRITTEN_RESOURCES)) - w0;

    // One card's change, republished: a watch on the catalog's ConfigMaps sees the new version.
    const seen = new Map<string, number>();
    const cms = makeInformer<V1ConfigMap>(
      kc,
      `/api/v1/namespaces/${namespace}/configmaps`,
      () => core.listNamespacedConfigMap({ namespace, labelSelector: CATALOG_LABEL }),
      CATALOG_LABEL,
    );
    const onCm = (cm: V1ConfigMap) => {
      for (const text of Object.values(cm.data ?? {})) {
        if (!text.startsWith('{')) continue;
        for (const m of text.matchAll(
          /:agent-(\d+)","tags":\["weather"\],"type":"[^"]+","updatedAt":"[^"]+","url":"[^"]+","version":"(2\.0\.\d+)"/g,
        )) {
          const key = `${m[1]}@${m[2]}`;
          if (!seen.has(key)) seen.set(key, performance.now());
        }
      }
    };
    cms.on('add', onCm);
    cms.on('update', onCm);
    await cms.start();
    const changeMs: number[] = [];
    /** Of each change's time, the part until its AgentCard was Ready at the new generation. */
    const cardMs: number[] = [];
    const changesW0 = await apiWrites(kc, WRITTEN_RESOURCES);
    for (let k = 0; k < CHANGES; k++) {
      const i = Math.floor((k + 0.5) * (N / CHANGES));
      const version = `2.0.${k}`;
      const live = (await custom.getNamespacedCustomObject({
        ...CARDS,
        namespace,
        name: `agent-${i}`,
      })) as KubernetesObject;
      const startedAt = performance.now();
      const replaced = await custom.replaceNamespacedCustomObject({
        ...CARDS,
        namespace,
        name: `agent-${i}`,
        body: { ...live, spec: spec(i, version) },
      });
      const until = Date.now() + 60_000;
      while (!seen.has(`${i}@${version}`) && Date.now() < until) await sleep(20);
      if (!seen.has(`${i}@${version}`)) throw new Error(`the change of agent-${i} did not reach the catalog`);
      changeMs.push(seen.get(`${i}@${version}`)! - startedAt);
      const generation = (replaced as KubernetesObject).metadata?.generation;
      cardMs.push((readyAtGeneration.get(`agent-${i}@${generation}`) ?? NaN) - startedAt);
      await sleep(1_000);
    }
    cms.stop();
    log(`one change republished in ${changeMs.map((x) => x.toFixed(0)).join(', ')} ms`);
    log(`of which its AgentCard Ready again: ${cardMs.map((x) => x.toFixed(0)).join(', ')} ms`);
    const slowest = changeMs.indexOf(Math.max(...changeMs));
    const changeW = (await apiWrites(kc, WRITTEN_RESOURCES)) - changesW0;

    // Bytes per entry, from the published ConfigMaps.
    const published = await core.listNamespacedConfigMap({ namespace, labelSelector: CATALOG_LABEL });
    let jsonBytes = 0;
    let htmlBytes = 0;
    for (const cm of published.items)
      for (const [key, text] of Object.entries(cm.data ?? {})) {
        if (key.endsWith('.json') && key.startsWith('ai-catalog')) jsonBytes += Buffer.byteLength(text);
        if (key.endsWith('.html')) htmlBytes += Buffer.byteLength(text);
      }
    await op.stop();
    op = undefined;

    // RSS added by the catalog: the same published state, restarted with and without catalogs.
    const rss: Record<'on' | 'off', number> = { on: NaN, off: NaN };
    for (const mode of ['on', 'off'] as const) {
      op = startOperator(namespace, mode === 'on');
      await op.ready;
      await settle(kc, 10_000);
      await sleep(5_000);
      rss[mode] = op.rssMiB();
      await op.stop();
      op = undefined;
      log(`RSS, catalogs ${mode}: ${rss[mode].toFixed(0)} MiB`);
    }
    cards.stop();
    catalogs.stop();

    writeSection(
      'catalogs',
      'Catalogs',
      [
        `\`node bench/catalog.bench.ts --cards ${N} --changes ${CHANGES}\`. The local control plane (etcd, kube-apiserver, ` +
          'kube-controller-manager) runs on the same cores.',
        '',
        `${N} unsigned AgentCards in one namespace exist before a real \`agentcard operator\` process starts ` +
          '(`--no-probes`, no leader election, `--cluster-catalogs`); one ClusterAgentCatalog (unsigned, entries by URL) ' +
          'selects that namespace. Times are observed through watches from this process. The RSS comparison restarts ' +
          'the operator over the same published state, once with catalogs and once with `--no-catalogs`, and reads ' +
          'VmRSS once it has been idle for 15 s.',
        '',
        table(
          ['measure', 'result'],
          [
            ['every AgentCard Ready, from the operator start', `${allReadyS.toFixed(1)} s`],
            [
              'last AgentCard Ready to the catalog republished with all of them',
              `${(toCatalogMs / 1000).toFixed(2)} s`,
            ],
            [
              `one card changed to the catalog republished (${N} steady; ${CHANGES} changes, one at a time): median / p99 / max`,
              `${(percentile(changeMs, 50) / 1000).toFixed(2)} / ${(percentile(changeMs, 99) / 1000).toFixed(2)} / ${(Math.max(...changeMs) / 1000).toFixed(2)} s`,
            ],
            [
              'of which until the AgentCard was Ready with the change: median / p99 / max',
              `${(percentile(cardMs, 50) / 1000).toFixed(2)} / ${(percentile(cardMs, 99) / 1000).toFixed(2)} / ${(Math.max(...cardMs) / 1000).toFixed(2)} s`,
            ],
            [
              'API writes per change (the update itself, the AgentCard reconcile, the catalog rebuild)',
              (changeW / CHANGES).toFixed(1),
            ],
            ['API writes in 15 s of steady state', String(steadyWrites)],
            ['partitions', String(status.partitions ?? 0)],
            [
              'operator RSS, catalogs on / off (ratio)',
              `${rss.on.toFixed(0)} / ${rss.off.toFixed(0)} MiB (${(rss.on / rss.off).toFixed(2)}x; +${(rss.on - rss.off).toFixed(0)} MiB)`,
            ],
            ['catalog JSON bytes per entry (root and partitions)', (jsonBytes / N).toFixed(0)],
            ['page HTML bytes per entry', (htmlBytes / N).toFixed(0)],
          ],
        ),
        '',
        'The time from a change to the republished catalog includes the AgentCard reconcile (the card must be ' +
          'Ready with the new version before a catalog lists it), the wait before a rebuild (card events are gathered ' +
          "for 100 ms, and a rebuild starts only once twice the work of the catalog's last rebuild, its decision " +
          'without its writes, has passed since it ended, so that rebuilds of a catalog take at most a third of the ' +
          'process during bursts) and the ' +
          "rebuild itself, which is incremental: only the changed entry's partition is rendered again and written, " +
          'then the root (docs/catalogs.md "How it stays current"). An incremental rebuild is short, so the rest ' +
          'after it is shorter than the 100 ms gathering and a single change is not held back; only a full rebuild ' +
          '(start, a spec or key change) of a large catalog is followed by a rest of seconds. Changes are made one at ' +
          'a time, 1 s after the previous one was republished. The slowest change took ' +
          `${(changeMs[slowest]! / 1000).toFixed(2)} s, of which ${(cardMs[slowest]! / 1000).toFixed(2)} s until its ` +
          'AgentCard was Ready with it (seen through the watch) and the rest in the catalog controller.',
      ].join('\n'),
    );
  } finally {
    await op?.stop();
    await custom
      .deleteClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: 'clusteragentcatalogs',
        name: catalogName,
      })
      .catch(() => {});
    await core.deleteNamespace({ name: namespace }).catch(() => {});
    if (started) await down(log);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`catalog benchmark failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
