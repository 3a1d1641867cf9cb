/**
 * The Secrets a resource references (signing keys, probe credentials), as the planners see them:
 * from the labelled-Secret cache when there, else one GET each (only Secret metadata is watched
 * cluster-wide). Shared by the AgentCard and catalog controllers.
 */
import type { V1Secret } from '@kubernetes/client-node';
import { SIGNING_KEY_LABEL } from '../api/names.ts';
import { readSecret } from '../kube/api.ts';
import type { KubeClient } from '../kube/client.ts';
import type { ResilientInformer } from '../kube/informer.ts';
import type { SecretView } from './plan.ts';
import { referencedSecretNames } from './secret-index.ts';

export async function readReferencedSecrets(
  client: KubeClient,
  cache: ResilientInformer<V1Secret> | undefined,
  namespace: string,
  spec: unknown,
  signal?: AbortSignal,
): Promise<Map<string, SecretView | undefined>> {
  const out = new Map<string, SecretView | undefined>();
  for (const name of referencedSecretNames(spec)) {
    const secret = cache?.get(name, namespace) ?? (await readSecret(client, namespace, name, signal));
    out.set(
      name,
      secret
        ? { data: secret.data ?? {}, labelled: secret.metadata?.labels?.[SIGNING_KEY_LABEL] === 'true' }
        : undefined,
    );
  }
  return out;
}
