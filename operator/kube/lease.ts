/** The leader election Lease on the API server (coordination.k8s.io/v1), as a LeaseStore. */
import type { V1Lease, V1OwnerReference } from '@kubernetes/client-node';
import type { LeaseRecord, LeaseStore } from './leader.ts';
import { createLease, readLease, replaceLease } from './api.ts';
import type { KubeClient } from './client.ts';
import { ResilientInformer } from './informer.ts';

function timeText(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  // The client types MicroTime as a Date but hands over the server's text unchanged.
  return value instanceof Date ? value.toISOString() : String(value);
}

function toRecord(lease: V1Lease): LeaseRecord {
  const spec = lease.spec ?? {};
  return {
    holderIdentity: spec.holderIdentity ?? '',
    leaseDurationSeconds: spec.leaseDurationSeconds,
    acquireTime: timeText(spec.acquireTime),
    renewTime: timeText(spec.renewTime),
    leaseTransitions: spec.leaseTransitions,
  };
}

function toLease(
  namespace: string,
  name: string,
  record: LeaseRecord,
  owner: V1OwnerReference | undefined,
  resourceVersion?: string,
): V1Lease {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name,
      namespace,
      // Every write names the owner (kube/owner.ts), so a Lease an older operator created gets it
      // at its next renewal.
      ...(owner ? { ownerReferences: [owner] } : {}),
      ...(resourceVersion ? { resourceVersion } : {}),
    },
    // MicroTime fields travel as RFC 3339 text with microseconds.
    spec: record as unknown as V1Lease['spec'],
  };
}

/** `owner`: the Deployment that owns the Lease, so an uninstall deletes it (kube/owner.ts). */
export function kubeLeaseStore(
  client: KubeClient,
  namespace: string,
  name: string,
  owner?: V1OwnerReference,
): LeaseStore {
  return {
    // A list+watch of this one Lease (a field selector on its name, which RBAC's resourceNames
    // allows): the standby's sightings of each renewal, as soon as the API server reports them.
    watch(onRecord, signal, log) {
      if (signal.aborted) return;
      const informer = new ResilientInformer<V1Lease>({
        name: 'leader-lease',
        client,
        path: `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
        fieldSelector: `metadata.name=${name}`,
        log,
      });
      informer.on('add', (lease) => onRecord(toRecord(lease), lease.metadata?.resourceVersion));
      informer.on('update', (lease) => onRecord(toRecord(lease), lease.metadata?.resourceVersion));
      informer.on('delete', () => onRecord(undefined));
      signal.addEventListener('abort', () => void informer.stop(), { once: true });
      void informer.start();
    },
    async read(signal) {
      const lease = await readLease(client, namespace, name, signal);
      if (!lease) return undefined;
      return { record: toRecord(lease), resourceVersion: lease.metadata?.resourceVersion ?? '' };
    },
    async create(record, signal) {
      const lease = await createLease(client, namespace, toLease(namespace, name, record, owner), signal);
      return { resourceVersion: lease.metadata?.resourceVersion ?? '' };
    },
    async write(record, resourceVersion, signal) {
      const lease = await replaceLease(
        client,
        namespace,
        name,
        toLease(namespace, name, record, owner, resourceVersion),
        signal,
      );
      return { resourceVersion: lease.metadata?.resourceVersion ?? '' };
    },
  };
}
