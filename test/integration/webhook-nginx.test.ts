/**
 * The nginx serving mode through the real kube-apiserver: a Pod created in a namespace that
 * enforces the `restricted` Pod Security Standard comes back with the nginx sidecar, its two
 * configuration annotations and the downwardAPI volume that projects them (the API server
 * validates the field paths), and the stored configuration is the one the suite runs nginx with.
 */
import { CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { V1Pod } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INJECT_ANNOTATION, NGINX_CONF_ANNOTATION, SIDECAR_CONTAINER } from '../../operator/api/names.ts';
import { KubeClient } from '../../operator/kube/client.ts';
import { createLogger } from '../../operator/log.ts';
import { startWebhook } from '../../operator/webhook/server.ts';
import type { Webhook } from '../../operator/webhook/server.ts';
import { webhookNginxConfig } from '../support/card-servers.ts';
import { createTestNamespace, kubeConfig } from '../support/cluster.ts';
import type { TestNamespace } from '../support/cluster.ts';
import { freePort } from '../support/ports.ts';
import { registerPodWebhook } from '../support/webhook-config.ts';

const NGINX_IMAGE = `nginxinc/nginx-unprivileged@sha256:${'f'.repeat(64)}`;

describe('nginx sidecar injection (real kube-apiserver, Pod Security restricted)', () => {
  let core: CoreV1Api;
  let operatorNs: TestNamespace;
  let appNs: TestNamespace;
  let webhook: Webhook | undefined;
  let configName: string;
  let unregister: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    const kc = kubeConfig();
    core = kc.makeApiClient(CoreV1Api);
    operatorNs = await createTestNamespace('nginx-operator', kc);
    appNs = await createTestNamespace('nginx-app', kc);
    await core.patchNamespace(
      {
        name: appNs.name,
        body: { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    const port = await freePort();
    configName = `agentcard-nginx-${appNs.name}`;
    unregister = await registerPodWebhook(kc, { name: configName, port, namespaces: [appNs.name] });
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
      sidecarServer: 'nginx',
      nginxImage: NGINX_IMAGE,
      logger: createLogger({ test: 'webhook-nginx' }, { write: () => {} }),
      registry: new Registry(),
      extraHosts: ['127.0.0.1'],
      certSyncMs: 500,
    });
  });

  afterAll(async () => {
    await webhook?.close();
    await unregister?.();
    await Promise.all([operatorNs, appNs].map((ns) => ns?.cleanup()));
  });

  it('stores a Pod with nginx, its projected configuration and an emptyDir, under restricted', async () => {
    const body = (name: string): V1Pod => ({
      metadata: { name, annotations: { [INJECT_ANNOTATION]: 'weather' } },
      spec: {
        automountServiceAccountToken: false,
        securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
        containers: [
          {
            name: 'agent',
            image: 'registry.example/agent:1',
            securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          },
        ],
      },
    });
    // The caBundle reaches the admission chain through an informer, and the namespace's
    // ServiceAccount appears asynchronously: retry with fresh Pods until one comes back mutated.
    let stored: V1Pod | undefined;
    const until = Date.now() + 60_000;
    for (let i = 0; !stored && Date.now() < until; i++) {
      try {
        const created = await core.createNamespacedPod({ namespace: appNs.name, body: body(`agent-${i}`) });
        if (created.spec?.initContainers?.some((c) => c.name === SIDECAR_CONTAINER)) stored = created;
      } catch {
        // not yet
      }
      if (!stored) await new Promise((r) => setTimeout(r, 250));
    }
    expect(stored, 'an injected Pod within 60 s').toBeDefined();
    const pod = await core.readNamespacedPod({ name: stored!.metadata!.name!, namespace: appNs.name });
    const sidecar = pod.spec!.initContainers!.find((c) => c.name === SIDECAR_CONTAINER)!;
    expect(sidecar.image).toBe(NGINX_IMAGE);
    expect(sidecar.command).toEqual(['nginx']);
    expect(sidecar.securityContext).toMatchObject({ runAsUser: 101, readOnlyRootFilesystem: true });
    expect(pod.metadata!.annotations![NGINX_CONF_ANNOTATION]).toBe(webhookNginxConfig(false));
    const projected = pod.spec!.volumes!.find((v) => v.downwardAPI)!;
    expect(projected.downwardAPI!.items!.map((i) => i.fieldRef!.fieldPath)).toEqual([
      `metadata.annotations['${NGINX_CONF_ANNOTATION}']`,
    ]);
    expect(pod.spec!.volumes!.find((v) => v.emptyDir)?.name).toBe('agentcard-nginx-tmp');
  });
});
