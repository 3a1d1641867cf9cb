/**
 * The chart's MutatingWebhookConfiguration in namespace-scoped mode (`watchNamespaces`), as the
 * real kube-apiserver evaluates it: an annotated Pod in a watched namespace is sent to the webhook,
 * one in a namespace the release does not watch (where no card is ever published, so an injected
 * sidecar would answer 503 forever) and one in the release namespace are not.
 *
 * The configuration is the one `helm template` renders; only its clientConfig is pointed at an
 * HTTPS server on loopback that records which namespaces the API server sends, and allows all.
 */
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  type V1MutatingWebhookConfiguration,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INJECT_ANNOTATION } from '../../operator/api/names.ts';
import { createCA, issueServingCert } from '../../operator/webhook/certs.ts';
import { createTestNamespace, kubeConfig, type TestNamespace } from '../support/cluster.ts';
import { render } from '../unit/helm/chart.ts';

const kc = kubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const admission = kc.makeApiClient(AdmissionregistrationV1Api);

let releaseNs: TestNamespace;
let watchedNs: TestNamespace;
let otherNs: TestNamespace;
let server: Server;
let configName: string;
/** The namespace of every AdmissionReview received, in order. */
const seen: string[] = [];
let podNo = 0;

beforeAll(async () => {
  [releaseNs, watchedNs, otherNs] = await Promise.all([
    createTestNamespace('whns-release', kc),
    createTestNamespace('whns-watched', kc),
    createTestNamespace('whns-other', kc),
  ]);
  const ca = await createCA(new Date(), 'whns-test-ca');
  const serving = await issueServingCert(ca, ['127.0.0.1'], new Date());
  server = createServer({ cert: serving.cert, key: serving.key }, (req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const review = JSON.parse(body) as { request: { uid: string; namespace: string } };
      seen.push(review.request.namespace);
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: { uid: review.request.uid, allowed: true },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  // The chart's own rendering, watching one namespace, released in another.
  const rendered = await render({ watchNamespaces: [watchedNs.name] }, ['--namespace', releaseNs.name]);
  const config = rendered.one('MutatingWebhookConfiguration') as unknown as V1MutatingWebhookConfiguration;
  configName = `whns-${watchedNs.name}`;
  config.metadata = { name: configName };
  for (const hook of config.webhooks ?? []) {
    hook.clientConfig = {
      url: `https://127.0.0.1:${port}/mutate-pods`,
      caBundle: Buffer.from(ca.cert).toString('base64'),
    };
  }
  await admission.createMutatingWebhookConfiguration({ body: config });
});

afterAll(async () => {
  if (configName) await admission.deleteMutatingWebhookConfiguration({ name: configName }).catch(() => {});
  server?.close();
  await Promise.all([releaseNs, watchedNs, otherNs].map((ns) => ns?.cleanup()));
});

/** Creates an annotated Pod, retrying while the namespace's default ServiceAccount is missing. */
async function createAnnotatedPod(namespace: string): Promise<void> {
  const name = `pod-${++podNo}`;
  for (let attempt = 0; ; attempt++) {
    try {
      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name, annotations: { [INJECT_ANNOTATION]: 'agent' } },
          spec: {
            automountServiceAccountToken: false,
            containers: [{ name: 'agent', image: 'registry.example/agent:1' }],
          },
        },
      });
      return;
    } catch (err) {
      if (attempt > 40 || !String(err).includes('serviceaccount')) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

describe('webhook namespaces follow watchNamespaces (real kube-apiserver)', () => {
  it('sends Pods of the watched namespace only, never those of other namespaces', async () => {
    // The API server picks up a new configuration within a second or so: wait until a Pod of
    // the watched namespace reaches the webhook. Admission is synchronous, so once a create has
    // returned, its review has been received (or was never sent).
    const until = Date.now() + 30_000;
    while (!seen.includes(watchedNs.name)) {
      if (Date.now() > until) throw new Error('the webhook never received a Pod of the watched namespace');
      await createAnnotatedPod(watchedNs.name);
    }

    const before = seen.length;
    await createAnnotatedPod(otherNs.name);
    await createAnnotatedPod(releaseNs.name);
    expect(seen.slice(before)).toEqual([]);

    // Still registered and working: the next watched Pod is sent.
    await createAnnotatedPod(watchedNs.name);
    expect(seen.slice(before)).toEqual([watchedNs.name]);
    expect(new Set(seen)).toEqual(new Set([watchedNs.name]));
  });
});
