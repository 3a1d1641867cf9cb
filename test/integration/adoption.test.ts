// Label adoption on the real control plane: a Deployment labelled agentcard.dev/adopt=true with
// its card port gets an AgentCard the operator creates and owns (ownerReference to the
// Deployment, spec.source.service at its Service and port, served centrally); the label removed,
// the card goes; the Deployment deleted, the garbage collector (kube-controller-manager) removes
// the card; a namespace the administrator did not allow gets nothing.
//
// Its own operator rather than the shared set-up (useOperatorInNamespace): the operator watches two
// namespaces and allows adoption in only one of them, which one namespace per file cannot express.
import { AppsV1Api, type V1Deployment } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestNamespace, kubeConfig, type TestNamespace } from '../support/cluster.ts';
import {
  Api,
  controllerQueue,
  installCrd,
  startOperator,
  waitFor,
  type InProcessOperator,
} from '../support/operator.ts';

const kc = kubeConfig();
const api = new Api(kc);
const apps = kc.makeApiClient(AppsV1Api);
let allowed: TestNamespace;
let other: TestNamespace;
let operator: InProcessOperator;

function deployment(name: string, labels: Record<string, string>, annotations: Record<string, string>) {
  return {
    metadata: { name, labels, annotations },
    spec: {
      replicas: 0,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          containers: [{ name: 'agent', image: 'agent:1', ports: [{ name: 'a2a', containerPort: 9999 }] }],
        },
      },
    },
  } satisfies V1Deployment;
}

beforeAll(async () => {
  await installCrd(kc);
  allowed = await createTestNamespace('adopt-allowed');
  other = await createTestNamespace('adopt-other');
  // The operator watches both namespaces and allows adoption in one.
  operator = await startOperator(allowed.name, [
    '--namespace',
    other.name,
    '--adopt-namespace',
    allowed.name,
  ]);
}, 120_000);

afterAll(async () => {
  await operator?.stop();
  await allowed?.cleanup();
  await other?.cleanup();
});

const adoptionQueue = () => controllerQueue(operator.metricsPort(), 'adoption');

describe('label adoption', () => {
  it('creates and owns an AgentCard for a labelled Deployment, and removes it with the label', async () => {
    const created = await apps.createNamespacedDeployment({
      namespace: allowed.name,
      body: deployment(
        'weather',
        { 'agentcard.dev/adopt': 'true' },
        { 'agentcard.dev/card-port': '9999', 'agentcard.dev/card-hosts': 'Weather.example.com' },
      ),
    });
    const card = await waitFor('the adopted AgentCard', () => api.getCard(allowed.name, 'weather'));
    const live = card as unknown as {
      metadata: {
        labels?: Record<string, string>;
        ownerReferences?: Array<{ kind: string; name: string; uid: string; controller?: boolean }>;
      };
      spec: { source?: unknown; serving?: unknown };
    };
    expect(live.metadata.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'Deployment',
        name: 'weather',
        uid: created.metadata!.uid,
        controller: true,
      }),
    ]);
    expect(live.metadata.labels?.['agentcard.dev/adopted-from']).toBe('deployment');
    expect(live.spec.source).toMatchObject({ service: { name: 'weather', port: 9999 } });
    expect(live.spec.serving).toMatchObject({ server: 'Central', hosts: ['weather.example.com'] });

    // An annotation change follows; a named port is accepted (JSON patches: client-node's default).
    await apps.patchNamespacedDeployment({
      namespace: allowed.name,
      name: 'weather',
      body: [
        { op: 'replace', path: '/metadata/annotations/agentcard.dev~1card-port', value: 'a2a' },
        { op: 'add', path: '/metadata/annotations/agentcard.dev~1card-path', value: '/card.json' },
      ],
    });
    await waitFor('the new port and path', async () => {
      const c = (await api.getCard(allowed.name, 'weather')) as unknown as typeof live;
      const source = c.spec.source as { service?: { port?: unknown }; path?: string };
      return source.service?.port === 'a2a' && source.path === '/card.json';
    });

    // The label removed: the card goes.
    await apps.patchNamespacedDeployment({
      namespace: allowed.name,
      name: 'weather',
      body: [{ op: 'remove', path: '/metadata/labels/agentcard.dev~1adopt' }],
    });
    await waitFor(
      'the adopted card deleted',
      async () => (await api.getCard(allowed.name, 'weather')) === undefined,
    );
  });

  it('leaves the garbage collector to remove the card with its Deployment', async () => {
    await apps.createNamespacedDeployment({
      namespace: allowed.name,
      body: deployment('gone', { 'agentcard.dev/adopt': 'true' }, { 'agentcard.dev/card-port': '8080' }),
    });
    await waitFor('the adopted AgentCard', () => api.getCard(allowed.name, 'gone'));
    await apps.deleteNamespacedDeployment({
      namespace: allowed.name,
      name: 'gone',
      propagationPolicy: 'Background',
    });
    await waitFor(
      'the card garbage-collected',
      async () => (await api.getCard(allowed.name, 'gone')) === undefined,
      60_000,
    );
  });

  it('never touches an AgentCard it does not own, and adopts nothing where not allowed', async () => {
    // The workload in the namespace not allowed is decided silently: counted, not slept through.
    // It is the only workload added while the adoption queue is idle, so a reconcile after that,
    // with the queue idle again, has decided it (a status update of the Deployment by
    // kube-controller-manager may queue it once more; it is the same key).
    const start = await waitFor('the adoption queue idle', async () => {
      const q = await adoptionQueue();
      return q.idle ? q : undefined;
    });
    await apps.createNamespacedDeployment({
      namespace: other.name,
      body: deployment('elsewhere', { 'agentcard.dev/adopt': 'true' }, { 'agentcard.dev/card-port': '8080' }),
    });
    await waitFor('the workload in the namespace not allowed reconciled', async () => {
      const q = await adoptionQueue();
      return q.idle && q.reconciles > start.reconciles;
    });
    await api.createCard(allowed.name, 'mine', { source: { url: 'https://mine.example.com/' } });
    await apps.createNamespacedDeployment({
      namespace: allowed.name,
      body: deployment('mine', { 'agentcard.dev/adopt': 'true' }, { 'agentcard.dev/card-port': '8080' }),
    });
    // A workload with a bad port annotation gets nothing either (and a warning in the log).
    await apps.createNamespacedDeployment({
      namespace: allowed.name,
      body: deployment('badport', { 'agentcard.dev/adopt': 'true' }, { 'agentcard.dev/card-port': '70000' }),
    });
    // Each refusal is logged as the reconcile decides it, which then returns without a write.
    await waitFor(
      'the refusals logged',
      async () =>
        operator.logs.some((l) => l.includes('not owned by the workload')) &&
        operator.logs.some((l) => l.includes('must be a port from 1 to 65535')),
    );
    const mine = (await api.getCard(allowed.name, 'mine')) as unknown as {
      metadata: { ownerReferences?: unknown[] };
      spec: Record<string, unknown>;
    };
    expect(mine.metadata.ownerReferences).toBeUndefined();
    expect(mine.spec.serving).toBeUndefined();
    expect(await api.getCard(other.name, 'elsewhere')).toBeUndefined();
    expect(await api.getCard(allowed.name, 'badport')).toBeUndefined();
  });
});
