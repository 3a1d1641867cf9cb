/**
 * The floor of the controller scale benchmark (bench/scale.bench.ts): a bare script that makes
 * the operator's writes for every AgentCard of a namespace and nothing else. Per card, a
 * ConfigMap apply then a status apply, `--concurrency` cards at a time, and the Published Event
 * sent in the background with 2 in flight (as the operator's recorder). It runs as its own
 * process, loads the kubeconfig and the REST client the way the operator does
 * (operator/kube/client.ts), and reads the AgentCards first (their uids go into the
 * ownerReferences), so that it is timed exactly like the operator: from process start.
 *
 * The ConfigMap data and the status it applies are those the operator wrote for one of its own
 * cards (the same bytes to store, the same fields for server-side apply to track), so that the
 * API server does the same work for both.
 *
 * Run by the benchmark, bundled like the operator (build/bundle.ts): `node scale-floor.js
 * --kubeconfig F --namespace NS --concurrency N --data FILE --status FILE` (the ConfigMap data
 * to publish and the status to apply, as JSON).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { GROUP, PLURAL, VERSION } from '../operator/api/names.ts';
import { applyConfigMap, applyStatus, createEvent } from '../operator/kube/api.ts';
import { KubeClient } from '../operator/kube/client.ts';
import { loadKubeConfig } from '../operator/kube/config.ts';

const { values } = parseArgs({
  options: {
    kubeconfig: { type: 'string' },
    namespace: { type: 'string' },
    concurrency: { type: 'string', default: '4' },
    data: { type: 'string' },
    status: { type: 'string' },
  },
});

const namespace = values.namespace!;
const concurrency = Number(values.concurrency);
const data = JSON.parse(readFileSync(values.data!, 'utf8')) as Record<string, string>;
const status = JSON.parse(readFileSync(values.status!, 'utf8')) as Record<string, unknown>;
const client = new KubeClient(loadKubeConfig({ kubeconfig: values.kubeconfig }));
const resource = { group: GROUP, version: VERSION, plural: PLURAL };
const list = await client.request<{ items: Array<{ metadata: { name: string; uid: string } }> }>(
  'GET',
  `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`,
);

const events: Array<() => Promise<unknown>> = [];
let sending = 0;
let drained: (() => void) | undefined;
const send = () => {
  while (sending < 2 && events.length > 0) {
    sending += 1;
    void events.shift()!().finally(() => {
      sending -= 1;
      send();
      if (sending === 0 && events.length === 0) drained?.();
    });
  }
};

let next = 0;
const worker = async () => {
  while (next < list.items.length) {
    const { name, uid } = list.items[next++]!.metadata;
    const owner = { apiVersion: `${GROUP}/${VERSION}`, kind: 'AgentCard', name, uid };
    await applyConfigMap(client, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: `${name}-agent-card`,
        namespace,
        labels: { 'app.kubernetes.io/managed-by': 'bench-floor', 'agentcard.dev/card': name },
        ownerReferences: [{ ...owner, controller: true }],
      },
      data,
    });
    await applyStatus(client, resource, namespace, name, {
      apiVersion: `${GROUP}/${VERSION}`,
      kind: 'AgentCard',
      metadata: { name, namespace },
      status,
    });
    events.push(() =>
      createEvent(client, {
        namespace,
        regarding: { ...owner, namespace },
        type: 'Normal',
        reason: 'Published',
        action: 'Publish',
        note: 'bench',
        reportingController: 'bench-floor',
        reportingInstance: 'bench-floor',
      }),
    );
    send();
  }
};
await Promise.all(Array.from({ length: concurrency }, worker));
if (sending > 0 || events.length > 0) await new Promise<void>((r) => (drained = r));
process.exit(0);
