/**
 * The admission webhook under a flood of stalled connections: 40 clients each declare an
 * AdmissionReview just under the body limit, send all of it but the last byte, and stall. The
 * webhook runs in its own process (cert-manager mode: no API server needed); its memory is read
 * before, at the peak, and after the connections are gone (after a full GC), for the current
 * limits and for the previous settings (4 MiB bodies, no cap on reviews read at once, 15 s
 * request timeout checked every 30 s, no idle timeout), side by side in one run. Bounded: 40
 * connections per configuration, each closed by the server or after 40 s.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { KubeClient } from '../operator/kube/client.ts';
import { createLogger } from '../operator/log.ts';
import { renewBundle } from '../operator/webhook/certs.ts';
import { MUTATE_PATH, startWebhook, WEBHOOK_LIMITS, type WebhookLimits } from '../operator/webhook/server.ts';
import { table, writeSection } from './report.ts';

const FLOOD = 40;
const PREVIOUS: Partial<WebhookLimits> = {
  maxBodyBytes: 4 * 1024 * 1024,
  maxConcurrentReviews: Number.MAX_SAFE_INTEGER,
  maxConnections: Number.MAX_SAFE_INTEGER,
  requestTimeoutMs: 15_000,
  headersTimeoutMs: 10_000,
  idleTimeoutMs: 0,
  checkIntervalMs: 30_000,
};
type Memory = { rss: number; heapUsed: number; arrayBuffers: number };

/** The child: a webhook on loopback; answers "mem" (after a GC when asked) over IPC. */
async function child(limits: Partial<WebhookLimits>): Promise<void> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const dir = await mkdtemp(join(tmpdir(), 'webhook-flood-'));
  const { bundle } = await renewBundle({}, ['127.0.0.1'], new Date());
  await writeFile(join(dir, 'tls.crt'), bundle.cert);
  await writeFile(join(dir, 'tls.key'), bundle.key);
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'none', server: 'https://127.0.0.1:9' }],
    users: [{ name: 'none' }],
    contexts: [{ name: 'none', cluster: 'none', user: 'none' }],
    currentContext: 'none',
  });
  const webhook = await startWebhook({
    client: new KubeClient(kc),
    port: 0,
    host: '127.0.0.1',
    certMode: 'cert-manager',
    certDir: dir,
    operatorNamespace: 'agentcard-system',
    sidecarImage: 'example/agentcard:bench',
    sidecarMode: 'native',
    logger: createLogger({}, { write: () => {} }),
    registry: new Registry(),
    limits,
  });
  process.on('message', async ({ id, op }: { id: number; op: string }) => {
    if (op === 'stop') {
      await webhook.close();
      await rm(dir, { recursive: true, force: true });
      process.exit(0);
    }
    if (op === 'gc') {
      for (let i = 0; i < 3; i++) {
        gc();
        await new Promise((r) => setImmediate(r));
      }
    }
    const { rss, heapUsed, arrayBuffers } = process.memoryUsage();
    process.send!({ id, rss, heapUsed, arrayBuffers });
  });
  process.send!({ port: webhook.port, ca: bundle.caCert });
}

let asked = 0;
/** Asks the child for its memory (after a GC for 'gc'); answers are matched by id. */
function ask(proc: ChildProcess, op: 'mem' | 'gc'): Promise<Memory> {
  const id = ++asked;
  return new Promise((resolve) => {
    const onMessage = (x: unknown) => {
      if ((x as { id?: number }).id !== id) return;
      proc.off('message', onMessage);
      resolve(x as Memory);
    };
    proc.on('message', onMessage);
    proc.send({ id, op });
  });
}

async function flood(label: string, limits: Partial<WebhookLimits>) {
  const proc = fork(fileURLToPath(import.meta.url), ['--child', JSON.stringify(limits)]);
  const { port, ca } = await new Promise<{ port: number; ca: string }>((r) =>
    proc.once('message', (x) => r(x as { port: number; ca: string })),
  );
  const maxBody = limits.maxBodyBytes ?? WEBHOOK_LIMITS.maxBodyBytes;
  const declared = maxBody - 1024;
  const payload = Buffer.alloc(declared - 1, 0x20);
  const before = await ask(proc, 'gc');
  let peak = before;
  let sent = 0;
  const started = performance.now();
  const closed = Array.from(
    { length: FLOOD },
    () =>
      new Promise<{ status: string; ms: number }>((resolve) => {
        let answer = '';
        const socket = connect({ host: '127.0.0.1', port, ca }, () => {
          socket.write(
            `POST ${MUTATE_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`,
          );
          socket.write(payload, () => sent++);
        });
        const guard = setTimeout(() => socket.destroy(), 40_000);
        socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
        socket.on('error', () => {});
        socket.on('close', () => {
          clearTimeout(guard);
          resolve({ status: answer.slice(9, 12) || 'closed', ms: performance.now() - started });
        });
      }),
  );
  // Sample the webhook's memory while the senders stall.
  const sampler = setInterval(async () => {
    const m = await ask(proc, 'mem');
    if (m.rss > peak.rss) peak = m;
  }, 200);
  const outcomes = await Promise.all(closed);
  clearInterval(sampler);
  const after = await ask(proc, 'gc');
  proc.send({ id: 0, op: 'stop' });
  const mib = (n: number) => (n / 2 ** 20).toFixed(1);
  const throttled = outcomes.filter((o) => o.status === '429').length;
  const lastClose = Math.max(...outcomes.map((o) => o.ms));
  process.stderr.write(`${label}: rss ${mib(before.rss)} -> ${mib(peak.rss)} -> ${mib(after.rss)} MiB\n`);
  return {
    row: [
      label,
      `${throttled} x 429`,
      (lastClose / 1000).toFixed(1),
      mib(before.rss),
      mib(peak.rss),
      mib(after.rss),
      mib(before.arrayBuffers),
      mib(peak.arrayBuffers),
      mib(after.arrayBuffers),
    ],
    sent,
  };
}

async function main(): Promise<void> {
  const current = await flood('current limits', {});
  const previous = await flood('previous settings', PREVIOUS);
  writeSection(
    'webhook-flood',
    'Admission webhook: stalled-connection flood',
    [
      `${FLOOD} TLS clients each declare a body just under the body limit (2 MiB now, 4 MiB before), send all of it but the last byte and stall (bench/webhook-flood.bench.ts). The webhook runs in its own process; memory after a full GC once every connection is closed. Both configurations in one run.`,
      '',
      table(
        [
          'webhook',
          'refused at once',
          'last connection closed (s)',
          'RSS before (MiB)',
          'RSS peak',
          'RSS after',
          'buffers before (MiB)',
          'buffers peak',
          'buffers after',
        ],
        [current.row, previous.row],
      ),
      '',
      'Buffers are `process.memoryUsage().arrayBuffers` (where request bodies live): released in both cases once the connections are closed. The RSS does not return to its baseline in either case (the allocator keeps the freed pages; setting `MALLOC_TRIM_THRESHOLD_` made no difference); what the limits change is how far it grows and for how long the connections hold it.',
    ].join('\n'),
  );
}

const args = process.argv.slice(2);
if (args[0] === '--child') await child(JSON.parse(args[1]!) as Partial<WebhookLimits>);
else await main();
