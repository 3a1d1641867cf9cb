/**
 * The caches the controller reads, one set per watched namespace ('' = all namespaces):
 * AgentCards (without kubectl's last-applied copy), the ConfigMaps it owns (by label; a card's
 * trimmed to its signed cards and digests), signing-key Secrets (by label: unlabelled Secrets are
 * read with a direct GET), and Pods trimmed to what status.serving needs.
 */
import type { KubernetesObject, V1Pod, V1Secret } from '@kubernetes/client-node';
import { GROUP, OWNED_SELECTOR, PLURAL, SIGNING_KEY_LABEL, VERSION } from '../../api/names.ts';
import { collectionPath } from '../../kube/api.ts';
import type { KubeClient } from '../../kube/client.ts';
import { ResilientInformer } from '../../kube/informer.ts';
import type { Logger } from '../../log.ts';
import { trimConfigMap, type CachedConfigMap } from './configmap-cache.ts';
import type { AgentCardObject } from '../../api/objects.ts';
import { trimPod } from './pod-index.ts';

export const SIGNING_KEY_SELECTOR = `${SIGNING_KEY_LABEL}=true`;

export interface Informers {
  cards: ResilientInformer<AgentCardObject & KubernetesObject>;
  configMaps: ResilientInformer<CachedConfigMap>;
  /** Signing-key Secrets with their data: those labelled, or (named mode) each named one. */
  secrets: Array<ResilientInformer<V1Secret>>;
  /** Every Secret's metadata; none in named mode (the named Secrets' own watches say it all). */
  secretMetadata: Array<ResilientInformer<KubernetesObject>>;
  /** Named mode: the cached Secrets are all the operator may read; nothing is read by GET. */
  secretNames?: readonly string[];
  pods: ResilientInformer<V1Pod>;
}

export function createInformers(
  client: KubeClient,
  log: Logger,
  namespace: string | undefined,
  secretNames: readonly string[] = [],
): Informers {
  const scope = namespace ?? '*';
  const secrets = secretNames.length ? namedSecretInformers(client, log, namespace, secretNames) : undefined;
  return {
    cards: new ResilientInformer<AgentCardObject & KubernetesObject>({
      name: `agentcards/${scope}`,
      client,
      path: collectionPath(`/apis/${GROUP}/${VERSION}`, PLURAL, namespace),
      log,
      trim: dropLastApplied,
    }),
    // A card's ConfigMap is cached with its signed cards and digests of the rest (configmap-cache.ts).
    configMaps: new ResilientInformer<CachedConfigMap>({
      name: `configmaps/${scope}`,
      client,
      path: collectionPath('/api/v1', 'configmaps', namespace),
      labelSelector: OWNED_SELECTOR,
      log,
      trim: trimConfigMap,
    }),
    ...(secrets ?? {
      secrets: [
        new ResilientInformer<V1Secret>({
          name: `secrets/${scope}`,
          client,
          path: collectionPath('/api/v1', 'secrets', namespace),
          labelSelector: SIGNING_KEY_SELECTOR,
          log,
        }),
      ],
      // Every Secret of the scope, metadata only (PartialObjectMetadata, trimmed to name, namespace
      // and resourceVersion), so that a referenced Secret that appears or changes re-queues its
      // cards within seconds whoever created it and whatever its labels: GitOps tools (Argo CD,
      // Flux, External Secrets, sealed-secrets) create Secrets in any order and without our label.
      // This is cert-manager's approach. The alternative, re-checking cards with missing Secrets
      // on a backoff capped at a minute, could not promise 30 s. Cost: about 0.5 KiB of heap per Secret
      // in the cache (docs/BENCHMARKS.md, "Secret metadata cache"); the data of unlabelled Secrets
      // is still read only by name at reconcile time, never cached.
      secretMetadata: [
        new ResilientInformer<KubernetesObject>({
          name: `secret-metadata/${scope}`,
          client,
          path: collectionPath('/api/v1', 'secrets', namespace),
          metadataOnly: true,
          log,
          trim: trimToIdentity,
        }),
      ],
    }),
    pods: new ResilientInformer<V1Pod>({
      name: `pods/${scope}`,
      client,
      path: collectionPath('/api/v1', 'pods', namespace),
      log,
      trim: trimPod,
    }),
  };
}

/** Every informer of every scope, for start, stop and sync checks. */
export function allInformers(scopes: Iterable<Informers>): Array<ResilientInformer<KubernetesObject>> {
  return [...scopes].flatMap((i) => [
    i.cards,
    i.configMaps,
    ...i.secrets,
    ...i.secretMetadata,
    i.pods,
  ]) as Array<ResilientInformer<KubernetesObject>>;
}

/**
 * Keeps only what identifies an object and its version (in place). The metadata is replaced, not
 * pruned with delete, which would switch V8 to slower and larger dictionary objects.
 */
export function trimToIdentity(obj: KubernetesObject): void {
  const { name, namespace, resourceVersion } = obj.metadata ?? {};
  obj.metadata = { name, namespace, resourceVersion };
}

/** The annotation `kubectl apply` (client-side) writes: a second copy of the whole object. */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * Drops kubectl's last-applied-configuration from a cached object (in place): it repeats the
 * spec, so an AgentCard applied with `kubectl apply` would be cached twice, and nothing here
 * reads it. The other annotations stay (catalogs read the card URL annotation).
 */
export function dropLastApplied(obj: KubernetesObject): void {
  const annotations = obj.metadata?.annotations;
  if (!annotations || !Object.hasOwn(annotations, LAST_APPLIED_ANNOTATION)) return;
  // A new object, not delete, which would switch V8 to slower and larger dictionary objects.
  const { [LAST_APPLIED_ANNOTATION]: _dropped, ...rest } = annotations;
  obj.metadata!.annotations = rest;
}

/**
 * Named mode (`--secret-name`, the chart's `rbac.secretNames`): the operator may get, list and
 * watch only Secrets of these names (RBAC resourceNames), and the API server authorizes a list or
 * watch under resourceNames only with the field selector metadata.name=<name>. So one watch per
 * name, with data: a referenced Secret that appears or is rotated re-signs its cards as promptly
 * as in the default mode, and no Secret is read by GET.
 */
function namedSecretInformers(
  client: KubeClient,
  log: Logger,
  namespace: string | undefined,
  names: readonly string[],
): Pick<Informers, 'secrets' | 'secretMetadata' | 'secretNames'> {
  const scope = namespace ?? '*';
  return {
    secrets: names.map(
      (name) =>
        new ResilientInformer<V1Secret>({
          name: `secrets/${scope}/${name}`,
          client,
          path: collectionPath('/api/v1', 'secrets', namespace),
          fieldSelector: `metadata.name=${name}`,
          log,
        }),
    ),
    secretMetadata: [],
    secretNames: names,
  };
}
