/**
 * Label adoption (pure): the AgentCard the operator creates for a Deployment or StatefulSet that
 * asks for one with `agentcard.dev/adopt: "true"` and names its card port in
 * `agentcard.dev/card-port`, for an agent whose code serves its own card and was not written
 * for this operator.
 *
 * The AgentCard has the workload's name and namespace, an ownerReference to the workload with
 * controller=true (the workload is its targetRef: deleting the workload lets the garbage
 * collector delete the card, and its ConfigMap after it), `spec.source.service` pointing at the
 * workload's Service and card port, and `spec.serving.server: Central`: the agent's Pods get no
 * sidecar, and the central card server answers for it even while it has no Pods.
 *
 * Which namespaces may ask is the administrator's choice (AdoptionPolicy): a list of names, a
 * namespace label, or both; none set means no namespace, so adoption is off until allowed.
 */
import {
  ADOPT_HOSTS_ANNOTATION,
  ADOPT_LABEL,
  ADOPT_PATH_ANNOTATION,
  ADOPT_PORT_ANNOTATION,
  ADOPT_SERVICE_ANNOTATION,
  ADOPTED_LABEL,
  API_VERSION,
  KIND,
} from '../../api/names.ts';
import { HOST_PATTERN } from '../../card/resource.ts';

export type WorkloadKind = 'Deployment' | 'StatefulSet';

export interface Workload {
  kind: WorkloadKind;
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: unknown;
  };
}

export interface AdoptionPolicy {
  /** Namespaces allowed by name. */
  namespaces: readonly string[];
  /** A namespace label `key=value` (or `key` for any value) that allows it; undefined: none. */
  namespaceLabel?: { key: string; value?: string } | undefined;
}

/** Parses `key=value` or `key` (chart value adoption.namespaceLabel). */
export function parseNamespaceLabel(text: string): { key: string; value?: string } {
  const eq = text.indexOf('=');
  const key = (eq < 0 ? text : text.slice(0, eq)).trim();
  const value = eq < 0 ? undefined : text.slice(eq + 1).trim();
  if (!/^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/.test(key))
    throw new Error(`'${text.slice(0, 80)}' is not a label key (or key=value)`);
  if (value !== undefined && !/^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/.test(value))
    throw new Error(`'${text.slice(0, 80)}' has an invalid label value`);
  return value === undefined ? { key } : { key, value };
}

export function namespaceAllowed(
  policy: AdoptionPolicy,
  namespace: string,
  labels: Record<string, string> | undefined,
): boolean {
  if (policy.namespaces.includes(namespace)) return true;
  const want = policy.namespaceLabel;
  if (!want || !labels || !Object.hasOwn(labels, want.key)) return false;
  return want.value === undefined || labels[want.key] === want.value;
}

export function wantsAdoption(w: Workload): boolean {
  return w.metadata.labels?.[ADOPT_LABEL] === 'true' && !w.metadata.deletionTimestamp;
}

export interface AdoptedCard {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND;
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    ownerReferences: Array<{
      apiVersion: string;
      kind: string;
      name: string;
      uid: string;
      controller: true;
      blockOwnerDeletion: false;
    }>;
  };
  spec: {
    source: { service: { name: string; port: number | string }; path?: string };
    serving: { server: 'Central'; hosts?: string[] };
  };
}

export type AdoptionPlan = { ok: true; card: AdoptedCard } | { ok: false; problem: string };

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const PORT_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** The AgentCard for a workload that asks for adoption, or the problem with its annotations. */
export function desiredAdoptedCard(w: Workload): AdoptionPlan {
  const a = w.metadata.annotations ?? {};
  const portText = a[ADOPT_PORT_ANNOTATION]?.trim();
  if (!portText)
    return {
      ok: false,
      problem: `annotation ${ADOPT_PORT_ANNOTATION} (the port serving the card) is missing`,
    };
  let port: number | string;
  if (/^\d+$/.test(portText)) {
    port = Number(portText);
    if (port < 1 || port > 65535)
      return { ok: false, problem: `${ADOPT_PORT_ANNOTATION} must be a port from 1 to 65535` };
  } else if (portText.length <= 15 && PORT_NAME.test(portText)) port = portText;
  else
    return {
      ok: false,
      problem: `${ADOPT_PORT_ANNOTATION} must be a port number or a Service port name (IANA_SVC_NAME)`,
    };
  const service = a[ADOPT_SERVICE_ANNOTATION]?.trim() || w.metadata.name;
  if (!DNS_LABEL.test(service))
    return { ok: false, problem: `${ADOPT_SERVICE_ANNOTATION} must be a Service name (a DNS label)` };
  const path = a[ADOPT_PATH_ANNOTATION]?.trim();
  if (path !== undefined && path !== '' && !/^\/[^#\s]{0,1023}$/.test(path))
    return { ok: false, problem: `${ADOPT_PATH_ANNOTATION} must be an absolute path without fragment` };
  const hosts = (a[ADOPT_HOSTS_ANNOTATION] ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter((h) => h !== '');
  const hostPattern = new RegExp(HOST_PATTERN);
  const bad = hosts.find((h) => h.length > 230 || !hostPattern.test(h));
  if (bad !== undefined)
    return { ok: false, problem: `${ADOPT_HOSTS_ANNOTATION}: '${bad.slice(0, 60)}' is not a host name` };
  if (new Set(hosts).size !== hosts.length)
    return { ok: false, problem: `${ADOPT_HOSTS_ANNOTATION} names a host twice` };
  if (hosts.length > 16) return { ok: false, problem: `${ADOPT_HOSTS_ANNOTATION} names more than 16 hosts` };

  return {
    ok: true,
    card: {
      apiVersion: API_VERSION,
      kind: KIND,
      metadata: {
        name: w.metadata.name,
        namespace: w.metadata.namespace,
        labels: { [ADOPTED_LABEL]: w.kind.toLowerCase() },
        ownerReferences: [
          {
            apiVersion: 'apps/v1',
            kind: w.kind,
            name: w.metadata.name,
            uid: w.metadata.uid,
            controller: true,
            // The card may go before or after the workload; nothing waits for it.
            blockOwnerDeletion: false,
          },
        ],
      },
      spec: {
        source: { service: { name: service, port }, ...(path ? { path } : {}) },
        serving: { server: 'Central', ...(hosts.length ? { hosts } : {}) },
      },
    },
  };
}

/** Whether `card` is owned (controller=true) by the workload `uid`. */
export function ownedBy(
  card: { metadata?: { ownerReferences?: Array<{ uid?: string; controller?: boolean }> } },
  uid: string,
): boolean {
  return (card.metadata?.ownerReferences ?? []).some((r) => r.uid === uid && r.controller === true);
}
