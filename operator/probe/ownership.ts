/**
 * The namespace rule of the address policy (pure): a private address that an AgentCard's own
 * namespace owns may be probed without any setting. "Owns" is decided only from fields that a
 * user of the namespace cannot point anywhere they like (docs/security.md, threat model):
 *
 * - a Pod's IP: status.podIPs is written by the kubelet through pods/status, which the default
 *   edit and admin roles do not grant, and the API server drops any status sent with a create.
 *   A hostNetwork Pod's IP is its node's address, so it never counts; nor does a Pod that has
 *   ended (Succeeded/Failed: its IP is released and may be given to another namespace's Pod).
 * - a Service's cluster IP: chosen from the service range by the API server (or by the user,
 *   but only inside that range), so it is never a node, loopback or metadata address. It counts
 *   only when the Service selects Pods (spec.selector) and every address of every EndpointSlice
 *   of the Service is a counted Pod IP of the namespace: a selector-less Service routes to
 *   EndpointSlices written by hand, and kube-proxy also routes a selector Service's traffic to
 *   any EndpointSlice labelled with its name, whoever wrote it. An ExternalName Service has no
 *   cluster IP (its DNS name is a CNAME, and the name it points to is judged on its own).
 */

/** The fields of a Pod the rule reads. */
export interface PodView {
  name: string;
  hostNetwork: boolean;
  phase?: string;
  ips: readonly string[];
}

/** The fields of a Service the rule reads. */
export interface ServiceView {
  name: string;
  type?: string;
  clusterIPs: readonly string[];
  selector?: Readonly<Record<string, string>>;
}

/** One EndpointSlice of a Service: its name and every endpoint address. */
export interface SliceView {
  name: string;
  addresses: readonly string[];
}

export type Ownership = { owned: true; by: string } | { owned: false; why: string };

/**
 * Whether one resolved address is owned by the probing card's namespace (the I/O behind it is
 * the operator's, see operator/controllers/agentcard/namespace-addresses.ts). Never rejects.
 */
export type OwnerCheck = (ip: string, signal: AbortSignal) => Promise<Ownership>;

const ENDED = new Set(['Succeeded', 'Failed']);

/** Whether a Pod's IPs are the namespace's own: not the node's, and not released. */
export function podCounts(pod: PodView): boolean {
  return !pod.hostNetwork && !ENDED.has(pod.phase ?? '');
}

/**
 * Whether `ip` is a Pod IP of the namespace, from the namespace's Pods whose status.podIPs
 * contain it (the lookup's field selector).
 */
export function podOwnership(ip: string, namespace: string, pods: readonly PodView[]): Ownership {
  const counted = pods.find(podCounts);
  if (counted) return { owned: true, by: `Pod ${namespace}/${counted.name}` };
  const hostNetwork = pods.find((p) => p.hostNetwork);
  if (hostNetwork)
    return {
      owned: false,
      why: `Pod ${namespace}/${hostNetwork.name} uses the host network (its IP is the node's)`,
    };
  const ended = pods[0];
  if (ended) return { owned: false, why: `Pod ${namespace}/${ended.name} has ended (${ended.phase})` };
  return { owned: false, why: `no Pod or Service of namespace ${namespace} has this IP` };
}

/**
 * Whether `ip`, a cluster IP of `service`, is the namespace's own: a Service that selects Pods
 * and whose EndpointSlices list only counted Pod IPs of the namespace (`podIps`: the IPs of the
 * counted Pods its selector matches).
 */
export function serviceOwnership(
  namespace: string,
  service: ServiceView,
  slices: readonly SliceView[],
  podIps: ReadonlySet<string>,
): Ownership {
  const name = `Service ${namespace}/${service.name}`;
  if (service.type === 'ExternalName') return { owned: false, why: `${name} is an ExternalName Service` };
  if (!service.selector || Object.keys(service.selector).length === 0)
    return {
      owned: false,
      why: `${name} has no selector (its endpoints are written by hand, not by Kubernetes)`,
    };
  for (const slice of slices) {
    const foreign = slice.addresses.find((a) => !podIps.has(a));
    if (foreign !== undefined)
      return {
        owned: false,
        why: `EndpointSlice ${namespace}/${slice.name} of ${name} lists ${foreign}, which is not the IP of a Pod the Service selects`,
      };
  }
  return { owned: true, by: name };
}
