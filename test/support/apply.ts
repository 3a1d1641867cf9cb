// Server-side apply of manifests for tests, the way `kubectl apply --server-side` does it.
import {
  ApiextensionsV1Api,
  KubernetesObjectApi,
  loadAllYaml,
  PatchStrategy,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { kubeConfig } from './cluster.ts';

/**
 * Applies every document of a YAML manifest with server-side apply (force, one field manager).
 * The documents go through client-node's `loadAllYaml`, which turns them into its typed models:
 * `KubernetesObjectApi` serializes known kinds from those models, and would silently drop fields
 * it only knows under another name (a raw CRD's `x-kubernetes-validations` or `enum`).
 */
export async function applyYaml(
  text: string,
  opts: { fieldManager?: string; namespace?: string; kc?: KubeConfig } = {},
): Promise<KubernetesObject[]> {
  const client = KubernetesObjectApi.makeApiClient(opts.kc ?? kubeConfig());
  const applied: KubernetesObject[] = [];
  for (const doc of loadAllYaml(text) as KubernetesObject[]) {
    if (!doc) continue;
    if (opts.namespace && !doc.metadata?.namespace)
      doc.metadata = { ...doc.metadata, namespace: opts.namespace };
    applied.push(
      await client.patch(
        doc,
        undefined,
        undefined,
        opts.fieldManager ?? 'agentcard-tests',
        true,
        PatchStrategy.ServerSideApply,
      ),
    );
  }
  return applied;
}

/** Waits (at most `timeoutMs`) until a CustomResourceDefinition is Established, so its resources can be used. */
export async function waitForCrdEstablished(
  name: string,
  timeoutMs = 30_000,
  kc = kubeConfig(),
): Promise<void> {
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const crd = await ext.readCustomResourceDefinition({ name });
    if (crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return;
    if (Date.now() > deadline) throw new Error(`CRD ${name} was not Established within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
