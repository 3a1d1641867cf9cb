// The resilient informer on the real API server: it restarts after errors that stop
// a plain list+watch for good (here: 403 until RBAC allows the list), and relists after a
// resume from a compacted resourceVersion (410 Gone).
import {
  CoreV1Api,
  RbacAuthorizationV1Api,
  type V1ConfigMap,
  type V1PodTemplate,
} from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { KubeClient, type WatchEvent } from '../../operator/kube/client.ts';
import { ResilientInformer } from '../../operator/kube/informer.ts';
import { kubeConfig, serviceAccountKubeConfig, useTestNamespace } from '../support/cluster.ts';
import { compactEtcd } from '../support/etcd.ts';
import { waitFor } from '../support/operator.ts';
import { captureLogs } from '../support/logs.ts';

/** A KubeClient that records, for each watch request it made, whether the request has ended. */
class WatchTrackingClient extends KubeClient {
  readonly watches: Array<{ ended: boolean }> = [];

  override async watch<T>(
    path: string,
    query: Parameters<KubeClient['watch']>[1],
    onEvent: (event: WatchEvent<T>) => void,
    signal: AbortSignal,
    accept?: string,
  ): Promise<void> {
    const watch = { ended: false };
    this.watches.push(watch);
    try {
      await super.watch(path, query, onEvent, signal, accept);
    } finally {
      watch.ended = true;
    }
  }
}

const kc = kubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const ns = useTestNamespace('controller-informer');

describe('ResilientInformer', () => {
  it('keeps retrying a refused list with backoff and syncs once RBAC allows it', async () => {
    const saKc = await serviceAccountKubeConfig(ns.name, 'informer-test');
    const { lines, log } = captureLogs();
    const client = new WatchTrackingClient(saKc);
    const informer = new ResilientInformer<V1ConfigMap>({
      name: 'configmaps/test',
      client,
      path: `/api/v1/namespaces/${ns.name}/configmaps`,
      labelSelector: 'app=test',
      log,
      backoff: { baseMs: 200, maxMs: 800 },
    });
    try {
      await informer.start();
      expect(informer.synced).toBe(false);
      await waitFor(
        'three refused attempts',
        async () => lines.filter((l) => l.msg === 'watch stopped; restarting').length >= 3,
      );
      const retries = lines.filter((l) => l.msg === 'watch stopped; restarting');
      expect(retries[0]!.error).toMatch(/^HTTP 403/);
      expect(retries.slice(0, 3).map((l) => l.retryInMs)).toEqual([200, 400, 800]);

      const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
      await rbac.createNamespacedRole({
        namespace: ns.name,
        body: {
          metadata: { name: 'read-configmaps' },
          rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list', 'watch'] }],
        },
      });
      await rbac.createNamespacedRoleBinding({
        namespace: ns.name,
        body: {
          metadata: { name: 'read-configmaps' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-configmaps' },
          subjects: [{ kind: 'ServiceAccount', name: 'informer-test', namespace: ns.name }],
        },
      });
      await waitFor('the informer to sync', async () => informer.synced, 20_000);

      const added: string[] = [];
      informer.on('add', (cm) => added.push(cm.metadata!.name!));
      await core.createNamespacedConfigMap({
        namespace: ns.name,
        body: { metadata: { name: 'seen', labels: { app: 'test' } } },
      });
      await core.createNamespacedConfigMap({
        namespace: ns.name,
        body: { metadata: { name: 'unlabelled' } },
      });
      await waitFor('the add event', async () => added.includes('seen'));
      expect(informer.get('seen', ns.name)).toBeDefined();
      expect(informer.get('unlabelled', ns.name)).toBeUndefined();
    } finally {
      await informer.stop();
    }
    // stop() aborts the watch request; that must not count as a failure and restart it. The
    // abort reaches the informer when the watch request ends: once every watch it opened has
    // ended (and the promise callbacks after it have run), a restart would have been reported.
    const count = lines.filter((l) => l.msg === 'watch stopped; restarting').length;
    expect(client.watches.length).toBeGreaterThan(0);
    await waitFor('every watch request to end', async () => client.watches.every((w) => w.ended), 10_000);
    await new Promise((r) => setImmediate(r));
    expect(lines.filter((l) => l.msg === 'watch stopped; restarting').length).toBe(count);
  });

  it('relists after resuming from a compacted resourceVersion (410 Gone)', async () => {
    // PodTemplates bypass the API server's watch cache on the test control plane, so a resume
    // from a compacted revision really gets 410 from etcd.
    const { log } = captureLogs();
    const informer = new ResilientInformer<V1PodTemplate>({
      name: 'podtemplates/test',
      client: new KubeClient(kc),
      path: `/api/v1/namespaces/${ns.name}/podtemplates`,
      log,
    });
    const template = (name: string) => ({
      metadata: { name },
      template: { spec: { containers: [{ name: 'c', image: 'example.invalid/none' }] } },
    });
    await core.createNamespacedPodTemplate({ namespace: ns.name, body: template('old') });
    const deleted: string[] = [];
    informer.on('delete', (t) => deleted.push(t.metadata!.name!));
    try {
      await informer.start();
      await waitFor('sync', async () => informer.synced);
      expect(informer.get('old', ns.name)).toBeDefined();
      await informer.stop(); // as if the watch had dropped: it will resume from its last revision

      await core.deleteNamespacedPodTemplate({ namespace: ns.name, name: 'old' });
      await core.createNamespacedPodTemplate({ namespace: ns.name, body: template('new') });
      await compactEtcd();

      await informer.start();
      await waitFor(
        'the relist to show the new object',
        async () => informer.get('new', ns.name) !== undefined,
        20_000,
      );
      expect(informer.get('old', ns.name)).toBeUndefined();
      expect(deleted).toContain('old');
    } finally {
      await informer.stop();
    }
  });
});
