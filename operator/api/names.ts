/**
 * The names every part of the operator shares: the API group, version and kind of the
 * AgentCard resource, and the labels, annotations and object names that tie the controller,
 * the webhook, the sidecar and the chart together (kubebuilder's `api/` package plays this
 * role). Everything here is a constant or a pure function; the controller and the webhook
 * both import it and never each other.
 */

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
