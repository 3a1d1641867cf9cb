// The operator's REST client and list+watch cache on the real API server: answers, errors
// reduced to the server's Status, server-side apply, paged lists and the watch that follows.
import { CoreV1Api, type V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyConfigMap, readSecret } from '../../operator/kube/api.ts';
import { ApiError, KubeClient } from '../../operator/kube/client.ts';
import { describeApiError, isNotFound } from '../../operator/kube/errors.ts';
import { ResilientInformer } from '../../operator/kube/informer.ts';
import { createLogger } from '../../operator/log.ts';
import { createTestNamespace, kubeConfig, type TestNamespace } from '../support/cluster.ts';
import { waitFor } from '../support/operator.ts';
import { isFastObject } from '../support/v8-shape.ts';

const kc = kubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const client = new KubeClient(kc);
let ns: TestNamespace;

beforeAll(async () => {
  ns = await createTestNamespace('kube-client');
});
afterAll(async () => {
  await ns?.cleanup();
});

describe('KubeClient', () => {
  it('reduces a refusal to its status code and the server message', async () => {
    const err = await client
      .request('GET', `/api/v1/namespaces/${ns.name}/configmaps/absent`)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(isNotFound(err)).toBe(true);
    expect(describeApiError(err)).toBe('HTTP 404: configmaps "absent" not found');
    expect(await readSecret(client, ns.name, 'absent')).toBeUndefined();
  });

  it('server-side applies under its field manager, idempotently', async () => {
    const cm = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'applied', namespace: ns.name },
      data: { a: '1' },
    };
    const first = await applyConfigMap(client, cm);
    const again = await applyConfigMap(client, cm);
    expect(again.metadata?.resourceVersion).toBe(first.metadata?.resourceVersion);
    const stored = await core.readNamespacedConfigMap({ name: 'applied', namespace: ns.name });
    expect(stored.data).toEqual({ a: '1' });
    expect(stored.metadata?.managedFields?.map((f) => f.manager)).toEqual(['agentcard-operator']);
  });
});

describe('ResilientInformer', () => {
  it('loads a collection larger than a page, then follows changes through the watch', async () => {
    for (let i = 0; i < 5; i++) {
      await core.createNamespacedConfigMap({
        namespace: ns.name,
        body: { metadata: { name: `paged-${i}`, labels: { paged: 'yes' } } },
      });
    }
    const informer = new ResilientInformer<V1ConfigMap>({
      name: 'configmaps/paged',
      client,
      path: `/api/v1/namespaces/${ns.name}/configmaps`,
      labelSelector: 'paged=yes',
      pageSize: 2,
      log: createLogger({}, { write: () => {} }),
    });
    const seen: string[] = [];
    informer.on('add', (cm) => seen.push(`add ${cm.metadata!.name}`));
    informer.on('update', (cm) => seen.push(`update ${cm.metadata!.name}`));
    informer.on('delete', (cm) => seen.push(`delete ${cm.metadata!.name}`));
    try {
      await informer.start();
      expect(informer.synced).toBe(true);
      expect(
        informer
          .list(ns.name)
          .map((c) => c.metadata!.name)
          .sort(),
      ).toEqual([0, 1, 2, 3, 4].map((i) => `paged-${i}`));
      // Cached objects carry no managedFields (never read, often half the object), and are
      // not made dictionary objects by dropping them.
      const cached = informer.get('paged-0', ns.name)!;
      expect(cached.metadata?.managedFields).toBeUndefined();
      expect(cached.metadata?.uid).toBeDefined();
      expect(isFastObject(cached.metadata!)).toBe(true);

      const labelsBefore = informer.get('paged-1', ns.name)!.metadata!.labels;
      expect(labelsBefore).toEqual({ paged: 'yes' });
      const one = await core.readNamespacedConfigMap({ name: 'paged-1', namespace: ns.name });
      await core.replaceNamespacedConfigMap({
        name: 'paged-1',
        namespace: ns.name,
        body: { ...one, data: { x: 'y' } },
      });
      await core.deleteNamespacedConfigMap({ name: 'paged-2', namespace: ns.name });
      await waitFor('the watch events', async () => seen.includes('delete paged-2'));
      expect(seen.slice(5)).toEqual(['update paged-1', 'delete paged-2']);
      expect(informer.get('paged-1', ns.name)?.data).toEqual({ x: 'y' });
      // The same from a watch event.
      const updated = informer.get('paged-1', ns.name)!;
      expect(updated.metadata?.managedFields).toBeUndefined();
      expect(isFastObject(updated.metadata!)).toBe(true);
      // What the update left as it was is the cached version's own object (share.ts).
      expect(updated.metadata!.labels).toBe(labelsBefore);
      expect(informer.get('paged-2', ns.name)).toBeUndefined();
    } finally {
      await informer.stop();
    }
  });
});
