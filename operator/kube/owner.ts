/**
 * The owner of what the operator creates at run time in its own namespace: the webhook's
 * self-signed certificate Secret and the leader election Lease. The chart passes its Deployment
 * (`--owner-deployment`); both objects then carry an ownerReference to it, so `helm uninstall`,
 * which deletes the Deployment, lets the garbage collector delete them too.
 *
 * Why an ownerReference, and not the two other usual ways:
 * - objects the chart creates empty and the operator fills: an upgrade from a release whose
 *   operator already created them fails (Helm refuses to adopt an object it did not create), a
 *   chart-rendered Secret must leave out `data` or every upgrade resets the certificate, and an
 *   object the operator re-creates while it shuts down (a Lease renewal racing the uninstall)
 *   would outlive the release;
 * - a pre-delete hook Job: it needs its image pulled and a node to run on at uninstall time, and
 *   a failing hook blocks the uninstall.
 * An ownerReference names the owner's UID: an object re-created during the uninstall still names
 * the deleted Deployment and is collected as well; objects created by an operator that predates
 * the reference get it at their next write (the Lease at its next renewal, the Secret at the
 * first start, see webhook/tls.ts).
 */
import type { V1Deployment, V1ObjectMeta, V1OwnerReference } from '@kubernetes/client-node';
import { readOptional } from './api.ts';
import type { KubeClient } from './client.ts';
import { describeApiError } from './errors.ts';
import type { Logger } from '../log.ts';

const seg = encodeURIComponent;

/** The ownerReference naming a Deployment (never blockOwnerDeletion: that needs finalizer rights). */
export function deploymentOwner(deployment: { name: string; uid: string }): V1OwnerReference {
  return { apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.name, uid: deployment.uid };
}

/** Whether `meta` already names `owner` (by UID, what the garbage collector goes by). */
export function hasOwner(meta: V1ObjectMeta | undefined, owner: V1OwnerReference | undefined): boolean {
  if (!owner) return true;
  return (meta?.ownerReferences ?? []).some((r) => r.uid === owner.uid);
}

/**
 * `refs` with `owner` added (other owners are kept, a stale reference to an earlier Deployment of
 * the same name is replaced); `refs` unchanged when there is no owner.
 */
export function withOwner(
  refs: V1OwnerReference[] | undefined,
  owner: V1OwnerReference | undefined,
): V1OwnerReference[] | undefined {
  if (!owner) return refs;
  const others = (refs ?? []).filter(
    (r) =>
      r.uid !== owner.uid &&
      !(r.kind === owner.kind && r.apiVersion === owner.apiVersion && r.name === owner.name),
  );
  return [...others, owner];
}

/**
 * Reads the owning Deployment; undefined (and a warning) when it cannot be read: the operator
 * then runs as before and only the clean-up on uninstall is lost, which is no reason to stop.
 */
export async function resolveDeploymentOwner(
  client: KubeClient,
  namespace: string,
  name: string,
  log: Logger,
): Promise<V1OwnerReference | undefined> {
  try {
    const deployment = await readOptional<V1Deployment>(
      client,
      `/apis/apps/v1/namespaces/${seg(namespace)}/deployments/${seg(name)}`,
      AbortSignal.timeout(10_000),
    );
    const uid = deployment?.metadata?.uid;
    if (uid) return deploymentOwner({ name, uid });
    log.warn('owner Deployment not found; the webhook Secret and the Lease will outlive an uninstall', {
      deployment: `${namespace}/${name}`,
    });
  } catch (err) {
    log.warn('cannot read the owner Deployment; the webhook Secret and the Lease will outlive an uninstall', {
      deployment: `${namespace}/${name}`,
      error: describeApiError(err),
    });
  }
  return undefined;
}
