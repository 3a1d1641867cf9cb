/**
 * The API calls the controller makes, one small function each. Writes use server-side apply
 * (`application/apply-patch+yaml`, field manager `agentcard-operator`, force) so the operator owns
 * exactly the fields it sets and never needs a read-modify-write loop.
 */
import type { KubernetesObject, V1ConfigMap, V1Lease, V1Secret } from '@kubernetes/client-node';
import { CONTENT_TYPE, type KubeClient } from './client.ts';
import { isNotFound } from './errors.ts';

export const FIELD_MANAGER = 'agentcard-operator';
const APPLY = { fieldManager: FIELD_MANAGER, force: true };

/** The custom resource's coordinates (group/version/plural). */
export interface ResourceRef {
  group: string;
  version: string;
  plural: string;
}

const seg = encodeURIComponent;

/** Server-side applies a whole ConfigMap; returns the stored object. */
export function applyConfigMap(
  client: KubeClient,
  cm: V1ConfigMap & { metadata: { name: string; namespace: string } },
  signal?: AbortSignal,
): Promise<V1ConfigMap> {
  const { name, namespace } = cm.metadata;
  return client.request('PATCH', `/api/v1/namespaces/${seg(namespace)}/configmaps/${seg(name)}`, {
    query: APPLY,
    body: cm,
    contentType: CONTENT_TYPE.apply,
    signal,
  });
}

/**
 * Server-side applies `body` (apiVersion, kind, metadata, status) on the status subresource; an
 * undefined namespace addresses a cluster-scoped object.
 */
export function applyStatus(
  client: KubeClient,
  ref: ResourceRef,
  namespace: string | undefined,
  name: string,
  body: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<KubernetesObject> {
  const scope = namespace === undefined ? '' : `/namespaces/${seg(namespace)}`;
  return client.request(
    'PATCH',
    `/apis/${ref.group}/${ref.version}${scope}/${ref.plural}/${seg(name)}/status`,
    {
      query: APPLY,
      body,
      contentType: CONTENT_TYPE.apply,
      signal,
    },
  );
}

/** GET one object; undefined when it does not exist (404). */
export async function readOptional<T>(
  client: KubeClient,
  path: string,
  signal?: AbortSignal,
): Promise<T | undefined> {
  try {
    return await client.request<T>('GET', path, { signal });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** The Secrets of a namespace, or one of them. */
export const secretPath = (namespace: string, name?: string) =>
  `/api/v1/namespaces/${seg(namespace)}/secrets${name ? `/${seg(name)}` : ''}`;

/** A Secret read at reconcile time (no cluster-wide Secret cache); undefined when absent. */
export function readSecret(
  client: KubeClient,
  namespace: string,
  name: string,
  signal?: AbortSignal,
): Promise<V1Secret | undefined> {
  return readOptional(client, secretPath(namespace, name), signal);
}

/** Collection paths for watches: cluster-wide, or one namespace. */
export function collectionPath(apiPrefix: string, plural: string, namespace: string | undefined): string {
  return namespace
    ? `${apiPrefix}/namespaces/${encodeURIComponent(namespace)}/${plural}`
    : `${apiPrefix}/${plural}`;
}

export interface EventInput {
  namespace: string;
  regarding: { apiVersion: string; kind: string; name: string; namespace: string; uid: string };
  type: 'Normal' | 'Warning';
  reason: string;
  action: string;
  note: string;
  reportingController: string;
  reportingInstance: string;
}

let eventCounter = 0;
function eventSuffix(): string {
  eventCounter = (eventCounter + 1) % 0x10000;
  return `${Date.now().toString(16)}${eventCounter.toString(16).padStart(4, '0')}`;
}

/** Creates an events.k8s.io/v1 Event (`kubectl describe` and `kubectl events` show it). */
export async function createEvent(client: KubeClient, e: EventInput): Promise<void> {
  // MicroTime: RFC 3339 with microseconds.
  const now = new Date().toISOString().replace('Z', '000Z');
  await client.request('POST', `/apis/events.k8s.io/v1/namespaces/${seg(e.namespace)}/events`, {
    body: {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      // client-go's naming: <object>.<unique hex>.
      metadata: { name: `${e.regarding.name}.${eventSuffix()}`, namespace: e.namespace },
      eventTime: now,
      type: e.type,
      reason: e.reason,
      action: e.action,
      // The API limits a note to 1 KiB.
      note: e.note.length > 1024 ? `${e.note.slice(0, 1021)}...` : e.note,
      regarding: e.regarding,
      reportingController: e.reportingController,
      reportingInstance: e.reportingInstance,
    },
  });
}

const leasePath = (namespace: string, name?: string) =>
  `/apis/coordination.k8s.io/v1/namespaces/${seg(namespace)}/leases${name ? `/${seg(name)}` : ''}`;

// The Lease calls take the leader elector's signal: each is bounded by what remains of the renew
// deadline, not by the client's 60 s request timeout.
export function readLease(
  client: KubeClient,
  namespace: string,
  name: string,
  signal?: AbortSignal,
): Promise<V1Lease | undefined> {
  return readOptional(client, leasePath(namespace, name), signal);
}

export function createLease(
  client: KubeClient,
  namespace: string,
  lease: V1Lease,
  signal?: AbortSignal,
): Promise<V1Lease> {
  return client.request('POST', leasePath(namespace), { body: lease, signal });
}

/** Replaces a Lease; its metadata.resourceVersion makes it fail with 409 if someone else wrote first. */
export function replaceLease(
  client: KubeClient,
  namespace: string,
  name: string,
  lease: V1Lease,
  signal?: AbortSignal,
): Promise<V1Lease> {
  return client.request('PUT', leasePath(namespace, name), { body: lease, signal });
}
