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
import { MUTATE_PATH, startWebhook } from '../../../operator/webhook/server.ts';

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

async function start() {
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
    logger: createLogger({}, { write: () => {} }),
    registry,
  });
  cleanups.push(() => webhook.close());
  const agent = new Agent({ connect: { ca: bundle.caCert } });
  cleanups.push(() => agent.close());
  return { dir, bundle, webhook, agent, registry, base: `https://127.0.0.1:${webhook.port}` };
}

const admissionReview = (annotations?: Record<string, string>) => ({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: 'e911857d-c318-11e8-bbad-025000000001',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    operation: 'CREATE',
    namespace: 'team-a',
    object: {
      metadata: { generateName: 'agent-', namespace: 'team-a', ...(annotations ? { annotations } : {}) },
      spec: { containers: [{ name: 'agent', image: 'agent:1' }] },
    },
  },
});

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
    expect(ops.map((o) => o.path)).toEqual(['/spec/initContainers', '/spec/volumes']);
    expect(await registry.getSingleMetricAsString('agentcard_webhook_reviews_total')).toContain(
      'agentcard_webhook_reviews_total{result="injected"} 1',
    );
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
