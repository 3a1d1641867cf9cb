// The rest after a catalog's rebuild counts the operator's work, not the API server's
// (controllers/catalogs/pacing.ts), on the real API server: a validating webhook that answers
// catalog ConfigMap writes 3 s late makes every rebuild's write slow; a card changed right after
// such a rebuild must still reach the catalog within its own slow write, not wait twice the last
// write first.
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { AdmissionregistrationV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { CATALOG_LABEL } from '../../operator/api/names.ts';
import { createTestCa } from '../support/tls-certs.ts';
import { sampleCard, useOperatorInNamespace, waitFor } from '../support/operator.ts';

const { kc, api, ns } = useOperatorInNamespace('catalog-pacing', { catalogs: true });
const custom = kc.makeApiClient(CustomObjectsApi);
const core = kc.makeApiClient(CoreV1Api);
const admission = kc.makeApiClient(AdmissionregistrationV1Api);

/** How late the webhook answers each catalog ConfigMap write. */
const WRITE_DELAY_MS = 3_000;

// The shared sample card, under each agent's own name and origin.
const spec = (agent: string, version: string) => ({
  card: sampleCard(version, {
    name: `Agent ${agent}`,
    supportedInterfaces: [
      { url: `https://${agent}.example.com/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ],
  }),
});

/** Whether the published catalog lists the AgentCard `name` at `version`. */
async function lists(name: string, version: string): Promise<boolean> {
  const cm = await api.getConfigMap(ns.name, 'paced-ai-catalog');
  const text = cm?.data?.['ai-catalog.json'];
  if (!text) return false;
  const doc = JSON.parse(text) as { entries?: Array<{ identifier?: string; version?: string }> };
  return (doc.entries ?? []).some((e) => e.identifier?.endsWith(`:${name}`) && e.version === version);
}
const listed = (name: string, version: string) =>
  waitFor(`${name} ${version} in the catalog`, () => lists(name, version));

/** A webhook on loopback that allows every write it is asked about, WRITE_DELAY_MS late. */
async function slowWebhook(): Promise<{ caPem: string; port: number; close: () => void }> {
  const ca = await createTestCa('catalog pacing webhook CA');
  const leaf = await ca.issue({ ips: ['127.0.0.1'] });
  const server = https.createServer({ cert: leaf.cert, key: leaf.key }, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const uid = (JSON.parse(body) as { request?: { uid?: string } }).request?.uid;
      setTimeout(() => {
        res.setHeader('Content-Type', 'application/json');
        res.end(
          JSON.stringify({
            apiVersion: 'admission.k8s.io/v1',
            kind: 'AdmissionReview',
            response: { uid, allowed: true },
          }),
        );
      }, WRITE_DELAY_MS);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    caPem: ca.cert,
    port: (server.address() as AddressInfo).port,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

describe('the rest after a catalog rebuild', () => {
  it('does not count a slow write: a change right after one is published within its own write', async () => {
    await api.createCard(ns.name, 'alpha', spec('alpha', '1.0.0'));
    await api.createCard(ns.name, 'beta', spec('beta', '1.0.0'));
    await custom.createNamespacedCustomObject({
      group: 'agentcard.dev',
      version: 'v1alpha1',
      plural: 'agentcatalogs',
      namespace: ns.name,
      body: {
        apiVersion: 'agentcard.dev/v1alpha1',
        kind: 'AgentCatalog',
        metadata: { name: 'paced' },
        spec: { publisher: 'example.com' },
      },
    });
    await listed('alpha', '1.0.0');
    await listed('beta', '1.0.0');

    const webhook = await slowWebhook();
    const name = `slow-catalog-writes-${ns.name}`;
    await admission.createValidatingWebhookConfiguration({
      body: {
        metadata: { name },
        webhooks: [
          {
            name: 'slow.catalogs.agentcard.dev',
            admissionReviewVersions: ['v1'],
            sideEffects: 'None',
            failurePolicy: 'Fail',
            timeoutSeconds: 10,
            clientConfig: {
              url: `https://127.0.0.1:${webhook.port}/validate`,
              caBundle: Buffer.from(webhook.caPem).toString('base64'),
            },
            rules: [
              {
                apiGroups: [''],
                apiVersions: ['v1'],
                operations: ['CREATE', 'UPDATE'],
                resources: ['configmaps'],
              },
            ],
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns.name } },
            objectSelector: { matchExpressions: [{ key: CATALOG_LABEL, operator: 'Exists' }] },
          },
        ],
      },
    });
    try {
      // In force once a dry-run write of a catalog-labelled ConfigMap takes the delay.
      await waitFor('the slow webhook in force', async () => {
        const start = performance.now();
        await core.createNamespacedConfigMap({
          namespace: ns.name,
          body: { metadata: { name: 'webhook-check', labels: { [CATALOG_LABEL]: 'x' } } },
          dryRun: 'All',
        });
        return performance.now() - start >= WRITE_DELAY_MS;
      });

      // A rebuild whose write takes the delay: under a rest of twice the whole rebuild, the next
      // one could not start for more than 2 x WRITE_DELAY_MS after it.
      await api.replaceSpec(ns.name, 'alpha', spec('alpha', '1.0.1'));
      await listed('alpha', '1.0.1');
      const changed = performance.now();
      await api.replaceSpec(ns.name, 'beta', spec('beta', '1.0.1'));
      await listed('beta', '1.0.1');
      const elapsed = performance.now() - changed;
      // Its own slow write, the card's reconcile and the 100 ms gathering: about 3.2 s on an idle
      // machine. A rest counting the last rebuild's write would first wait 2 x WRITE_DELAY_MS
      // from about when alpha was listed, then write: 9 s or more (6.0 s with a 2 s delay, measured
      // with the rule before).
      expect(elapsed).toBeGreaterThanOrEqual(WRITE_DELAY_MS);
      expect(elapsed).toBeLessThan(2.5 * WRITE_DELAY_MS);
    } finally {
      await admission.deleteValidatingWebhookConfiguration({ name }).catch(() => {});
      webhook.close();
    }
  });
});
