/* eslint-disable @typescript-eslint/no-explicit-any -- the tests break Pods on purpose */
/** The webhook's HTTPS server on loopback, with certificates from a directory (cert-manager mode). */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { X509Certificate } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../operator/log.ts';
import { renewBundle } from '../../../operator/webhook/certs.ts';
import type { CertBundle } from '../../../operator/webhook/certs.ts';
import { KubeClient } from '../../../operator/kube/client.ts';
import {
  MUTATE_PATH,
  startWebhook,
  WEBHOOK_LIMITS,
  type WebhookLimits,
} from '../../../operator/webhook/server.ts';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { admissionReview } from '../../support/admission.ts';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function writeCerts(dir: string, b: CertBundle) {
  await writeFile(join(dir, 'tls.crt'), b.cert);
  await writeFile(join(dir, 'tls.key'), b.key);
}

/** These tests never reach an API server (cert-manager mode, a fixed sidecar mode). */
function unusedClient(): KubeClient {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'none', server: 'https://127.0.0.1:9' }],
    users: [{ name: 'none' }],
    contexts: [{ name: 'none', cluster: 'none', user: 'none' }],
    currentContext: 'none',
  });
  return new KubeClient(kc);
}

async function start(limits: Partial<WebhookLimits> = {}, logger = createLogger({}, { write: () => {} })) {
  const dir = await mkdtemp(join(tmpdir(), 'agentcard-webhook-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const { bundle } = await renewBundle({}, ['127.0.0.1'], new Date());
  await writeCerts(dir, bundle);
  const registry = new Registry();
  const webhook = await startWebhook({
    client: unusedClient(),
    port: 0,
    host: '127.0.0.1',
    certMode: 'cert-manager',
    certDir: dir,
    secretName: 'unused',
    serviceName: 'agentcard-webhook',
    webhookConfigName: 'unused',
    operatorNamespace: 'agentcard-system',
    sidecarImage: 'example/agentcard:test',
    sidecarMode: 'native',
    logger,
    registry,
    limits,
  });
  cleanups.push(() => webhook.close());
  const agent = new Agent({ connect: { ca: bundle.caCert } });
  cleanups.push(() => agent.close());
  return { dir, bundle, webhook, agent, registry, base: `https://127.0.0.1:${webhook.port}` };
}

function peerCert(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca, servername: undefined }, () => {
      resolve(socket.getPeerX509Certificate()!.fingerprint256);
      socket.end();
    });
    socket.on('error', reject);
  });
}

describe('webhook server', () => {
  it('on close, answers a review already in flight, then refuses new connections', async () => {
    const { bundle, webhook } = await start();
    const body = JSON.stringify(admissionReview({ 'agentcard.dev/inject': 'weather' }));
    const socket = connect({ host: '127.0.0.1', port: webhook.port, ca: bundle.caCert });
    await new Promise<void>((resolve, reject) => {
      socket.once('secureConnect', resolve);
      socket.once('error', reject);
    });
    let answer = '';
    socket.on('data', (c: Buffer) => (answer += c.toString()));
    const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    // Headers and half the body: the review is in flight when close() starts.
    socket.write(
      `POST ${MUTATE_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 100)}`,
    );
    await new Promise((r) => setTimeout(r, 50));
    const closed = webhook.close();
    socket.write(body.slice(100));
    await closed;
    await ended;
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    expect(answer).toContain('"patch"');
    const refused = await new Promise<string>((resolve) => {
      const s = connect({ host: '127.0.0.1', port: webhook.port, ca: bundle.caCert }, () => {
        s.destroy();
        resolve('connected');
      });
      s.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? ''));
    });
    expect(refused).toBe('ECONNREFUSED');
  });

  it('refuses to start without a sidecar image or, in cert-manager mode, a certificate directory', async () => {
    const base = {
      client: unusedClient(),
      port: 0,
      operatorNamespace: 'agentcard-system',
      sidecarMode: 'native' as const,
      logger: createLogger({}, { write: () => {} }),
      registry: new Registry(),
    };
    await expect(
      startWebhook({ ...base, certMode: 'cert-manager', certDir: '/x', sidecarImage: '' }),
    ).rejects.toThrow('the admission webhook needs --sidecar-image (the image to inject)');
    await expect(startWebhook({ ...base, certMode: 'cert-manager', sidecarImage: 'img' })).rejects.toThrow(
      '--webhook-cert-mode cert-manager needs --webhook-cert-dir',
    );
  });

  it('answers an AdmissionReview over HTTPS with the sidecar patch', async () => {
    const { base, agent, registry } = await start();
    const res = await request(base + MUTATE_PATH, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(admissionReview({ 'agentcard.dev/inject': 'weather' })),
    });
    expect(res.statusCode).toBe(200);
    const body = (await res.body.json()) as { response: { uid: string; allowed: boolean; patch: string } };
    expect(body.response.uid).toBe('e911857d-c318-11e8-bbad-025000000001');
    expect(body.response.allowed).toBe(true);
    const ops = JSON.parse(Buffer.from(body.response.patch, 'base64').toString()) as { path: string }[];
    expect(ops.map((o) => o.path)).toEqual(['/spec/initContainers', '/spec/volumes', '/metadata/labels']);
    expect(await registry.getSingleMetricAsString('agentcard_webhook_reviews_total')).toContain(
      'agentcard_webhook_reviews_total{result="injected"} 1',
    );
  });

  it('logs an injection at debug only, a refused one at info; the counter counts both', async () => {
    for (const level of ['info', 'debug'] as const) {
      const lines: Array<{ level: string; msg: string; pod?: string; reason?: string }> = [];
      const logger = createLogger({}, { level, write: (line) => lines.push(JSON.parse(line)) });
      const { base, agent, registry } = await start({}, logger);
      const send = async (annotations: Record<string, string>) => {
        const res = await request(base + MUTATE_PATH, {
          method: 'POST',
          dispatcher: agent,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(admissionReview(annotations)),
        });
        expect(res.statusCode).toBe(200);
        await res.body.dump();
      };
      await send({ 'agentcard.dev/inject': 'weather' });
      await send({ 'agentcard.dev/inject': 'Not A Name' }); // refused: not a resource name
      const metric = await registry.getSingleMetricAsString('agentcard_webhook_reviews_total');
      expect(metric).toContain('agentcard_webhook_reviews_total{result="injected"} 1');
      expect(metric).toContain('agentcard_webhook_reviews_total{result="skipped"} 1');
      const about = lines.filter((l) => l.msg.startsWith('sidecar '));
      expect(about.map((l) => [l.level, l.msg])).toEqual([
        ...(level === 'debug' ? [['debug', 'sidecar injected']] : []),
        ['info', 'sidecar not injected'],
      ]);
    }
  });

  it("exports the serving certificate's expiry for the WebhookCertificateExpiring alert", async () => {
    const { bundle, registry } = await start();
    const expected = Date.parse(new X509Certificate(bundle.cert).validTo) / 1000;
    const text = await registry.getSingleMetricAsString('agentcard_webhook_cert_not_after_seconds');
    const value = Number(/^agentcard_webhook_cert_not_after_seconds (\S+)$/m.exec(text)?.[1]);
    expect(value).toBe(expected);
    expect(value * 1000).toBeGreaterThan(Date.now());
  });

  it('allows a Pod without the annotation untouched and rejects malformed reviews with 400', async () => {
    const { base, agent } = await start();
    const res = await request(base + MUTATE_PATH, {
      method: 'POST',
      dispatcher: agent,
      body: JSON.stringify(admissionReview()),
    });
    const body = (await res.body.json()) as { response: Record<string, unknown> };
    expect(body.response).toEqual({ uid: 'e911857d-c318-11e8-bbad-025000000001', allowed: true });
    const bad = await request(base + MUTATE_PATH, {
      method: 'POST',
      dispatcher: agent,
      body: '{"kind":"Pod"}',
    });
    expect(bad.statusCode).toBe(400);
    expect(await bad.body.text()).toContain("kind is not 'AdmissionReview'");
    const get = await request(base + MUTATE_PATH, { dispatcher: agent });
    expect(get.statusCode).toBe(405);
    await get.body.dump();
  });

  it('answers type-confused Pods with 400 naming the field, never 500', async () => {
    const { base, agent } = await start();
    const confused: Array<[string, (pod: Record<string, any>) => void, RegExp]> = [
      [
        'annotation object',
        (p) => (p.metadata.annotations = { 'agentcard.dev/inject': { x: 1 } }),
        /annotations\["agentcard\.dev\/inject"\] is not a string/,
      ],
      ['annotations list', (p) => (p.metadata.annotations = ['a']), /metadata\.annotations is not a map/],
      [
        'initContainers object',
        (p) => (p.spec.initContainers = { name: 'x' }),
        /spec\.initContainers is not a list/,
      ],
      [
        'containers of strings',
        (p) => (p.spec.containers = ['agent']),
        /spec\.containers\[0\] is not an object/,
      ],
      [
        'ports object',
        (p) => (p.spec.containers[0].ports = { containerPort: 8095 }),
        /containers\[0\]\.ports is not a list/,
      ],
      [
        'volume configMap string',
        (p) => (p.spec.volumes = [{ name: 'v', configMap: 'x' }]),
        /volumes\[0\]\.configMap is not an object/,
      ],
      ['metadata string', (p) => (p.metadata = 'x'), /metadata is not an object/],
      ['spec list', (p) => (p.spec = []), /spec is not an object/],
    ];
    for (const [what, mutate, why] of confused) {
      const review = admissionReview({ 'agentcard.dev/inject': 'weather' });
      mutate(review.request.object as Record<string, any>);
      const res = await request(base + MUTATE_PATH, {
        method: 'POST',
        dispatcher: agent,
        body: JSON.stringify(review),
      });
      expect(res.statusCode, what).toBe(400);
      expect(await res.body.text(), what).toMatch(why);
    }
  });

  it('refuses a declared body over the limit unread (413)', async () => {
    const { base, agent } = await start();
    const res = await request(base + MUTATE_PATH, {
      method: 'POST',
      dispatcher: agent,
      headers: { 'content-length': String(WEBHOOK_LIMITS.maxBodyBytes + 1) },
      body: Buffer.alloc(WEBHOOK_LIMITS.maxBodyBytes + 1, 0x20),
    }).catch((err: unknown) => err as Error);
    // The server answers 413 and closes; the client may see the answer or the closed socket.
    if ('statusCode' in res) expect(res.statusCode).toBe(413);
    else expect(String(res)).toMatch(/closed|reset|EPIPE|other side/i);
  });

  it('a flood of stalled connections: the excess is answered 429, the rest closed, and the buffers are freed', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    // Long enough for all 40 to be sending at once on a loaded machine (the client and the
    // server encrypt 80 MiB in this one process), short enough for a quick test.
    const limits = {
      maxConcurrentReviews: 32,
      idleTimeoutMs: 4_000,
      headersTimeoutMs: 4_000,
      requestTimeoutMs: 10_000,
      checkIntervalMs: 200,
    };
    const { webhook, bundle, base, agent, registry } = await start(limits);
    const flood = 40;
    const declared = WEBHOOK_LIMITS.maxBodyBytes - 1024;
    const payload = Buffer.alloc(declared - 1, 0x20); // one byte short: the sender then stalls
    gc();
    const baseline = process.memoryUsage();
    let peak = baseline.arrayBuffers;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().arrayBuffers)), 10);

    const outcomes = await Promise.all(
      Array.from(
        { length: flood },
        () =>
          new Promise<'throttled' | 'closed-by-server'>((resolve, reject) => {
            let answer = '';
            const socket = connect({ host: '127.0.0.1', port: webhook.port, ca: bundle.caCert }, () => {
              socket.write(
                `POST ${MUTATE_PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n`,
              );
              socket.write(payload);
            });
            socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
            socket.on('error', () => {});
            socket.on('close', () => {
              if (answer.startsWith('HTTP/1.1 429')) resolve('throttled');
              else if (answer === '' || answer.startsWith('HTTP/1.1 408')) resolve('closed-by-server');
              else reject(new Error(`unexpected answer: ${answer.slice(0, 80)}`));
            });
          }),
      ),
    );
    clearInterval(sampler);
    expect(outcomes.filter((o) => o === 'throttled')).toHaveLength(flood - limits.maxConcurrentReviews);
    expect(outcomes.filter((o) => o === 'closed-by-server')).toHaveLength(limits.maxConcurrentReviews);
    expect(await registry.getSingleMetricAsString('agentcard_webhook_reviews_total')).toContain(
      `agentcard_webhook_reviews_total{result="throttled"} ${flood - limits.maxConcurrentReviews}`,
    );

    // Freed ArrayBuffers are released by a later collection than the one that finds them dead.
    for (let i = 0; i < 3; i++) {
      gc();
      await new Promise((r) => setImmediate(r));
    }
    const after = process.memoryUsage();
    const mib = (n: number) => Math.round((n / 1024 / 1024) * 10) / 10;
    console.info(
      `webhook flood of ${flood} stalled ${mib(declared)} MiB bodies: array buffers ${mib(baseline.arrayBuffers)} -> peak ${mib(peak)} -> ${mib(after.arrayBuffers)} MiB after close; RSS ${mib(baseline.rss)} -> ${mib(after.rss)} MiB`,
    );
    // Generous bounds: at most the concurrent cap's worth of bodies was ever held, and nothing
    // of it is retained once the connections are gone.
    expect(peak - baseline.arrayBuffers).toBeLessThan(
      limits.maxConcurrentReviews * WEBHOOK_LIMITS.maxBodyBytes + 16 * 2 ** 20,
    );
    expect(after.arrayBuffers - baseline.arrayBuffers).toBeLessThan(8 * 2 ** 20);

    // Still serving.
    const res = await request(base + MUTATE_PATH, {
      method: 'POST',
      dispatcher: agent,
      body: JSON.stringify(admissionReview()),
    });
    expect(res.statusCode).toBe(200);
    await res.body.dump();
  });

  it('serves a rotated certificate from the directory without a restart', async () => {
    const { dir, webhook, bundle } = await start();
    const before = await peerCert(webhook.port, bundle.caCert);
    const { bundle: next } = await renewBundle(
      { caCert: bundle.caCert, caKey: bundle.caKey, caBundle: bundle.caCert },
      ['127.0.0.1'],
      new Date(),
    );
    await writeCerts(dir, next);
    const want = new X509Certificate(next.cert).fingerprint256;
    const until = Date.now() + 5000;
    let seen = before;
    while (seen !== want && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 50));
      seen = await peerCert(webhook.port, bundle.caCert);
    }
    expect(before).toBe(new X509Certificate(bundle.cert).fingerprint256);
    expect(seen).toBe(want);
  });
});
