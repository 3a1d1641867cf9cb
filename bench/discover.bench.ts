/**
 * `agentcard discover` throughput: 1,000 signed cards listed in one AI Catalog, served by a plain
 * node:http server in a child process on 127.0.0.1. Measured: cards fetched, validated (schema,
 * lint) and verified per second by discover() with its bounded concurrency, against the floor
 * a user would write: a plain loop of fetch() + @a2a-js/sdk's verifyAgentCardSignature per card
 * (no validation, no limits, no address policy). Both sides run in this process, alternately,
 * RUNS times each; the server runs in its own process. Writes the `## Discover` section of
 * docs/BENCHMARKS.md.
 *
 *   node bench/discover.bench.ts          (env: DISCOVER_BENCH_CARDS, DISCOVER_BENCH_RUNS)
 */
import { fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './stats.ts';

if (process.argv[2] === '--serve') {
  // Child: serve the files of a directory from memory, keep-alive, until the parent goes away.
  const dir = process.argv[3]!;
  const cache = new Map<string, Buffer>();
  const server = http.createServer((req, res) => {
    const name = (req.url ?? '/').slice(1);
    let body = cache.get(name);
    if (!body && /^[\w.-]+$/.test(name)) {
      try {
        body = readFileSync(join(dir, name));
        cache.set(name, body);
      } catch {
        body = undefined;
      }
    }
    if (!body) res.writeHead(404).end();
    else res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length }).end(body);
  });
  server.keepAliveTimeout = 30_000;
  server.listen(0, '127.0.0.1', () => process.send!((server.address() as { port: number }).port));
  process.on('disconnect', () => process.exit(0));
} else {
  await main();
}

async function main(): Promise<void> {
  const { verifyAgentCardSignature } = await import('@a2a-js/sdk');
  const { generateSigningJwk } = await import('../operator/card/keygen.ts');
  const { renderV1 } = await import('../operator/card/render.ts');
  const { importSigningKey, publicJwks, signCard } = await import('../operator/card/sign.ts');
  const { validateCard } = await import('../operator/card/validate.ts');
  const { discover } = await import('../operator/discover/discover.ts');
  const { createAddressPolicy } = await import('../operator/probe/policy.ts');
  const { machine, replaceSection, table } = await import('./report.ts');

  const CARDS = Number(process.env.DISCOVER_BENCH_CARDS ?? 1000);
  const RUNS = Number(process.env.DISCOVER_BENCH_RUNS ?? 9);
  const CONCURRENCY = 16;

  const key = await importSigningKey(JSON.stringify(await generateSigningJwk('ES256', 'bench')));
  const jwks = publicJwks([key]);
  const dir = await mkdtemp(join(tmpdir(), 'discover-bench-'));
  for (let i = 0; i < CARDS; i++) {
    const { card } = validateCard({
      name: `Bench Agent ${i}`,
      description: `Benchmark agent number ${i}, answering questions about its own number.`,
      supportedInterfaces: [
        { url: `https://agent-${i}.example.com/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      ],
      version: '1.0.0',
      capabilities: { streaming: true },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [{ id: 'count', name: 'Count', description: 'Counts to its number.', tags: ['numbers'] }],
    });
    await writeFile(join(dir, `card-${i}.json`), JSON.stringify(await signCard(renderV1(card!), [key])));
  }

  const child = fork(fileURLToPath(import.meta.url), ['--serve', dir], { stdio: 'inherit' });
  const port = await new Promise<number>((resolve) => child.once('message', (m) => resolve(m as number)));
  const origin = `http://127.0.0.1:${port}`;
  const urls = Array.from({ length: CARDS }, (_, i) => `${origin}/card-${i}.json`);
  await writeFile(
    join(dir, 'catalog.json'),
    JSON.stringify({
      specVersion: '1.0',
      entries: urls.map((url, i) => ({
        identifier: `urn:air:bench.example:a2a:${i}`,
        type: 'application/a2a-agent-card+json',
        url,
      })),
    }),
  );
  const policy = createAddressPolicy({ allowCidrs: ['127.0.0.0/8'] });

  type Sample = { ms: number; cpuMs: number };
  const cpuMs = (since: NodeJS.CpuUsage) => {
    const used = process.cpuUsage(since);
    return (used.user + used.system) / 1000;
  };

  async function ours(): Promise<Sample> {
    const cpu = process.cpuUsage();
    const start = performance.now();
    const report = await discover({
      urls: [`${origin}/catalog.json`],
      policy,
      jwks,
      limits: { concurrency: CONCURRENCY, maxDocuments: CARDS + 1 },
    });
    const ms = performance.now() - start;
    const cpuUsed = cpuMs(cpu);
    const verified = report.cards.filter((c) => c.signature.status === 'verified').length;
    if (verified !== CARDS || report.errors.length)
      throw new Error(`discover verified ${verified}/${CARDS}, ${report.errors.length} errors`);
    return { ms, cpuMs: cpuUsed };
  }

  async function floor(): Promise<Sample> {
    const verify = verifyAgentCardSignature(async () => jwks.keys[0]!);
    const cpu = process.cpuUsage();
    const start = performance.now();
    await (await fetch(`${origin}/catalog.json`)).json();
    let verified = 0;
    for (const url of urls) {
      const card = (await (await fetch(url)).json()) as Parameters<typeof verify>[0];
      await verify(card);
      verified++;
    }
    const ms = performance.now() - start;
    const cpuUsed = cpuMs(cpu);
    if (verified !== CARDS) throw new Error('floor did not verify every card');
    return { ms, cpuMs: cpuUsed };
  }

  try {
    // One warm-up of each, then RUNS alternating pairs.
    await ours();
    await floor();
    const times: { ours: Sample[]; floor: Sample[] } = { ours: [], floor: [] };
    for (let r = 0; r < RUNS; r++) {
      times.ours.push(await ours());
      times.floor.push(await floor());
      const [o, f] = [times.ours.at(-1)!, times.floor.at(-1)!];
      process.stdout.write(
        `run ${r + 1}: discover ${o.ms.toFixed(0)} ms (cpu ${o.cpuMs.toFixed(0)} ms), floor ${f.ms.toFixed(0)} ms (cpu ${f.cpuMs.toFixed(0)} ms)\n`,
      );
    }
    const perSecond = (ms: number) => Math.round((CARDS / ms) * 1000);
    const o = median(times.ours.map((t) => t.ms));
    const f = median(times.floor.map((t) => t.ms));
    const oCpu = median(times.ours.map((t) => t.cpuMs));
    const fCpu = median(times.floor.map((t) => t.cpuMs));
    const pairRatios = times.ours.map((t, i) => times.floor[i]!.ms / t.ms).sort((a, b) => a - b);
    const runs = (list: Sample[]) => list.map((t) => t.ms.toFixed(0)).join(', ');
    const body = [
      '## Discover',
      '',
      `Run ${new Date().toISOString().slice(0, 10)} on: ${machine()}.`,
      '',
      `${CARDS} ES256-signed cards listed in one AI Catalog, served by a plain node:http server (keep-alive) in a child process on 127.0.0.1. ` +
        `\`discover()\` fetches the catalog and every card (${CONCURRENCY} in flight, address policy checked on each connection, bodies capped), ` +
        'validates each card (schema, lint, credentials) and verifies its signature against a trusted JWKS. ' +
        'The floor is a plain loop of `fetch()` + `@a2a-js/sdk` `verifyAgentCardSignature` per card, one at a time, with no validation and no limits. ' +
        `Median of ${RUNS} alternating runs after one warm-up each (\`node bench/discover.bench.ts\`). ` +
        'CPU is this process only (user + system; the server is a separate process): it depends less than wall time on what else the machine runs.',
      '',
      table(
        ['', 'median wall time', 'cards verified / s', 'CPU per card', 'runs (ms)'],
        [
          [
            'discover (bounded concurrency)',
            `${o.toFixed(0)} ms`,
            perSecond(o),
            `${(oCpu / CARDS).toFixed(2)} ms`,
            runs(times.ours),
          ],
          [
            'floor: fetch + a2a-js verify loop',
            `${f.toFixed(0)} ms`,
            perSecond(f),
            `${(fCpu / CARDS).toFixed(2)} ms`,
            runs(times.floor),
          ],
        ],
      ),
      '',
      `discover: **${(f / o).toFixed(2)}x** the floor's throughput (per-run pairs: ${pairRatios[0]!.toFixed(2)}x to ${pairRatios.at(-1)!.toFixed(2)}x), ` +
        `**${(oCpu / fCpu).toFixed(2)}x** its CPU per card (it also validates every card).`,
    ].join('\n');
    replaceSection('discover', body);
    process.stdout.write(`${body}\n`);
  } finally {
    if (child.connected) child.disconnect();
    child.kill();
    await rm(dir, { recursive: true, force: true });
  }
}
