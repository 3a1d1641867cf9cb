/**
 * The names every part of the operator shares: the API group, version and kind of the
 * AgentCard resource, and the labels, annotations and object names that tie the controller,
 * the webhook, the sidecar and the chart together (kubebuilder's `api/` package plays this
 * role). Everything here is a constant or a pure function; the controller and the webhook
 * both import it and never each other.
 */
import { createHash } from 'node:crypto';

export const GROUP = 'agentcard.dev';
export const VERSION = 'v1alpha1';
export const KIND = 'AgentCard';
export const PLURAL = 'agentcards';
export const SINGULAR = 'agentcard';
export const SHORT_NAMES = ['acard'];
export const CATEGORIES = ['a2a'];
export const API_VERSION = `${GROUP}/${VERSION}`;

/** Pod annotation that asks for the sidecar: `agentcard.dev/inject: <AgentCard name>`. */
export const INJECT_ANNOTATION = 'agentcard.dev/inject';
/**
 * nginx serving mode: the Pod annotations holding the nginx configuration and its njs script,
 * projected into the sidecar as files by a downwardAPI volume (webhook/nginx-container.ts).
 */
export const NGINX_CONF_ANNOTATION = 'agentcard.dev/nginx-conf';
export const NGINX_SCRIPT_ANNOTATION = 'agentcard.dev/nginx-js';
/** The name of the injected container (also how an already injected Pod is recognised). */
export const SIDECAR_CONTAINER = 'agentcard-sidecar';

/** The label that makes a Secret watched, so that its rotation re-signs within seconds. */
export const SIGNING_KEY_LABEL = 'agentcard.dev/signing-key';

/** Labels of the published ConfigMap; the operator watches ConfigMaps by the first pair. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY_VALUE = 'agentcard-operator';
export const CARD_LABEL = 'agentcard.dev/card';
/** The label selector of the owned-ConfigMap watch. */
export const OWNED_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;

/** What a card's ConfigMap tells clients to cache it for, when spec.serving does not say. */
export const DEFAULT_CACHE_MAX_AGE_SECONDS = 300;

/** Data keys of the published ConfigMap. */
export const DATA_KEYS = {
  card: 'agent-card.json',
  legacyCard: 'agent.json',
  jwks: 'jwks.json',
  maxAge: 'cache-max-age-seconds',
} as const;

/** Suffix of the published ConfigMap's name: `<agentcard-name>-agent-card`. */
export const CONFIGMAP_SUFFIX = '-agent-card';

/** The name of the ConfigMap the controller publishes for an AgentCard. */
export function configMapName(cardName: string): string {
  return `${cardName}${CONFIGMAP_SUFFIX}`;
}

/**
 * The AgentCard name a Pod in `namespace` asks for through its inject annotation value, or
 * undefined. A `namespace/name` value counts only for the Pod's own namespace: a Pod can never
 * ask for another namespace's card.
 */
export function requestedCardName(annotation: string | undefined, namespace: string): string | undefined {
  const value = annotation?.trim();
  if (!value) return undefined;
  const slash = value.indexOf('/');
  if (slash < 0) return value;
  return value.slice(0, slash) === namespace ? value.slice(slash + 1) : undefined;
}

// ---- catalogs (AgentCatalog, ClusterAgentCatalog) -------------------------------------------
// Modelled on cert-manager's Issuer and ClusterIssuer: the namespaced kind lists the AgentCards
// of its own namespace, the cluster-scoped kind those of the namespaces it selects.

export const CATALOG_KIND = 'AgentCatalog';
export const CATALOG_PLURAL = 'agentcatalogs';
export const CATALOG_SINGULAR = 'agentcatalog';
export const CLUSTER_CATALOG_KIND = 'ClusterAgentCatalog';
export const CLUSTER_CATALOG_PLURAL = 'clusteragentcatalogs';
export const CLUSTER_CATALOG_SINGULAR = 'clusteragentcatalog';
export type CatalogKind = typeof CATALOG_KIND | typeof CLUSTER_CATALOG_KIND;

/** Label of a published catalog ConfigMap: catalogLabelValue() of the catalog that owns it. */
export const CATALOG_LABEL = 'agentcard.dev/catalog';

/**
 * An AgentCard annotation stating where its card is served for the default audience (an https
 * URL), for when the origin of its first interface is not where the card is (a gateway in front).
 */
export const CARD_URL_ANNOTATION = 'agentcard.dev/card-url';

/**
 * An AgentCard annotation that accepts one breaking change held by spec.changes.breaking Enforce:
 * its value is the digest the Published condition names for that change (docs/changes.md).
 */
export const ACCEPT_BREAKING_ANNOTATION = 'agentcard.dev/accept-breaking-change';

/**
 * The root ConfigMap of a catalog (`<name>-ai-catalog`; `<name>-cluster-ai-catalog` for a
 * ClusterAgentCatalog, published in the operator's namespace where an AgentCatalog of the same
 * name may live), or partition `part` of it (`...-p<N>`).
 */
export function catalogConfigMapName(kind: CatalogKind, catalogName: string, part?: number): string {
  const base = `${catalogName}${kind === CLUSTER_CATALOG_KIND ? '-cluster' : ''}-ai-catalog`;
  return part === undefined ? base : `${base}-p${part}`;
}

/** Value of CATALOG_LABEL: the catalog's kind and name, hashed when longer than a label value may be. */
export function catalogLabelValue(kind: CatalogKind, name: string): string {
  const value = `${kind === CATALOG_KIND ? 'ns' : 'cluster'}.${name}`;
  return value.length <= 63 ? value : `h.${createHash('sha256').update(value).digest('hex').slice(0, 40)}`;
}

// ---- central serving and adoption ------------------------------------------------------------

/**
 * Label of a published card ConfigMap whose AgentCard chose `spec.serving.server: Central`: the
 * card server lists and watches ConfigMaps by `SERVING_LABEL=SERVING_CENTRAL` only.
 */
export const SERVING_LABEL = 'agentcard.dev/serving';
export const SERVING_CENTRAL = 'central';
/** The card server's label selector (our ConfigMaps, central serving). */
export const CENTRAL_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE},${SERVING_LABEL}=${SERVING_CENTRAL}`;
/** Data key of a central card's ConfigMap: the default audience's hosts, one per line. */
export const SERVING_HOSTS_KEY = 'serving-hosts';

/**
 * Label on a Deployment or StatefulSet that asks the operator to create and own an AgentCard
 * for it (`agentcard.dev/adopt: "true"`), with the card port in ADOPT_PORT_ANNOTATION.
 */
export const ADOPT_LABEL = 'agentcard.dev/adopt';
export const ADOPT_SELECTOR = `${ADOPT_LABEL}=true`;
/** The port (number or container port name) the workload's Service serves its own card on. */
export const ADOPT_PORT_ANNOTATION = 'agentcard.dev/card-port';
/** The Service to fetch the card from; default: the workload's name. */
export const ADOPT_SERVICE_ANNOTATION = 'agentcard.dev/card-service';
/** The path of the workload's own card; default: /.well-known/agent-card.json. */
export const ADOPT_PATH_ANNOTATION = 'agentcard.dev/card-path';
/** Hosts the card server answers the adopted card for (comma-separated). */
export const ADOPT_HOSTS_ANNOTATION = 'agentcard.dev/card-hosts';
/** Label of an AgentCard created by adoption (value: `deployment` or `statefulset`). */
export const ADOPTED_LABEL = 'agentcard.dev/adopted-from';
/** The default namespace label that allows adoption (chart value adoption.namespaceSelector). */
export const ADOPTION_NAMESPACE_LABEL = 'agentcard.dev/adoption';

// ---- signing certificates requested from cert-manager (operator/controllers/issuer/) ---------------------

/** Suffix of the Certificate (and its Secret) the operator requests for a card's issuerRef key. */
export const SIGNING_CERTIFICATE_SUFFIX = '-signing';

/**
 * The name of the cert-manager Certificate the operator owns for an AgentCard, and of the Secret
 * cert-manager writes for it: `<agentcard-name>-signing`, hashed when longer than a name may be.
 */
export function signingCertificateName(cardName: string): string {
  const name = `${cardName}${SIGNING_CERTIFICATE_SUFFIX}`;
  if (name.length <= 253) return name;
  const hash = createHash('sha256').update(cardName).digest('hex').slice(0, 16);
  return `${cardName.slice(0, 253 - SIGNING_CERTIFICATE_SUFFIX.length - 17)}-${hash}${SIGNING_CERTIFICATE_SUFFIX}`;
}

// ---- policies (AgentPolicy, ClusterAgentPolicy: operator/policy/) ------------------------------
// The catalogs' Issuer/ClusterIssuer pattern again: the namespaced kind governs the AgentCards
// of its own namespace, the cluster-scoped kind those of the namespaces it selects.

export const POLICY_KIND = 'AgentPolicy';
export const POLICY_PLURAL = 'agentpolicies';
export const POLICY_SINGULAR = 'agentpolicy';
export const CLUSTER_POLICY_KIND = 'ClusterAgentPolicy';
export const CLUSTER_POLICY_PLURAL = 'clusteragentpolicies';
export const CLUSTER_POLICY_SINGULAR = 'clusteragentpolicy';
export type PolicyKind = typeof POLICY_KIND | typeof CLUSTER_POLICY_KIND;

/**
 * Label of every object generated from a policy (its ValidatingAdmissionPolicy and binding):
 * policyLabelValue() of the policy, so that deleting the policy can find and remove them.
 */
export const POLICY_LABEL = 'agentcard.dev/policy';

/** Value of POLICY_LABEL: the policy's kind, namespace and name, hashed when too long for a label. */
export function policyLabelValue(kind: PolicyKind, name: string, namespace?: string): string {
  const value = kind === POLICY_KIND ? `ns.${namespace}.${name}` : `cluster.${name}`;
  return value.length <= 63 ? value : `h.${createHash('sha256').update(value).digest('hex').slice(0, 40)}`;
}

// ---- federation (CatalogImport: operator/federation/) ------------------------------------------
// A namespaced kind that imports another cluster's signed AI Catalog: what verifies against its
// trust policy is stored in ConfigMaps it owns, which local catalogs list (docs/federation.md).

export const IMPORT_KIND = 'CatalogImport';
export const IMPORT_PLURAL = 'catalogimports';
export const IMPORT_SINGULAR = 'catalogimport';

/**
 * Label of the ConfigMaps that hold an import's verified entries (operator/federation/store.ts):
 * importLabelValue() of the CatalogImport that owns them.
 */
export const IMPORT_LABEL = 'agentcard.dev/catalog-import';

/** Value of IMPORT_LABEL: the import's name, hashed when longer than a label value may be. */
export function importLabelValue(name: string): string {
  return name.length <= 63 ? name : `h.${createHash('sha256').update(name).digest('hex').slice(0, 40)}`;
}

/**
 * The ConfigMap holding shard `shard` of an import's entries: `<name>-imported-<shard>`, the name
 * hashed when longer than a ConfigMap name may be.
 */
export function importConfigMapName(importName: string, shard: number): string {
  const suffix = `-imported-${shard}`;
  if (importName.length + suffix.length <= 253) return `${importName}${suffix}`;
  const hash = createHash('sha256').update(importName).digest('hex').slice(0, 16);
  return `${importName.slice(0, 253 - suffix.length - 17)}-${hash}${suffix}`;
}
