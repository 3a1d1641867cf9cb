// The informer's old/new handlers and indexes on the real API server: an update hands over the
// object as it was cached and as the server now has it, a delete the last state, a relist after
// 410 Gone (or the 500 this API server answers instead) the cached object as the old one; the label and owner indexes follow what the server
// reports, owner references included.
import { CoreV1Api, type V1ConfigMap, type V1PodTemplate } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { KubeClient } from '../../operator/kube/client.ts';
import { byControllerOwner, byLabel, ResilientInformer } from '../../operator/kube/informer.ts';
import { kubeConfig, useTestNamespace } from '../support/cluster.ts';
import { compactEtcd } from '../support/etcd.ts';
import { captureLogs } from '../support/logs.ts';
import { waitFor } from '../support/operator.ts';

const kc = kubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const ns = useTestNamespace('informer-handlers');

const names = (objs: readonly { metadata?: { name?: string } }[]) =>
  objs.map((o) => o.metadata!.name!).sort();

describe('ResilientInformer handlers and indexes on the API server', () => {
  it('hand updates (old, new) and deletes the last state, and index by label and owner', async () => {
    const { log } = captureLogs();
    const informer = new ResilientInformer<V1ConfigMap>({
      name: 'configmaps/handlers',
      client: new KubeClient(kc),
      path: `/api/v1/namespaces/${ns.name}/configmaps`,
      labelSelector: 'app=handlers',
      log,
      indexers: { team: byLabel('team') as (cm: V1ConfigMap) => string[], owner: byControllerOwner },
    });
    const updates: Array<{ old: V1ConfigMap; now: V1ConfigMap }> = [];
    const deletes: V1ConfigMap[] = [];
    informer.addEventHandler({
      update: (old, now) => updates.push({ old, now }),
      delete: (cm) => deletes.push(cm),
    });
    const labels = (team: string) => ({ app: 'handlers', team });
    try {
      await informer.start();
      await informer.waitForSync();
      const parent = await core.createNamespacedConfigMap({
        namespace: ns.name,
        body: { metadata: { name: 'parent', labels: labels('red') }, data: { v: '1' } },
      });
      await core.createNamespacedConfigMap({
        namespace: ns.name,
        body: {
          metadata: {
            name: 'child',
            labels: labels('blue'),
            ownerReferences: [
              {
                apiVersion: 'v1',
                kind: 'ConfigMap',
                name: 'parent',
                uid: parent.metadata!.uid!,
                controller: true,
              },
            ],
          },
        },
      });
      await waitFor('both cached', async () => informer.list(ns.name).length === 2);
      expect(names(informer.byIndex('team', 'red'))).toEqual(['parent']);
      expect(names(informer.byIndex('owner', 'ConfigMap/parent'))).toEqual(['child']);

      // An update: the handler sees the data before and after, and the label index moves.
      await core.replaceNamespacedConfigMap({
        namespace: ns.name,
        name: 'parent',
        body: { ...parent, metadata: { ...parent.metadata, labels: labels('blue') }, data: { v: '2' } },
      });
      await waitFor('the update event', async () => updates.length === 1);
      const [{ old, now }] = updates as [{ old: V1ConfigMap; now: V1ConfigMap }];
      expect([old.data?.v, now.data?.v]).toEqual(['1', '2']);
      expect(old.metadata!.resourceVersion).toBe(parent.metadata!.resourceVersion);
      expect(now.metadata!.resourceVersion).not.toBe(parent.metadata!.resourceVersion);
      expect(informer.byIndex('team', 'red')).toEqual([]);
      expect(names(informer.byIndex('team', 'blue'))).toEqual(['child', 'parent']);

      // A delete: the last state known (the blue label, the new data); the owner index empties.
      await core.deleteNamespacedConfigMap({ namespace: ns.name, name: 'child' });
      await waitFor('the delete event', async () => deletes.length === 1);
      expect(deletes[0]!.metadata!.name).toBe('child');
      expect(informer.byIndex('owner', 'ConfigMap/parent')).toEqual([]);
      expect(names(informer.byIndex('team', 'blue'))).toEqual(['parent']);
    } finally {
      await informer.stop();
    }
  });

  it('after a relist from a compacted resourceVersion, hands the cached object as the old one', async () => {
    // PodTemplates bypass the API server's watch cache on the test control plane, so a resume
    // from a compacted revision really gets 410 from etcd (as in controller-informer.test.ts).
    const { log, lines } = captureLogs();
    const informer = new ResilientInformer<V1PodTemplate>({
      name: 'podtemplates/handlers',
      client: new KubeClient(kc),
      path: `/api/v1/namespaces/${ns.name}/podtemplates`,
      log,
      indexers: { team: byLabel('team') as (t: V1PodTemplate) => string[] },
    });
    const template = (team: string) => ({
      metadata: { name: 'relisted', labels: { team } },
      template: { spec: { containers: [{ name: 'c', image: 'example.invalid/none' }] } },
    });
    await core.createNamespacedPodTemplate({ namespace: ns.name, body: template('red') });
    const updates: Array<[string | undefined, string | undefined]> = [];
    informer.addEventHandler({
      update: (old, now) => updates.push([old.metadata?.labels?.team, now.metadata?.labels?.team]),
    });
    try {
      await informer.start();
      await informer.waitForSync();
      await informer.stop(); // as if the watch had dropped: it resumes from its last revision

      await core.replaceNamespacedPodTemplate({
        namespace: ns.name,
        name: 'relisted',
        body: template('blue'),
      });
      await compactEtcd();

      await informer.start();
      await waitFor('the relist to report the change', async () => updates.length > 0, 20_000);
      expect(updates).toEqual([['red', 'blue']]);
      // Without the watch cache, this API server answers the resumed watch with a 500 ("etcd
      // event received with PrevKv=nil") rather than 410, or with 410: either way, one relist.
      const failures = lines.filter((l) => l.msg === 'watch stopped; restarting').map((l) => String(l.error));
      expect(failures.every((e) => /^HTTP 500/.test(e))).toBe(true);
      expect(failures.length).toBeLessThanOrEqual(1);
      expect(names(informer.byIndex('team', 'blue'))).toEqual(['relisted']);
      expect(informer.byIndex('team', 'red')).toEqual([]);
    } finally {
      await informer.stop();
    }
  });
});
