/**
 * The I/O of the probe policy's namespace rule (operator/probe/ownership.ts decides): is this
 * address a Pod or a selector Service of the AgentCard's namespace?
 *
 * Looked up in the API server when a probe needs it, never watched: the operator would otherwise
 * cache every Pod's and Service's IPs of the cluster for the few cards whose interfaces are
 * in-cluster addresses. One lookup is one to four small LISTs in the card's namespace, served
 * from the API server's watch cache and filtered there:
 *   1. Pods by field selector status.podIP=<ip>: a Pod's primary IP only (status.podIPs is not a
 *      selectable field: checked against Kubernetes 1.36, where it silently matches nothing), so
 *      the second address of a dual-stack Pod is not found and stays refused;
 *   2. if no Pod has it: Services by field selector spec.clusterIP=<ip> (the primary cluster IP:
 *      spec.clusterIPs is not a selectable field, checked against Kubernetes 1.36);
 *   3. for a selector Service: its EndpointSlices (label kubernetes.io/service-name) and
 *   4. the Pods its selector matches.
 * Answers are kept per namespace and address for a short time (30 s for an owned address, 10 s
 * otherwise, so a Pod that just got its IP is seen soon), and concurrent probes of the same
 * address share one lookup; so a namespace's cards probed every minute cost at most about one
 * lookup per distinct address per 30 s, whatever the number of cards (docs/security.md).
 */
import type { V1EndpointSlice, V1Pod, V1Service } from '@kubernetes/client-node';
import { describeApiError } from '../../kube/errors.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Logger } from '../../log.ts';
import { formatIp, parseIp } from '../../probe/ip.ts';
import {
  type OwnerCheck,
  type Ownership,
  type PodView,
  podCounts,
  podOwnership,
  serviceOwnership,
} from '../../probe/ownership.ts';
import { servicePortCheck, type ServicePortCheck, type ServicePortsView } from '../../probe/service-port.ts';

export interface NamespaceAddressesOptions {
  client: Pick<KubeClient, 'request'>;
  log?: Logger;
  /** How long an owned answer is reused (default 30 s). */
  ownedTtlMs?: number;
  /** How long any other answer is reused (default 10 s). */
  notOwnedTtlMs?: number;
  now?: () => number;
}

/** Answers kept at most; expired ones are dropped first when it is reached. */
const MAX_ENTRIES = 10_000;

const canonical = (ip: string) => {
  const bytes = parseIp(ip);
  return bytes ? formatIp(bytes) : ip;
};

function podView(pod: V1Pod): PodView {
  return {
    name: pod.metadata?.name ?? '',
    hostNetwork: pod.spec?.hostNetwork === true,
    phase: pod.status?.phase,
    ips: (pod.status?.podIPs ?? []).map((p) => p.ip),
  };
}

export class NamespaceAddresses {
  readonly #opts: NamespaceAddressesOptions;
  readonly #cache = new Map<string, { expires: number; answer: Promise<Ownership> }>();
  readonly #services = new Map<string, { expires: number; answer: Promise<ServicePortsView | undefined> }>();
  /** API requests made (for tests and the cost figures in docs/security.md). */
  requests = 0;

  constructor(opts: NamespaceAddressesOptions) {
    this.#opts = opts;
  }

  /** The namespace rule for the cards of one namespace. */
  ownerFor(namespace: string): OwnerCheck {
    return (ip) => this.lookup(namespace, ip);
  }

  /** Whether `ip` is the namespace's own (cached). Never rejects. */
  lookup(namespace: string, ip: string): Promise<Ownership> {
    const now = (this.#opts.now ?? Date.now)();
    const key = `${namespace}/${canonical(ip)}`;
    const hit = this.#cache.get(key);
    if (hit && hit.expires > now) return hit.answer;
    if (this.#cache.size >= MAX_ENTRIES) this.#prune(now);
    const entry = { expires: Infinity, answer: this.#ask(namespace, ip) };
    this.#cache.set(key, entry);
    void entry.answer.then((a) => {
      const ttl = a.owned ? (this.#opts.ownedTtlMs ?? 30_000) : (this.#opts.notOwnedTtlMs ?? 10_000);
      entry.expires = (this.#opts.now ?? Date.now)() + ttl;
    });
    return entry.answer;
  }

  /** The probes' Service port check for the cards of one namespace. */
  servicePortFor(namespace: string): ServicePortCheck {
    return servicePortCheck(namespace, (name) => this.service(namespace, name));
  }

  /**
   * The Service `name` of `namespace` and its ports, for the probes' Service port check
   * (operator/probe/service-port.ts): one LIST by name, kept like the answers above (30 s when
   * found, 10 s otherwise). Undefined when there is no such Service or it cannot be read.
   */
  service(namespace: string, name: string): Promise<ServicePortsView | undefined> {
    const now = (this.#opts.now ?? Date.now)();
    const key = `${namespace}/${name}`;
    const hit = this.#services.get(key);
    if (hit && hit.expires > now) return hit.answer;
    if (this.#services.size >= MAX_ENTRIES) this.#services.clear();
    const entry = { expires: Infinity, answer: this.#askService(namespace, name) };
    this.#services.set(key, entry);
    void entry.answer.then((a) => {
      const ttl = a ? (this.#opts.ownedTtlMs ?? 30_000) : (this.#opts.notOwnedTtlMs ?? 10_000);
      entry.expires = (this.#opts.now ?? Date.now)() + ttl;
    });
    return entry.answer;
  }

  async #askService(namespace: string, name: string): Promise<ServicePortsView | undefined> {
    try {
      const [service] = await this.#list<V1Service>(
        `/api/v1/namespaces/${encodeURIComponent(namespace)}/services`,
        {
          fieldSelector: `metadata.name=${name}`,
        },
      );
      if (!service) return undefined;
      return {
        name: service.metadata?.name ?? name,
        type: service.spec?.type,
        clusterIP: service.spec?.clusterIP,
        ports: (service.spec?.ports ?? []).map((p) => ({ name: p.name, port: p.port, protocol: p.protocol })),
      };
    } catch {
      // The probe then runs as it would without the check.
      return undefined;
    }
  }

  #prune(now: number): void {
    for (const [key, entry] of this.#cache) if (entry.expires <= now) this.#cache.delete(key);
    // Still full (a burst of distinct addresses): forget the oldest half.
    if (this.#cache.size >= MAX_ENTRIES) {
      let n = 0;
      for (const key of this.#cache.keys()) if (n++ < MAX_ENTRIES / 2) this.#cache.delete(key);
    }
  }

  async #list<T>(path: string, query: Record<string, string>): Promise<T[]> {
    this.requests++;
    const list = await this.#opts.client.request<{ items?: T[] }>('GET', path, { query });
    return list.items ?? [];
  }

  async #ask(namespace: string, ip: string): Promise<Ownership> {
    const ns = encodeURIComponent(namespace);
    let what = 'Pods';
    try {
      const pods = (
        await this.#list<V1Pod>(`/api/v1/namespaces/${ns}/pods`, { fieldSelector: `status.podIP=${ip}` })
      ).map(podView);
      const byPod = podOwnership(ip, namespace, pods);
      if (byPod.owned || pods.length > 0) return byPod;
      what = 'Services';
      const [service] = await this.#list<V1Service>(`/api/v1/namespaces/${ns}/services`, {
        fieldSelector: `spec.clusterIP=${ip}`,
      });
      if (!service) return byPod;
      const view = {
        name: service.metadata?.name ?? '',
        type: service.spec?.type,
        clusterIPs: service.spec?.clusterIPs ?? [],
        selector: service.spec?.selector,
      };
      if (view.type === 'ExternalName' || !view.selector || Object.keys(view.selector).length === 0)
        return serviceOwnership(namespace, view, [], new Set());
      what = 'EndpointSlices';
      const slices = await this.#list<V1EndpointSlice>(
        `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`,
        { labelSelector: `kubernetes.io/service-name=${view.name}` },
      );
      what = 'Pods';
      const selected = await this.#list<V1Pod>(`/api/v1/namespaces/${ns}/pods`, {
        labelSelector: Object.entries(view.selector)
          .map(([k, v]) => `${k}=${v}`)
          .join(','),
      });
      const podIps = new Set(
        selected
          .map(podView)
          .filter(podCounts)
          .flatMap((p) => p.ips.map(canonical)),
      );
      return serviceOwnership(
        namespace,
        view,
        slices.map((s) => ({
          name: s.metadata?.name ?? '',
          addresses: (s.endpoints ?? []).flatMap((e) => e.addresses.map(canonical)),
        })),
        podIps,
      );
    } catch (err) {
      const detail = describeApiError(err);
      this.#opts.log?.warn('probe policy: namespace lookup failed', { namespace, ip, error: detail });
      return {
        owned: false,
        why: `the ${what} of namespace ${namespace} could not be read (${detail})`,
      };
    }
  }
}
