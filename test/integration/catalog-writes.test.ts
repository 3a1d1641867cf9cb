// The catalog controller on the runtime's write path (runtime/writes.ts), on the real API server:
// the Signed wording docs/catalogs.md quotes, a signing-key Secret that appears or is deleted
// (unlabelled: seen through the metadata watch), a ConfigMap write the API server refuses (422,
// final), and the echo of its own writes (no second reconcile).
import { AdmissionregistrationV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  controllerQueue,
  installCatalogCrds,
  metricValue,
  operatorMetrics,
  privateJwk,
  useOperatorInNamespace,
  waitFor,
} from '../support/operator.ts';

const G = { group: 'agentcard.dev', version: 'v1alpha1', plural: 'agentcatalogs' };
const { kc, api, ns, op } = useOperatorInNamespace('catalog-writes', {
  before: () => installCatalogCrds(kc),
});
const custom = kc.makeApiClient(CustomObjectsApi);
const core = kc.makeApiClient(CoreV1Api);

type Cond = { type: string; status: string; reason: string; message: string };
async function conditions(name: string): Promise<Cond[]> {
  const obj = (await custom.getNamespacedCustomObject({ ...G, namespace: ns.name, name })) as {
    status?: { conditions?: Cond[] };
  };
  return obj.status?.conditions ?? [];
}
async function waitForCondition(name: string, type: string, match: (c: Cond) => boolean): Promise<Cond> {
  return waitFor(`${name} ${type}`, async () =>
    (await conditions(name)).find((c) => c.type === type && match(c)),
  );
}
async function createCatalog(name: string, spec: Record<string, unknown>) {
  await custom.createNamespacedCustomObject({
    ...G,
    namespace: ns.name,
    body: { apiVersion: 'agentcard.dev/v1alpha1', kind: 'AgentCatalog', metadata: { name }, spec },
  });
}
const metric = async (name: string, labels: Record<string, string> = {}) =>
  metricValue(await operatorMetrics(op.metricsPort()), name, labels);

describe('catalog writes through the runtime', () => {
  it('says "the catalog is signed as soon as it exists", and does so when an unlabelled key appears; a deleted key re-queues it', async () => {
    await createCatalog('keyed', {
      publisher: 'example.com',
      signing: { keys: [{ secretRef: { name: 'catalog-key', key: 'jwk' } }] },
    });
    const missing = await waitForCondition('keyed', 'Signed', (c) => c.status === 'False');
    expect(missing.reason).toBe('SigningKeyNotFound');
    expect(missing.message).toContain('the catalog is signed as soon as it exists; nothing is published yet');
    expect(missing.message).not.toContain('card');

    // An unlabelled Secret: only the metadata watch of every Secret sees it.
    await api.putSecret(ns.name, 'catalog-key', { jwk: await privateJwk('catalog-k1') }, false);
    const signed = await waitForCondition('keyed', 'Signed', (c) => c.status === 'True');
    expect(signed.message).toBe('catalog signed with catalog-k1 (ES256)');
    await waitForCondition('keyed', 'Ready', (c) => c.status === 'True');

    await core.deleteNamespacedSecret({
      namespace: ns.name,
      name: 'catalog-key',
    });
    const gone = await waitForCondition('keyed', 'Signed', (c) => c.status === 'False');
    expect(gone.reason).toBe('SigningKeyNotFound');
    expect(gone.message).toContain('the last good catalog stays published');
    expect(await api.getConfigMap(ns.name, 'keyed-ai-catalog')).toBeDefined();
  });

  it('the echo of its own writes queues nothing: one reconcile per new catalog', async () => {
    const before = await metric('controller_runtime_reconcile_total', { controller: 'agentcatalog' });
    const writesBefore = await metric('agentcard_api_writes_total', { resource: 'catalog-configmap' });
    await createCatalog('quiet', { publisher: 'example.com' });
    await waitForCondition('quiet', 'Ready', (c) => c.status === 'True');
    // A second catalog, created once the first is Ready, as a fence: by the time it is Ready the
    // echoes of the first one's ConfigMap and status writes have arrived (a ConfigMap change is
    // rebuilt 100 ms after its event), so an echo taken for a change would show as a third run.
    await createCatalog('fence', { publisher: 'example.com' });
    await waitForCondition('fence', 'Ready', (c) => c.status === 'True');
    expect(await metric('controller_runtime_reconcile_total', { controller: 'agentcatalog' })).toBe(
      before + 2,
    );
    expect(await metric('agentcard_api_writes_total', { resource: 'catalog-configmap' })).toBe(
      writesBefore + 2,
    );
  });

  it('a ConfigMap the API server refuses (422) is reported as PublishRejected and not retried', async () => {
    // A ValidatingAdmissionPolicy that refuses this namespace's catalog ConfigMaps as Invalid (422).
    const admission = kc.makeApiClient(AdmissionregistrationV1Api);
    const policy = `refuse-catalogs-${ns.name}`;
    await admission.createValidatingAdmissionPolicy({
      body: {
        metadata: { name: policy },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: {
            resourceRules: [
              {
                apiGroups: [''],
                apiVersions: ['v1'],
                operations: ['CREATE', 'UPDATE'],
                resources: ['configmaps'],
              },
            ],
          },
          validations: [
            {
              expression:
                "!has(object.metadata.labels) || !('agentcard.dev/catalog' in object.metadata.labels)",
              message: 'catalog ConfigMaps are refused here',
              reason: 'Invalid',
            },
          ],
        },
      },
    });
    await admission.createValidatingAdmissionPolicyBinding({
      body: {
        metadata: { name: policy },
        spec: {
          policyName: policy,
          validationActions: ['Deny'],
          matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns.name } } },
        },
      },
    });
    try {
      // The policy takes effect once the API server has loaded it.
      await waitFor('the policy in force', async () => {
        try {
          await core.createNamespacedConfigMap({
            namespace: ns.name,
            body: { metadata: { name: 'policy-check', labels: { 'agentcard.dev/catalog': 'x' } } },
            dryRun: 'All',
          });
          return false;
        } catch (err) {
          return (err as { code?: number }).code === 422;
        }
      });
      const writesBefore = await metric('agentcard_api_writes_total', { resource: 'catalog-configmap' });
      const catalogQueue = () => controllerQueue(op.metricsPort(), 'agentcatalog');
      const queued = { controller: 'agentcatalog' };
      // Every way a reconcile can schedule its own next run: a failure (retried after a backoff)
      // or a requeue, now or after a delay.
      const again = async () => ({
        retries: await metric('workqueue_retries_total', queued),
        ...Object.fromEntries(
          await Promise.all(
            ['error', 'requeue', 'requeue_after'].map(async (result) => [
              result,
              await metric('controller_runtime_reconcile_total', { ...queued, result }),
            ]),
          ),
        ),
      });
      const againBefore = await again();
      const reconcilesBefore = (await catalogQueue()).reconciles;
      await createCatalog('refused', { publisher: 'example.com' });
      const published = await waitForCondition('refused', 'Published', (c) => c.status === 'False');
      expect(published.reason).toBe('PublishRejected');
      expect(published.message).toContain('catalog ConfigMaps are refused here');
      expect(published.message).toContain('not retried until the catalog or its cards change');
      // Not retried, counted rather than waited out: the work queue runs a key again on its own
      // only after a reconcile that failed (workqueue_retries_total, result "error") or asked for
      // a requeue (result "requeue" or "requeue_after"). Once the reconcile that wrote the
      // condition has ended (the queue idle) and none of those counters has moved, no retry is
      // pending, so none can come later.
      await waitFor('the reconcile of the refused write ended', async () => {
        const q = await catalogQueue();
        return q.idle && q.reconciles > reconcilesBefore;
      });
      expect(await again()).toEqual(againBefore);
      expect(
        (await metric('agentcard_api_writes_total', { resource: 'catalog-configmap' })) - writesBefore,
      ).toBe(1);
    } finally {
      await admission.deleteValidatingAdmissionPolicyBinding({ name: policy }).catch(() => {});
      await admission.deleteValidatingAdmissionPolicy({ name: policy }).catch(() => {});
    }
  });
});
