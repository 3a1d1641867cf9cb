// Proves the test control plane is a real Kubernetes API server, not something trusted on faith:
// each behaviour below is one a hand-written fake would get wrong.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { dirname, join } from 'node:path';
import {
  AdmissionregistrationV1Api,
  ApiextensionsV1Api,
  AppsV1Api,
  AuthenticationV1Api,
  CoreV1Api,
  KubernetesObjectApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  Watch,
  type KubeConfig,
  type KubernetesObject,
  type V1Pod,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterDir } from '../controlplane/paths.ts';
import {
  createTestNamespace,
  kubeConfig,
  kubeconfigPath,
  saveKubeConfig,
  serviceAccountKubeConfig,
  type TestNamespace,
} from '../support/cluster.ts';
import { applyYaml, waitForCrdEstablished } from '../support/apply.ts';
import { compactEtcd } from '../support/etcd.ts';
import { helmPath, kubectlPath, runTool } from '../support/tools.ts';
import { fixturePath } from '../support/paths.ts';

const GROUP = 'cptest.agentcard.dev';

const widgetCrdYaml = readFileSync(fixturePath('widget-crd.yaml'), 'utf8');
const WIDGET_CRD = `widgets.${GROUP}`;

function widget(namespace: string, name: string, spec: Record<string, unknown>): KubernetesObject {
  return {
    apiVersion: `${GROUP}/v1`,
    kind: 'Widget',
    metadata: { name, namespace },
    spec,
  } as KubernetesObject;
}

/** The HTTP status of a failed API call (ApiException.code), or undefined if it did not fail. */
async function statusOf(call: Promise<unknown>): Promise<{ code?: number; message: string }> {
  try {
    await call;
    return { message: '' };
  } catch (err) {
    const e = err as { code?: number; body?: unknown; message?: string };
    const body = typeof e.body === 'string' ? e.body : JSON.stringify(e.body ?? '');
    return { code: e.code, message: `${e.message ?? ''} ${body}` };
  }
}

/** Polls `check` every 250 ms until it returns true, for at most `timeoutMs`. */
async function eventually(check: () => Promise<boolean>, timeoutMs = 60_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 250));
  }
  return false;
}

describe('the test control plane', () => {
  let kc: KubeConfig;
  let objects: KubernetesObjectApi;
  let core: CoreV1Api;
  let ns: TestNamespace;

  beforeAll(async () => {
    kc = kubeConfig();
    objects = KubernetesObjectApi.makeApiClient(kc);
    core = kc.makeApiClient(CoreV1Api);
    ns = await createTestNamespace('controlplane');
  });
  afterAll(async () => {
    await ns?.cleanup();
  });

  it('server-side applies a CRD, establishes it and reads it back with its managed fields', async () => {
    const [applied] = await applyYaml(widgetCrdYaml, { fieldManager: 'controlplane-test' });
    expect(applied?.metadata?.name).toBe(WIDGET_CRD);
    await waitForCrdEstablished(WIDGET_CRD);
    const crd = await kc.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: WIDGET_CRD });
    const spec = crd.spec.versions[0]!.schema!.openAPIV3Schema!.properties!.spec!;
    // The raw manifest's x-kubernetes-validations and enum survived the client's typed models.
    expect(spec.x_kubernetes_validations?.[0]?.rule).toBe('self.replicas <= self.maxReplicas');
    expect(spec.properties?.size?._enum).toEqual(['small', 'large']);
    const managers = crd.metadata?.managedFields?.map((f) => `${f.manager}/${f.operation}`) ?? [];
    expect(managers).toContain('controlplane-test/Apply');
  });

  it('rejects an object that breaks the CRD CEL rule and accepts one that keeps it', async () => {
    const bad = await statusOf(objects.create(widget(ns.name, 'too-many', { replicas: 5, maxReplicas: 3 })));
    expect(bad.code).toBe(422);
    expect(bad.message).toContain('replicas must not exceed maxReplicas');

    const created = await objects.create(widget(ns.name, 'fine', { replicas: 2, maxReplicas: 3 }));
    expect(created.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);

    // The structural schema is enforced too: an enum violation is refused.
    const badEnum = await statusOf(
      objects.create(widget(ns.name, 'huge', { replicas: 1, maxReplicas: 1, size: 'huge' })),
    );
    expect(badEnum.code).toBe(422);
  });

  it('reports a 409 conflict when a second field manager applies a field another one owns', async () => {
    const apply = (manager: string, size: string, force: boolean) =>
      objects.patch(
        widget(ns.name, 'contested', { replicas: 1, maxReplicas: 2, size }),
        undefined,
        undefined,
        manager,
        force,
        PatchStrategy.ServerSideApply,
      );
    await apply('manager-a', 'small', false);
    const conflict = await statusOf(apply('manager-b', 'large', false));
    expect(conflict.code).toBe(409);
    expect(conflict.message).toContain('manager-a');

    const forced = await apply('manager-b', 'large', true);
    expect((forced as { spec?: { size?: string } }).spec?.size).toBe('large');
    const owners = forced.metadata?.managedFields?.map((f) => f.manager) ?? [];
    expect(owners).toContain('manager-b');
  });

  it('authenticates a ServiceAccount by a TokenRequest token and denies it with 403 until RBAC allows it', async () => {
    const saKc = await serviceAccountKubeConfig(ns.name, 'nobody');
    // The same identity through a kubeconfig file, as a local process would use it.
    const saFile = saveKubeConfig(saKc);
    const asFile = await runTool(
      'kubectl',
      ['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'],
      {
        kubeconfig: saFile,
      },
    );
    rmSync(dirname(saFile), { recursive: true, force: true });
    expect(asFile.stdout).toBe(`system:serviceaccount:${ns.name}:nobody`);
    const review = await saKc.makeApiClient(AuthenticationV1Api).createSelfSubjectReview({ body: {} });
    expect(review.status?.userInfo?.username).toBe(`system:serviceaccount:${ns.name}:nobody`);

    const saCore = saKc.makeApiClient(CoreV1Api);
    const denied = await statusOf(saCore.listNamespacedConfigMap({ namespace: ns.name }));
    expect(denied.code).toBe(403);

    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: ns.name,
      body: {
        metadata: { name: 'read-configmaps' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns.name,
      body: {
        metadata: { name: 'nobody-reads-configmaps' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-configmaps' },
        subjects: [{ kind: 'ServiceAccount', name: 'nobody', namespace: ns.name }],
      },
    });
    const allowed = await eventually(async () => {
      const res = await statusOf(saCore.listNamespacedConfigMap({ namespace: ns.name }));
      return res.code === undefined;
    }, 30_000);
    expect(allowed).toBe(true);
    // Still only what the Role grants.
    const write = await statusOf(
      saCore.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: 'nope' } } }),
    );
    expect(write.code).toBe(403);
  });

  it('answers a watch resumed from a compacted resourceVersion with 410 Gone', async () => {
    // PodTemplates are served from etcd directly (the control plane starts the apiserver with
    // --watch-cache-sizes=podtemplates#0), so etcd's compaction is what the watch runs into.
    const template = await core.createNamespacedPodTemplate({
      namespace: ns.name,
      body: {
        metadata: { name: 'watched' },
        template: { spec: { containers: [{ name: 'c', image: 'example.invalid/none' }] } },
      },
    });
    const oldVersion = template.metadata!.resourceVersion!;
    for (let i = 0; i < 3; i++) {
      await objects.patch(
        {
          apiVersion: 'v1',
          kind: 'PodTemplate',
          metadata: { namespace: ns.name, name: 'watched', labels: { step: `${i}` } },
        },
        undefined,
        undefined,
        undefined,
        undefined,
        PatchStrategy.MergePatch,
      );
    }
    const compactedAt = await compactEtcd();
    expect(compactedAt).toBeGreaterThan(Number(oldVersion));

    const path = `/api/v1/namespaces/${ns.name}/podtemplates`;
    const first = await watchOnce(kc, path, oldVersion);
    expect(first.type).toBe('ERROR');
    expect(first.object.code).toBe(410);
    expect(first.object.reason).toBe('Expired');

    // A watch from a current resourceVersion still works after the compaction.
    const list = await core.listNamespacedPodTemplate({ namespace: ns.name });
    const fresh = watchOnce(kc, path, list.metadata!.resourceVersion!);
    await core.deleteNamespacedPodTemplate({ namespace: ns.name, name: 'watched' });
    expect((await fresh).type).toBe('DELETED');
  });

  it('garbage-collects an owned object after its owner is deleted', async () => {
    const owner = await core.createNamespacedConfigMap({
      namespace: ns.name,
      body: { metadata: { name: 'owner' } },
    });
    await core.createNamespacedConfigMap({
      namespace: ns.name,
      body: {
        metadata: {
          name: 'owned',
          ownerReferences: [
            {
              apiVersion: 'v1',
              kind: 'ConfigMap',
              name: 'owner',
              uid: owner.metadata!.uid!,
              controller: true,
            },
          ],
        },
      },
    });
    await core.deleteNamespacedConfigMap({ namespace: ns.name, name: 'owner' });
    const collected = await eventually(
      async () =>
        (await statusOf(core.readNamespacedConfigMap({ namespace: ns.name, name: 'owned' }))).code === 404,
    );
    expect(collected).toBe(true);
  });

  it('deletes a namespace with its contents (namespace controller)', async () => {
    const doomed = await createTestNamespace('doomed');
    await core.createNamespacedConfigMap({ namespace: doomed.name, body: { metadata: { name: 'content' } } });
    await doomed.cleanup();
    const gone = await eventually(
      async () => (await statusOf(core.readNamespace({ name: doomed.name }))).code === 404,
    );
    expect(gone).toBe(true);
  });

  it('runs Deployments up to Pods that stay Pending: there is no scheduler or kubelet', async () => {
    const apps = kc.makeApiClient(AppsV1Api);
    const labels = { app: 'pending-demo' };
    await apps.createNamespacedDeployment({
      namespace: ns.name,
      body: {
        metadata: { name: 'pending-demo' },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: { containers: [{ name: 'c', image: 'example.invalid/none' }] },
          },
        },
      },
    });
    let pods: V1Pod[] = [];
    const created = await eventually(async () => {
      pods = (await core.listNamespacedPod({ namespace: ns.name, labelSelector: 'app=pending-demo' })).items;
      return pods.length === 1;
    }, 30_000);
    expect(created).toBe(true);
    expect(pods[0]!.status?.phase).toBe('Pending');
    expect(pods[0]!.spec?.nodeName).toBeUndefined();
    expect(pods[0]!.metadata?.ownerReferences?.[0]?.kind).toBe('ReplicaSet');
  });

  it('calls a validating admission webhook over TLS and enforces its answer', async () => {
    const pki = (file: string) => readFileSync(join(clusterDir, 'pki', file));
    const server: Server = createServer({ cert: pki('serving.crt'), key: pki('serving.key') }, (req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const review = JSON.parse(body) as { request: { uid: string; name: string } };
        const allowed = !review.request.name.startsWith('forbidden-');
        res.setHeader('content-type', 'application/json');
        res.end(
          JSON.stringify({
            apiVersion: 'admission.k8s.io/v1',
            kind: 'AdmissionReview',
            response: {
              uid: review.request.uid,
              allowed,
              status: { message: 'names starting with forbidden- are refused' },
            },
          }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    const admission = kc.makeApiClient(AdmissionregistrationV1Api);
    const name = `${ns.name}-deny-forbidden`;
    try {
      await admission.createValidatingWebhookConfiguration({
        body: {
          metadata: { name },
          webhooks: [
            {
              name: 'deny-forbidden.cptest.agentcard.dev',
              admissionReviewVersions: ['v1'],
              sideEffects: 'None',
              failurePolicy: 'Fail',
              timeoutSeconds: 5,
              clientConfig: {
                url: `https://127.0.0.1:${port}/validate`,
                caBundle: pki('ca.crt').toString('base64'),
              },
              namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns.name } },
              rules: [
                { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] },
              ],
            },
          ],
        },
      });
      // The webhook configuration reaches the admission chain through an informer: retry briefly.
      let refused: { code?: number; message: string } = { message: '' };
      let attempt = 0;
      await eventually(async () => {
        // A new name each time: an attempt made before the webhook is active simply succeeds.
        refused = await statusOf(
          core.createNamespacedConfigMap({
            namespace: ns.name,
            body: { metadata: { name: `forbidden-${attempt++}` } },
          }),
        );
        return refused.code !== undefined;
      }, 30_000);
      expect(refused.code).toBe(400);
      expect(refused.message).toContain('names starting with forbidden- are refused');
      await core.createNamespacedConfigMap({
        namespace: ns.name,
        body: { metadata: { name: 'allowed-cm' } },
      });
    } finally {
      await admission.deleteValidatingWebhookConfiguration({ name }).catch(() => undefined);
      server.close();
    }
  });

  it('serves real kubectl and helm clients', async () => {
    const kubeconfig = kubeconfigPath();
    const version = await runTool('kubectl', ['version', '-o', 'json'], { kubeconfig });
    expect(version.code).toBe(0);
    const parsed = JSON.parse(version.stdout) as { serverVersion: { gitVersion: string } };
    expect(parsed.serverVersion.gitVersion).toMatch(/^v1\.36\.\d+$/);

    const get = await runTool('kubectl', ['get', 'widgets', '-n', ns.name, '-o', 'name'], { kubeconfig });
    expect(get.stdout).toContain('widget.cptest.agentcard.dev/fine');

    const helm = await runTool('helm', ['list', '-n', ns.name, '-o', 'json'], { kubeconfig });
    expect(helm.code).toBe(0);
    expect(JSON.parse(helm.stdout)).toEqual([]);
    expect(kubectlPath()).not.toBe(helmPath());
  });
});

/** Opens a watch from `resourceVersion` and resolves with its first event. */
function watchOnce(
  kc: KubeConfig,
  path: string,
  resourceVersion: string,
): Promise<{ type: string; object: { code?: number; reason?: string } }> {
  return new Promise((resolve, reject) => {
    let controller: AbortController | undefined;
    let settled = false;
    const timer = setTimeout(() => finish(new Error(`no watch event on ${path} within 20 s`)), 20_000);
    const finish = (result: Error | { type: string; object: { code?: number; reason?: string } }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      controller?.abort();
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    new Watch(kc)
      .watch(
        path,
        { resourceVersion },
        (type, object) => finish({ type, object }),
        (err) => finish(err instanceof Error ? err : new Error(`watch on ${path} ended before any event`)),
      )
      .then((c) => {
        controller = c;
        if (settled) c.abort();
      }, finish);
  });
}

const agentCardCrdFile = new URL('../../crds/agentcard.dev_agentcards.yaml', import.meta.url);

// The project's own CRD, once it is generated into crds/: applied with server-side apply, its CEL
// rules are enforced by the real apiserver.
describe.skipIf(!existsSync(agentCardCrdFile))('the AgentCard CRD on the test control plane', () => {
  let ns: TestNamespace;
  let objects: KubernetesObjectApi;
  beforeAll(async () => {
    objects = KubernetesObjectApi.makeApiClient(kubeConfig());
    ns = await createTestNamespace('agentcard-crd');
  });
  afterAll(async () => {
    await ns?.cleanup();
  });

  function agentCard(name: string, probeInterval: string): KubernetesObject {
    return {
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'AgentCard',
      metadata: { name, namespace: ns.name },
      spec: {
        card: {
          name: 'Echo agent',
          description: 'Repeats what it is told.',
          version: '1.0.0',
          supportedInterfaces: [
            { url: 'https://echo.example.com/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
          ],
          capabilities: {},
          defaultInputModes: ['text/plain'],
          defaultOutputModes: ['text/plain'],
          skills: [{ id: 'echo', name: 'Echo', description: 'Echoes the input.', tags: ['echo'] }],
        },
        probe: { interval: probeInterval },
      },
    } as KubernetesObject;
  }

  it('applies with server-side apply, becomes Established and enforces its CEL rules', async () => {
    const [crd] = await applyYaml(readFileSync(agentCardCrdFile, 'utf8'), {
      fieldManager: 'controlplane-test',
    });
    await waitForCrdEstablished(crd!.metadata!.name!);

    const accepted = await objects.create(agentCard('valid', '30s'));
    expect(accepted.metadata?.uid).toBeTruthy();

    const rejected = await statusOf(objects.create(agentCard('too-frequent', '5s')));
    expect(rejected.code).toBe(422);
    expect(rejected.message).toContain('spec.probe.interval');
    expect(rejected.message).toContain('10s');
  });
});
