/**
 * The Service port check (pure): an interface URL that names a Service of the card's own
 * namespace by its cluster DNS name (`<service>.<namespace>.svc`, optionally followed by
 * `.cluster.local`) must name one of the Service's ports. A port the Service does not have gets
 * no kube-proxy rule, so a connection to the cluster IP there is dropped silently and a probe
 * would only see `connect timed out`; checking the Service's spec.ports first names the ports
 * that exist instead (docs/troubleshooting.md, ServicePortNotFound).
 *
 * Only the card's own namespace: the operator already reads that namespace's Services for the
 * address policy's namespace rule, and the ports of another namespace's Services are not the
 * card author's to learn through a status message. Another namespace, a Service that does not
 * exist (DNS answers that), a headless or ExternalName Service (no cluster IP: the name resolves
 * to Pods or to another name, and any port may be open there), or a lookup that fails: the probe
 * runs as it would without the check.
 */

/** The fields of a Service the check reads. */
export interface ServicePortsView {
  name: string;
  type?: string;
  clusterIP?: string;
  ports: ReadonlyArray<{ name?: string; port: number; protocol?: string }>;
}

/**
 * The Service's answer for a name of the namespace: undefined when there is no such Service or
 * it cannot be read. The I/O is the operator's (operator/controllers/agentcard/namespace-addresses.ts).
 */
export type ServiceLookup = (name: string, signal: AbortSignal) => Promise<ServicePortsView | undefined>;

/** What the probe asks before connecting: a message when the URL's port is not the Service's. */
export type ServicePortCheck = (
  hostname: string,
  port: number,
  signal: AbortSignal,
) => Promise<string | undefined>;

/** The cluster domain every kubeadm, managed and local cluster uses unless it was changed. */
const CLUSTER_DOMAIN = 'cluster.local';

/** The Service a host name names in `namespace`, or undefined (another namespace, not a Service name). */
export function serviceOfHost(hostname: string, namespace: string): string | undefined {
  const labels = hostname.toLowerCase().replace(/\.$/, '').split('.');
  const suffix = labels.slice(2).join('.');
  if (labels.length < 3 || (suffix !== 'svc' && suffix !== `svc.${CLUSTER_DOMAIN}`)) return undefined;
  if (labels[1] !== namespace) return undefined;
  return labels[0] || undefined;
}

const tcp = (p: { protocol?: string }) => (p.protocol ?? 'TCP') === 'TCP';

/** The message when `port` is not a TCP port of a Service with a cluster IP, else undefined. */
export function servicePortProblem(service: ServicePortsView, port: number): string | undefined {
  if (service.type === 'ExternalName' || !service.clusterIP || service.clusterIP === 'None') return undefined;
  const ports = service.ports.filter(tcp);
  if (ports.some((p) => p.port === port)) return undefined;
  const listed = ports.map((p) => (p.name ? `${p.name} ${p.port}` : String(p.port)));
  if (listed.length === 0) return `Service ${service.name} has no port ${port}; it has no TCP ports`;
  return `Service ${service.name} has no port ${port}; its ${listed.length === 1 ? 'port is' : 'ports are'} ${listed.join(', ')}`;
}

/**
 * The check for the cards of one namespace, over the namespace's Service lookup. Never rejects;
 * gives up (undefined) when `signal` aborts first, and the probe's own deadline then speaks.
 */
export function servicePortCheck(namespace: string, lookup: ServiceLookup): ServicePortCheck {
  return async (hostname, port, signal) => {
    const name = serviceOfHost(hostname, namespace);
    if (!name || signal.aborted) return undefined;
    let onAbort = () => {};
    const aborted = new Promise<undefined>((resolve) => {
      onAbort = () => resolve(undefined);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const service = await Promise.race([lookup(name, signal), aborted]);
      return service ? servicePortProblem(service, port) : undefined;
    } catch {
      return undefined;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  };
}
