/**
 * The Secrets a resource references (signing keys, probe credentials), as the planners see them:
 * from the Secret caches when there, else one GET each (only Secret metadata is watched
 * cluster-wide). Shared by the AgentCard and catalog controllers.
 */
import { SIGNING_KEY_LABEL } from '../api/names.ts';
import { readSecret } from '../kube/api.ts';
import type { KubeClient } from '../kube/client.ts';
import type { Informers } from '../controllers/agentcard/informers.ts';
import type { SecretView } from './keys.ts';
import { referencedSecretNames } from './secret-index.ts';

export async function readReferencedSecrets(
  client: KubeClient,
  scope: Pick<Informers, 'secrets' | 'secretNames'> | undefined,
  namespace: string,
  spec: unknown,
  signal?: AbortSignal,
  /** The AgentCard's name: its issuerRef key refers to the Secret issued for it. */
  cardName?: string,
): Promise<Map<string, SecretView | undefined>> {
  const out = new Map<string, SecretView | undefined>();
  for (const name of referencedSecretNames(spec, cardName)) {
    const cached = scope?.secrets.map((c) => c.get(name, namespace)).find((s) => s !== undefined);
    // Named mode: the caches hold every Secret the operator may read; any other is not readable.
    const secret =
      cached ?? (scope?.secretNames ? undefined : await readSecret(client, namespace, name, signal));
    out.set(
      name,
      secret
        ? { data: secret.data ?? {}, labelled: secret.metadata?.labels?.[SIGNING_KEY_LABEL] === 'true' }
        : undefined,
    );
  }
  return out;
}
