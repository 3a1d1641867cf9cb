/**
 * The collections the controllers read from the manager's cache (runtime/cache.ts), each with
 * the one trim every reader shares: one watch per collection for the whole operator.
 *
 * - AgentCards, without kubectl's last-applied copy;
 * - the ConfigMaps the operator owns (by label); a card's trimmed to its signed cards and digests
 *   of the rest (configmap-trim.ts);
 * - signing-key Secrets with their data: those labelled, or in named mode each named one (the
 *   Secrets an unlabelled key names are read by GET at reconcile time, never cached);
 * - every Secret's metadata (not in named mode), so that a referenced Secret that appears or
 *   changes re-queues its cards within seconds whoever created it and whatever its labels;
 * - Pods trimmed to what status.serving needs; Namespaces trimmed to their labels;
 * - the catalogs, the catalog imports, the adoptable workloads and cert-manager's Certificates;
 * - the policies, and the ValidatingAdmissionPolicies and bindings generated from them (by label);
 * - Services trimmed to their ports and whether they select Pods, and the NetworkPolicies
 *   generated for agents (by label), for the network controller.
 */
import type { KubernetesObject, V1Namespace, V1Pod, V1Secret, V1Service } from '@kubernetes/client-node';
import {
  ADOPT_SELECTOR,
  CATALOG_KIND,
  CATALOG_PLURAL,
  CLUSTER_CATALOG_KIND,
  CLUSTER_CATALOG_PLURAL,
  CLUSTER_POLICY_KIND,
  CLUSTER_POLICY_PLURAL,
  GROUP,
  NETWORK_POLICY_LABEL,
  IMPORT_KIND,
  IMPORT_PLURAL,
  OWNED_SELECTOR,
  PLURAL,
  POLICY_KIND,
  POLICY_LABEL,
  POLICY_PLURAL,
  SIGNING_KEY_LABEL,
  VERSION,
} from '../../api/names.ts';
import type { AgentCardObject } from '../../api/objects.ts';
import type { Cache, Collection, SharedInformer } from '../../runtime/cache.ts';
import { trimPod } from '../../serving/pod-index.ts';
import { trimConfigMap, type CachedConfigMap } from './configmap-trim.ts';
import { shareInterfaceUrls, shareStatusStrings, StringTable } from './status-strings.ts';

export const SIGNING_KEY_SELECTOR = `${SIGNING_KEY_LABEL}=true`;
const AGENTCARD_API = `/apis/${GROUP}/${VERSION}`;

/** The cert-manager API the issuer controller requests Certificates from. */
export const CERTIFICATE_API = '/apis/cert-manager.io/v1';

export type CachedAgentCard = AgentCardObject & KubernetesObject;

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
 * Keeps a Namespace's name, labels and version (in place): only the labels are read (selectors).
 * The metadata is replaced, not pruned with delete (V8's dictionary objects are larger).
 */
export function trimNamespace(ns: V1Namespace): void {
  ns.metadata = {
    name: ns.metadata?.name,
    labels: ns.metadata?.labels,
    resourceVersion: ns.metadata?.resourceVersion,
  };
  // Emptied, not deleted: a delete makes the whole object a dictionary object (see trimToIdentity).
  ns.spec = undefined;
  ns.status = undefined;
}

/** One table for the whole AgentCard cache: its strings live as long as the process. */
const agentCardStrings = new StringTable();
/** The conditions' times, which change with every second (status-strings.ts). */
const agentCardTimes = new StringTable(1_024);

/** What the AgentCard cache keeps: the object without kubectl's copy, status strings and URLs shared. */
export function trimAgentCard(card: CachedAgentCard): void {
  dropLastApplied(card);
  shareStatusStrings(card, agentCardStrings, agentCardTimes);
  shareInterfaceUrls(card);
}

export const AGENT_CARDS: Collection<CachedAgentCard> = {
  name: 'agentcards',
  api: AGENTCARD_API,
  plural: PLURAL,
  namespaced: true,
  trim: trimAgentCard,
};

export const OWNED_CONFIGMAPS: Collection<CachedConfigMap> = {
  name: 'configmaps',
  api: '/api/v1',
  plural: 'configmaps',
  namespaced: true,
  labelSelector: OWNED_SELECTOR,
  trim: trimConfigMap,
};

const SIGNING_SECRETS: Collection<V1Secret> = {
  name: 'secrets',
  api: '/api/v1',
  plural: 'secrets',
  namespaced: true,
  labelSelector: SIGNING_KEY_SELECTOR,
};

const SECRET_METADATA: Collection<KubernetesObject> = {
  name: 'secret-metadata',
  api: '/api/v1',
  plural: 'secrets',
  namespaced: true,
  metadataOnly: true,
  trim: trimToIdentity,
};

export const PODS: Collection<V1Pod> = {
  name: 'pods',
  api: '/api/v1',
  plural: 'pods',
  namespaced: true,
  trim: trimPod,
};

export const NAMESPACES: Collection<V1Namespace> = {
  name: 'namespaces',
  api: '/api/v1',
  plural: 'namespaces',
  namespaced: false,
  trim: trimNamespace,
};

export const AGENT_CATALOGS = {
  name: 'agentcatalogs',
  api: AGENTCARD_API,
  plural: CATALOG_PLURAL,
  namespaced: true,
  optional: true,
  kind: CATALOG_KIND,
} as const;

export const CLUSTER_AGENT_CATALOGS = {
  name: 'clusteragentcatalogs',
  api: AGENTCARD_API,
  plural: CLUSTER_CATALOG_PLURAL,
  namespaced: false,
  optional: true,
  kind: CLUSTER_CATALOG_KIND,
} as const;

/** The CatalogImports (operator/federation/); optional: the CRD may be installed later. */
export const CATALOG_IMPORTS = {
  name: 'catalogimports',
  api: AGENTCARD_API,
  plural: IMPORT_PLURAL,
  namespaced: true,
  optional: true,
  kind: IMPORT_KIND,
} as const;

export const AGENT_POLICIES = {
  name: 'agentpolicies',
  api: AGENTCARD_API,
  plural: POLICY_PLURAL,
  namespaced: true,
  optional: true,
  kind: POLICY_KIND,
} as const;

export const CLUSTER_AGENT_POLICIES = {
  name: 'clusteragentpolicies',
  api: AGENTCARD_API,
  plural: CLUSTER_POLICY_PLURAL,
  namespaced: false,
  optional: true,
  kind: CLUSTER_POLICY_KIND,
} as const;

/** The API of ValidatingAdmissionPolicies (GA in Kubernetes 1.30). */
export const ADMISSION_API = '/apis/admissionregistration.k8s.io/v1';

/** The ValidatingAdmissionPolicies generated from policies (by label); optional: an older API server. */
export const GENERATED_ADMISSION_POLICIES = {
  name: 'validatingadmissionpolicies',
  api: ADMISSION_API,
  plural: 'validatingadmissionpolicies',
  namespaced: false,
  labelSelector: `${OWNED_SELECTOR},${POLICY_LABEL}`,
  optional: true,
  kind: 'ValidatingAdmissionPolicy',
} as const;

/** Their bindings, selected the same way. */
export const GENERATED_ADMISSION_BINDINGS = {
  name: 'validatingadmissionpolicybindings',
  api: ADMISSION_API,
  plural: 'validatingadmissionpolicybindings',
  namespaced: false,
  labelSelector: `${OWNED_SELECTOR},${POLICY_LABEL}`,
  optional: true,
  kind: 'ValidatingAdmissionPolicyBinding',
} as const;

/** Deployments or StatefulSets labelled for adoption, metadata only (the Pod template can be large). */
export function adoptableWorkloads(
  kind: 'Deployment' | 'StatefulSet',
): Collection<KubernetesObject & { kind?: string }> {
  return kind === 'Deployment' ? DEPLOYMENTS : STATEFULSETS;
}

function trimWorkload(kind: string): (w: KubernetesObject) => void {
  return (w) => {
    const m = w.metadata ?? {};
    w.metadata = {
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      labels: m.labels,
      annotations: m.annotations,
      deletionTimestamp: m.deletionTimestamp,
      resourceVersion: m.resourceVersion,
    };
    w.kind = kind;
    delete (w as { spec?: unknown }).spec;
    delete (w as { status?: unknown }).status;
  };
}

const DEPLOYMENTS: Collection<KubernetesObject> = {
  name: 'deployments',
  api: '/apis/apps/v1',
  plural: 'deployments',
  namespaced: true,
  labelSelector: ADOPT_SELECTOR,
  trim: trimWorkload('Deployment'),
};

const STATEFULSETS: Collection<KubernetesObject> = {
  name: 'statefulsets',
  api: '/apis/apps/v1',
  plural: 'statefulsets',
  namespaced: true,
  labelSelector: ADOPT_SELECTOR,
  trim: trimWorkload('StatefulSet'),
};

/** The Certificates the operator owns (by label); cert-manager may be installed later. */
export const OWNED_CERTIFICATES = {
  name: 'certificates',
  api: CERTIFICATE_API,
  plural: 'certificates',
  namespaced: true,
  labelSelector: OWNED_SELECTOR,
  optional: true,
  kind: 'cert-manager Certificate',
} as const;

/** The signing-key Secrets a controller reads, and whether every readable one is cached. */
export interface SecretCaches {
  /** Signing-key Secrets with their data: the labelled ones, or (named mode) each named one. */
  secrets: Array<SharedInformer<V1Secret>>;
  /** Every Secret's metadata; none in named mode (the named Secrets' own watches say it all). */
  metadata: Array<SharedInformer<KubernetesObject>>;
  /** Named mode: the cached Secrets are all the operator may read; nothing is read by GET. */
  secretNames?: readonly string[];
}

/**
 * The Secret collections for `secretNames` (named mode, `--secret-name`: RBAC resourceNames, and
 * the API server authorizes a list or watch under resourceNames only with the field selector
 * metadata.name=<name>, so one watch per name, with data, and no GET) or for the default mode
 * (labelled Secrets with data, every Secret's metadata). Cost of the metadata: about 0.5 KiB of
 * heap per Secret (docs/BENCHMARKS.md, "Secret metadata cache"). cert-manager takes the same
 * approach for the Secrets its Certificates name.
 */
export function secretCaches(cache: Cache, secretNames: readonly string[] = []): SecretCaches {
  if (secretNames.length)
    return {
      secrets: secretNames.map((name) =>
        cache.informer<V1Secret>({
          name: `secrets-named-${name}`,
          api: '/api/v1',
          plural: 'secrets',
          namespaced: true,
          fieldSelector: `metadata.name=${name}`,
        }),
      ),
      metadata: [],
      secretNames,
    };
  return { secrets: [cache.informer(SIGNING_SECRETS)], metadata: [cache.informer(SECRET_METADATA)] };
}

/**
 * Keeps what port resolution reads of a Service (in place): its selector, whether it
 * is headless, and its ports. The metadata is replaced, not pruned (V8's dictionary objects).
 */
export function trimService(svc: V1Service): void {
  const m = svc.metadata ?? {};
  svc.metadata = { name: m.name, namespace: m.namespace, resourceVersion: m.resourceVersion };
  const spec = svc.spec ?? {};
  svc.spec = {
    ...(spec.selector ? { selector: spec.selector } : {}),
    ...(spec.clusterIP ? { clusterIP: spec.clusterIP } : {}),
    ports: (spec.ports ?? []).map((p) => ({
      port: p.port,
      ...(p.targetPort !== undefined ? { targetPort: p.targetPort } : {}),
      ...(p.protocol ? { protocol: p.protocol } : {}),
    })),
  };
  svc.status = undefined; // Not deleted: see trimNamespace.
}

/** Services, for the A2A ports of the agents' NetworkPolicies (read-only, watched). */
export const SERVICES: Collection<V1Service> = {
  name: 'services',
  api: '/api/v1',
  plural: 'services',
  namespaced: true,
  trim: trimService,
};

/** The NetworkPolicies generated for agents (by label). */
export const GENERATED_NETWORK_POLICIES: Collection<KubernetesObject & { spec?: unknown }> = {
  name: 'networkpolicies',
  api: '/apis/networking.k8s.io/v1',
  plural: 'networkpolicies',
  namespaced: true,
  labelSelector: `${OWNED_SELECTOR},${NETWORK_POLICY_LABEL}=true`,
};
