/**
 * The sidecar injection webhook against the real kube-apiserver: the API server calls our HTTPS
 * server (registered by URL on 127.0.0.1, with the caBundle the webhook itself patches in) when
 * Pods are created, and stores what the patch made of them.
 */
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../../operator/kube/client.ts';
import { createLogger } from '../../operator/log.ts';
import { SECRET_KEYS } from '../../operator/webhook/certs.ts';
import { CARD_VOLUME } from '../../operator/webhook/mutate.ts';
import { INJECT_ANNOTATION, SIDECAR_CONTAINER } from '../../operator/api/names.ts';
import { startWebhook } from '../../operator/webhook/server.ts';
import { syncCertSecret } from '../../operator/webhook/tls.ts';
import type { Webhook } from '../../operator/webhook/server.ts';
import { summarizeServing } from '../../operator/serving/pods.ts';
import { createTestNamespace, kubeConfig } from '../support/cluster.ts';
import type { TestNamespace } from '../support/cluster.ts';
import { freePort } from '../support/ports.ts';
import { registerPodWebhook } from '../support/webhook-config.ts';

const statusCode = (err: unknown) => (err as { code?: number }).code;

async function eventually<T>(
  what: string,
  attempt: () => Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await attempt();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}: ${String(last ?? 'no result')}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A Pod that passes the `restricted` Pod Security Standard by itself. */
function podBody(
  name: string,
  annotations?: Record<string, string>,
  extra: Partial<V1Pod['spec']> = {},
): V1Pod {
  return {
    metadata: { name, ...(annotations ? { annotations } : {}) },
    spec: {
      automountServiceAccountToken: false,
      securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'agent',
          image: 'registry.example/agent:1',
          ports: [{ name: 'http', containerPort: 8080 }],
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
      ...extra,
    },
  };
}

const sidecarsOf = (pod: V1Pod) =>
  [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].filter(
    (c) => c.name === SIDECAR_CONTAINER,
  );

describe('sidecar injection webhook (real kube-apiserver)', () => {
  let kc: KubeConfig;
  let core: CoreV1Api;
  let admission: AdmissionregistrationV1Api;
  let operatorNs: TestNamespace;
  let appNs: TestNamespace;
  let otherNs: TestNamespace;
  let webhook: Webhook | undefined;
  let configName: string;
  let unregister: (() => Promise<void>) | undefined;
  let counter = 0;

  /** Creates a Pod, retrying while the namespace's default ServiceAccount does not exist yet. */
  const createPod = (namespace: string, body: V1Pod) =>
    eventually(`Pod ${body.metadata!.name}`, async () => {
      try {
        return await core.createNamespacedPod({ namespace, body });
      } catch (err) {
        if (statusCode(err) === 403 && String(err).includes('serviceaccount')) return undefined;
        throw err;
      }
    });

  beforeAll(async () => {
    kc = kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    admission = kc.makeApiClient(AdmissionregistrationV1Api);
    operatorNs = await createTestNamespace('webhook-operator', kc);
    appNs = await createTestNamespace('webhook-app', kc);
    otherNs = await createTestNamespace('webhook-other', kc);
    // The injected sidecar must pass the `restricted` Pod Security Standard: enforce it.
    await core.patchNamespace(
      {
        name: appNs.name,
        body: { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );

    const port = await freePort();
    configName = `agentcard-webhook-${appNs.name}`;
    // Registered without a caBundle: the webhook's certificate upkeep must patch it in.
    unregister = await registerPodWebhook(kc, {
      name: configName,
      port,
      namespaces: [operatorNs.name, appNs.name, otherNs.name],
      reinvocationPolicy: 'IfNeeded',
    });
    webhook = await startWebhook({
      client: new KubeClient(kc),
      port,
      host: '127.0.0.1',
      certMode: 'self-signed',
      secretName: 'agentcard-webhook-tls',
      serviceName: 'agentcard-webhook',
      webhookConfigName: configName,
      operatorNamespace: operatorNs.name,
      sidecarImage: 'registry.example/agentcard:test',
      sidecarMode: 'auto',
      logger: createLogger({ test: 'webhook' }, { write: () => {} }),
      registry: new Registry(),
      extraHosts: ['127.0.0.1'],
      certSyncMs: 500,
    });
  });

  afterAll(async () => {
    await webhook?.close();
    await unregister?.();
    await Promise.all([operatorNs, appNs, otherNs].map((ns) => ns?.cleanup()));
  });

  it('keeps its CA in a Secret and patches the caBundle of the webhook configuration', async () => {
    const secret = await core.readNamespacedSecret({
      name: 'agentcard-webhook-tls',
      namespace: operatorNs.name,
    });
    const caBundle = secret.data?.[SECRET_KEYS.caBundle];
    expect(caBundle).toBeTruthy();
    expect(secret.data?.[SECRET_KEYS.key]).toBeTruthy();
    const config = await admission.readMutatingWebhookConfiguration({ name: configName });
    expect(config.webhooks?.[0]?.clientConfig.caBundle).toBe(caBundle);
  });

  it('injects exactly one native sidecar into an annotated Pod, passing Pod Security restricted', async () => {
    // The configuration and its caBundle reach the admission chain through an informer: retry
    // with fresh Pods until one comes back mutated.
    const pod = await eventually('an injected Pod', async () => {
      const created = await createPod(
        appNs.name,
        podBody(`agent-${counter++}`, { [INJECT_ANNOTATION]: 'weather' }),
      );
      if (sidecarsOf(created).length > 0) return created;
      await core.deleteNamespacedPod({ name: created.metadata!.name!, namespace: appNs.name });
      return undefined;
    });
    const stored = await core.readNamespacedPod({ name: pod.metadata!.name!, namespace: appNs.name });
    expect(sidecarsOf(stored)).toHaveLength(1);
    // Kubernetes 1.36: a native sidecar, first among the init containers.
    const sidecar = stored.spec!.initContainers![0]!;
    expect(sidecar.name).toBe(SIDECAR_CONTAINER);
    expect(sidecar.restartPolicy).toBe('Always');
    expect(sidecar.ports?.find((p) => p.name === 'agent-card')?.containerPort).toBe(8095);
    expect(sidecar.securityContext?.readOnlyRootFilesystem).toBe(true);
    expect(stored.spec!.volumes?.find((v) => v.name === CARD_VOLUME)?.configMap?.name).toBe(
      'weather-agent-card',
    );
    expect(stored.spec!.containers.map((c) => c.name)).toEqual(['agent']);
  });

  it('leaves a Pod that already has the sidecar with exactly one', async () => {
    const first = await createPod(
      appNs.name,
      podBody(`template-${counter++}`, { [INJECT_ANNOTATION]: 'weather' }),
    );
    expect(sidecarsOf(first)).toHaveLength(1);
    // A copy of an already injected Pod (as a reinvocation or a re-created Pod would look).
    const copy = podBody(
      `again-${counter++}`,
      { [INJECT_ANNOTATION]: 'weather' },
      {
        initContainers: first.spec!.initContainers,
        volumes: first.spec!.volumes,
      },
    );
    const stored = await createPod(appNs.name, copy);
    expect(sidecarsOf(stored)).toHaveLength(1);
    expect(stored.spec!.volumes!.filter((v) => v.name === CARD_VOLUME)).toHaveLength(1);
  });

  it('does not touch a Pod without the annotation', async () => {
    const body = podBody(`plain-${counter++}`);
    const stored = await createPod(appNs.name, body);
    expect(sidecarsOf(stored)).toHaveLength(0);
    expect(stored.spec!.initContainers).toBeUndefined();
    expect(stored.spec!.volumes ?? []).toEqual([]);
    expect(stored.metadata?.annotations?.[INJECT_ANNOTATION]).toBeUndefined();
  });

  it('does not inject for an AgentCard in another namespace, nor in the operator namespace', async () => {
    const cross = await createPod(
      appNs.name,
      podBody(`cross-${counter++}`, { [INJECT_ANNOTATION]: `${otherNs.name}/weather` }),
    );
    expect(sidecarsOf(cross)).toHaveLength(0);
    const own = await createPod(
      operatorNs.name,
      podBody(`operator-${counter++}`, { [INJECT_ANNOTATION]: 'weather' }),
    );
    expect(sidecarsOf(own)).toHaveLength(0);
    // Control: the same annotation value without the foreign namespace is injected.
    const same = await createPod(
      appNs.name,
      podBody(`same-${counter++}`, { [INJECT_ANNOTATION]: `${appNs.name}/weather` }),
    );
    expect(sidecarsOf(same)).toHaveLength(1);
  });

  it('two replicas starting together agree on one certificate, and renew it once', async () => {
    const opts = {
      namespace: operatorNs.name,
      secretName: 'replicas-tls',
      hosts: ['agentcard-webhook.x.svc'],
    };
    const client = new KubeClient(kc);
    const [a, b] = await Promise.all([syncCertSecret(client, opts), syncCertSecret(client, opts)]);
    expect(a.bundle.cert).toBe(b.bundle.cert);
    expect([a.renewed, b.renewed].filter(Boolean)).toHaveLength(1);
    const stored = await core.readNamespacedSecret({ name: 'replicas-tls', namespace: operatorNs.name });
    expect(Buffer.from(stored.data![SECRET_KEYS.cert]!, 'base64').toString()).toBe(a.bundle.cert);
    // 300 days later both see a certificate due for renewal; one renewal wins, same CA.
    const later = { ...opts, now: new Date(Date.now() + 300 * 86_400_000) };
    const [c, d] = await Promise.all([syncCertSecret(client, later), syncCertSecret(client, later)]);
    expect(c.bundle.cert).toBe(d.bundle.cert);
    expect(c.bundle.cert).not.toBe(a.bundle.cert);
    expect(c.bundle.caCert).toBe(a.bundle.caCert);
  });

  it('puts the caBundle back when something else reverts it', async () => {
    const want = (await admission.readMutatingWebhookConfiguration({ name: configName })).webhooks![0]!
      .clientConfig.caBundle;
    await admission.patchMutatingWebhookConfiguration(
      { name: configName, body: [{ op: 'remove', path: '/webhooks/0/clientConfig/caBundle' }] },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    const restored = await eventually(
      'the caBundle restored',
      async () => {
        const c = await admission.readMutatingWebhookConfiguration({ name: configName });
        return c.webhooks![0]!.clientConfig.caBundle || undefined;
      },
      10_000,
    );
    expect(restored).toBe(want);
  });

  it('with the webhook down and failurePolicy Ignore, the Pod is created and reported missing', async () => {
    await webhook!.close();
    webhook = undefined;
    const stored = await createPod(
      appNs.name,
      podBody(`unserved-${counter++}`, { [INJECT_ANNOTATION]: 'weather' }),
    );
    expect(sidecarsOf(stored)).toHaveLength(0);
    const pods = (await core.listNamespacedPod({ namespace: appNs.name })).items;
    const summary = summarizeServing({ name: 'weather', namespace: appNs.name }, pods);
    expect(summary.missing).toContain(stored.metadata!.name);
    expect(summary.podsMissingSidecar).toBe(summary.missing?.length);
    // Every other annotated Pod in the namespace got its sidecar while the webhook was up.
    const injected = pods.filter((p) => sidecarsOf(p).length === 1).length;
    expect(summary.podsRequesting).toBe(injected + summary.podsMissingSidecar);
    expect(
      (summary.missing ?? []).every((name) => !name.startsWith('same-') && !name.startsWith('again-')),
    ).toBe(true);
  });
});
