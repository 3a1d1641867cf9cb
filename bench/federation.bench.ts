/**
 * Federation benchmark: C remote catalogs (default 20) of A signed agents each (default 500),
 * served over HTTPS from this process, imported by C CatalogImports into one namespace of the
 * local control plane, and listed by one AgentCatalog (spec.imports), with a real
 * `agentcard operator` process (no leader election, no probes).
 *
 * Measures:
 * - the time from the CatalogImports created to the AgentCatalog's status.entries = C x A (every
 *   remote card fetched, verified, stored and listed), observed by polling from this process;
 * - the operator's RSS once steady;
 * - API writes in steady state over a quiet period (counted by the API server's metrics).
 * Results go to the `## Federation` section of docs/BENCHMARKS.md.
 *
 * Run: `node bench/federation.bench.ts [--catalogs 20] [--agents 500] [--quiet 60]`.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  loadAllYaml,
} from '@kubernetes/client-node';
import { CRD_FILE } from '../operator/card/crd.ts';
import { generateSigningJwk } from '../operator/card/keygen.ts';
import { renderV1 } from '../operator/card/render.ts';
import { importSigningKey, publicJwks, signCard } from '../operator/card/sign.ts';
import { validateCard } from '../operator/card/validate.ts';
import { CATALOG_CRDS } from '../operator/catalog/crd.ts';
import { signCatalog } from '../operator/catalog/signature.ts';
import { IMPORT_CRD_FILE } from '../operator/federation/crd.ts';
import { canonicalJson } from '../operator/card/jcs.ts';
import { down, up } from '../test/controlplane/control.ts';
import { kubeconfigFile } from '../test/controlplane/paths.ts';
import { createTestCa } from '../test/support/tls-certs.ts';
import { table, writeSection } from './report.ts';
import { apiWrites } from './api-writes.ts';

/** What the operator writes here, counted at the API server. */
const WRITTEN_RESOURCES = ['configmaps', 'catalogimports', 'agentcatalogs', 'events'];

const root = resolve(import.meta.dirname, '..');
const log = (line: string) => process.stderr.write(`[federation] ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const { values } = parseArgs({
  options: {
    catalogs: { type: 'string', default: '20' },
    agents: { type: 'string', default: '500' },
    quiet: { type: 'string', default: '60' },
  },
});
const C = Number(values.catalogs);
const A = Number(values.agents);
const QUIET_S = Number(values.quiet);
const G = { group: 'agentcard.dev', version: 'v1alpha1' };

async function applyFile(kc: KubeConfig, file: string) {
  const client = KubernetesObjectApi.makeApiClient(kc);
  for (const obj of loadAllYaml(readFileSync(join(root, file), 'utf8')) as Parameters<
    typeof client.create
  >[0][]) {
    await client.create(obj).catch((err: { code?: number }) => {
      if (err.code !== 409) throw err;
    });
  }
}

/** The remote catalogs: C signed AI Catalogs of A signed cards each (inline), as served text. */
async function remoteCatalogs(): Promise<{ catalogs: string[]; jwks: string }> {
  const key = await importSigningKey(JSON.stringify(await generateSigningJwk('ES256', 'remote')));
  const catalogs: string[] = [];
  for (let c = 0; c < C; c++) {
    const entries = [];
    for (let a = 0; a < A; a++) {
      const { card } = validateCard({
        name: `Agent ${c}-${a}`,
        description: 'Answers questions about the weather forecast for a city.',
        version: '1.0.0',
        supportedInterfaces: [
          {
            url: `https://agent-${c}-${a}.example.com/a2a`,
            protocolBinding: 'JSONRPC',
            protocolVersion: '1.0',
          },
        ],
        capabilities: { streaming: true },
        defaultInputModes: ['text/plain'],
        defaultOutputModes: ['text/plain'],
        skills: [{ id: 'forecast', name: 'Forecast', description: 'The forecast.', tags: ['weather'] }],
      });
      entries.push({
        identifier: `urn:air:remote-${c}.example.com:agents:agent-${a}`,
        type: 'application/a2a-agent-card+json',
        data: await signCard(renderV1(card!), [key]),
      });
    }
    const signed = await signCatalog({ specVersion: '1.0', entries }, key);
    catalogs.push(canonicalJson(signed));
  }
  return { catalogs, jwks: JSON.stringify(publicJwks([key])) };
}

async function main() {
  const { started: startedPlane } = await up(log);
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigFile);
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  for (const file of [CRD_FILE, ...CATALOG_CRDS.map((c) => c.file), IMPORT_CRD_FILE])
    await applyFile(kc, file);
  await sleep(2000); // the CRDs established

  log(`signing ${C} catalogs of ${A} cards`);
  const { catalogs, jwks } = await remoteCatalogs();
  const ca = await createTestCa('federation bench CA');
  const tls = await ca.issue({ ips: ['127.0.0.1'] });
  const tmp = mkdtempSync(join(tmpdir(), 'agentcard-federation-bench-'));
  writeFileSync(join(tmp, 'ca.pem'), ca.cert);
  const server = createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    const m = /^\/c(\d+)\/ai-catalog\.json$/.exec(req.url ?? '');
    const text = m ? catalogs[Number(m[1])] : undefined;
    if (!text) return res.writeHead(404).end();
    const etag = `"${Number(m![1])}"`;
    if (req.headers['if-none-match'] === etag) return res.writeHead(304, { etag }).end();
    res.writeHead(200, { 'content-type': 'application/ai-catalog+json', etag }).end(text);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;

  const ns = `federation-bench-${randomBytes(3).toString('hex')}`;
  await core.createNamespace({ body: { metadata: { name: ns } } });
  await core.createNamespacedConfigMap({
    namespace: ns,
    body: { metadata: { name: 'remote-keys' }, data: { 'jwks.json': jwks } },
  });
  const child = spawn(
    process.execPath,
    [
      join(root, 'bin', 'agentcard.js'),
      'operator',
      '--kubeconfig',
      kubeconfigFile,
      '--namespace',
      ns,
      '--operator-namespace',
      ns,
      '--no-leader-elect',
      '--no-probes',
      '--probe-allow-cidr',
      '127.0.0.1/32',
      '--probe-ca-file',
      join(tmp, 'ca.pem'),
      '--webhook-port',
      '0',
      '--metrics-port',
      '0',
      '--bind-address',
      '127.0.0.1',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, AGENTCARD_LOG_LEVEL: 'info' } },
  );
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-20000)));
  const rssMiB = () =>
    Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
  try {
    await custom.createNamespacedCustomObject({
      ...G,
      namespace: ns,
      plural: 'agentcatalogs',
      body: {
        apiVersion: 'agentcard.dev/v1alpha1',
        kind: 'AgentCatalog',
        metadata: { name: 'all' },
        spec: { entries: 'inline', imports: { selector: {} } },
      },
    });
    const started = performance.now();
    for (let c = 0; c < C; c++)
      await custom.createNamespacedCustomObject({
        ...G,
        namespace: ns,
        plural: 'catalogimports',
        body: {
          apiVersion: 'agentcard.dev/v1alpha1',
          kind: 'CatalogImport',
          metadata: { name: `remote-${c}` },
          spec: {
            url: `https://127.0.0.1:${port}/c${c}/ai-catalog.json`,
            trust: { jwks: { configMap: { name: 'remote-keys', key: 'jwks.json' } } },
            catalogSignature: 'Required',
            interval: '5m',
          },
        },
      });
    let listedMs = NaN;
    for (let i = 0; i < 2400; i++) {
      const obj = (await custom.getNamespacedCustomObject({
        ...G,
        namespace: ns,
        plural: 'agentcatalogs',
        name: 'all',
      })) as { status?: { entries?: number } };
      if (obj.status?.entries === C * A) {
        listedMs = performance.now() - started;
        break;
      }
      if (child.exitCode !== null) throw new Error(`operator exited: ${stderr.slice(-2000)}`);
      await sleep(250);
    }
    if (Number.isNaN(listedMs))
      throw new Error(`not every entry listed within 10 minutes: ${stderr.slice(-2000)}`);
    log(`listed ${C * A} imported entries in ${(listedMs / 1000).toFixed(1)} s`);
    await sleep(10_000);
    const before = await apiWrites(kc, WRITTEN_RESOURCES);
    await sleep(QUIET_S * 1000);
    const writes = (await apiWrites(kc, WRITTEN_RESOURCES)) - before;
    const rss = rssMiB();
    log(`steady: ${writes} writes in ${QUIET_S} s, RSS ${rss.toFixed(0)} MiB`);
    writeSection(
      'federation',
      'Federation',
      [
        `${C} remote AI Catalogs of ${A} signed agents each (inline cards, ES256, catalogs signed), served over ` +
          'HTTPS from the benchmark process, imported by one CatalogImport each (JWKS trust) into one namespace, ' +
          'and listed by one AgentCatalog (`spec.imports`, inline entries), with a real `agentcard operator` ' +
          `process on the local control plane. Run: \`node bench/federation.bench.ts --catalogs ${C} --agents ${A}\`` +
          (C * A < 10_000 ? ' (the default, 20 x 500, lists 10,000 entries).' : '.'),
        '',
        table(
          ['measure', 'value'],
          [
            ['imported entries listed', `${C * A}`],
            [
              'time from the CatalogImports created to every entry listed',
              `${(listedMs / 1000).toFixed(1)} s`,
            ],
            ['operator RSS, steady', `${rss.toFixed(0)} MiB`],
            [`API writes in steady state (${QUIET_S} s)`, `${writes}`],
          ],
        ),
      ].join('\n'),
    );
  } finally {
    child.kill('SIGTERM');
    server.close();
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
    rmSync(tmp, { recursive: true, force: true });
    if (startedPlane) await down(log);
  }
}

await main();
