/**
 * The API calls the controller makes, one small function each. Writes use server-side apply
 * (`application/apply-patch+yaml`, field manager `agentcard-operator`, force) so the operator owns
 * exactly the fields it sets and never needs a read-modify-write loop.
 */
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  PatchStrategy,
  V1MicroTime,
  setHeaderOptions,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type V1ConfigMap,
  type V1Lease,
  type V1Pod,
  type V1Secret,
} from '@kubernetes/client-node';
import { isNotFound } from './errors.ts';

export const FIELD_MANAGER = 'agentcard-operator';
const applyOptions = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);

/** The custom resource's coordinates (group/version/plural). */
export interface ResourceRef {
  group: string;
  version: string;
  plural: string;
}

export interface Clients {
  core: CoreV1Api;
  custom: CustomObjectsApi;
  coordination: CoordinationV1Api;
  events: EventsV1Api;
}

export function makeClients(kc: KubeConfig): Clients {
  return {
    core: kc.makeApiClient(CoreV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    coordination: kc.makeApiClient(CoordinationV1Api),
    events: kc.makeApiClient(EventsV1Api),
  };
}

/** Server-side applies a whole ConfigMap; returns the stored object. */
export async function applyConfigMap(
  clients: Clients,
  cm: { metadata: { name: string; namespace: string } },
): Promise<V1ConfigMap> {
  return clients.core.patchNamespacedConfigMap(
    {
      name: cm.metadata.name,
      namespace: cm.metadata.namespace,
      body: cm,
      fieldManager: FIELD_MANAGER,
      force: true,
    },
    applyOptions,
  );
}

/** Server-side applies `body` (apiVersion, kind, metadata, status) on the status subresource. */
export async function applyStatus(
  clients: Clients,
  ref: ResourceRef,
  namespace: string,
  name: string,
  body: Record<string, unknown>,
): Promise<KubernetesObject> {
  return (await clients.custom.patchNamespacedCustomObjectStatus(
    { ...ref, namespace, name, body, fieldManager: FIELD_MANAGER, force: true },
    applyOptions,
  )) as KubernetesObject;
}

/** A Secret read at reconcile time (no cluster-wide Secret cache); undefined when absent. */
export async function readSecret(
  clients: Clients,
  namespace: string,
  name: string,
): Promise<V1Secret | undefined> {
  try {
    return await clients.core.readNamespacedSecret({ name, namespace });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export function listCustomObjects<T extends KubernetesObject>(
  clients: Clients,
  ref: ResourceRef,
  namespace: string | undefined,
): () => Promise<KubernetesListObject<T>> {
  return async () =>
    (namespace
      ? await clients.custom.listNamespacedCustomObject({ ...ref, namespace })
      : await clients.custom.listClusterCustomObject(ref)) as KubernetesListObject<T>;
}

export function listConfigMaps(
  clients: Clients,
  namespace: string | undefined,
  labelSelector: string,
): () => Promise<KubernetesListObject<V1ConfigMap>> {
  return () =>
    namespace
      ? clients.core.listNamespacedConfigMap({ namespace, labelSelector })
      : clients.core.listConfigMapForAllNamespaces({ labelSelector });
}

export function listPods(
  clients: Clients,
  namespace: string | undefined,
): () => Promise<KubernetesListObject<V1Pod>> {
  return () =>
    namespace ? clients.core.listNamespacedPod({ namespace }) : clients.core.listPodForAllNamespaces();
}

export function listSecrets(
  clients: Clients,
  namespace: string | undefined,
  labelSelector: string,
): () => Promise<KubernetesListObject<V1Secret>> {
  return () =>
    namespace
      ? clients.core.listNamespacedSecret({ namespace, labelSelector })
      : clients.core.listSecretForAllNamespaces({ labelSelector });
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
export async function createEvent(clients: Clients, e: EventInput): Promise<void> {
  const now = new V1MicroTime();
  await clients.events.createNamespacedEvent({
    namespace: e.namespace,
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

export async function readLease(
  clients: Clients,
  namespace: string,
  name: string,
): Promise<V1Lease | undefined> {
  try {
    return await clients.coordination.readNamespacedLease({ name, namespace });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export function createLease(clients: Clients, namespace: string, lease: V1Lease): Promise<V1Lease> {
  return clients.coordination.createNamespacedLease({ namespace, body: lease });
}

/** Replaces a Lease; its metadata.resourceVersion makes it fail with 409 if someone else wrote first. */
export function replaceLease(
  clients: Clients,
  namespace: string,
  name: string,
  lease: V1Lease,
): Promise<V1Lease> {
  return clients.coordination.replaceNamespacedLease({ name, namespace, body: lease });
}
