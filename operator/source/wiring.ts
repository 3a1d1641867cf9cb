/**
 * The operator's source fetching: the probes' address policy (the same flags: --probe-allow-cidr,
 * --probe-deny-cidr, --probe-ca-file) and namespace rule, and named Service ports read from the
 * API server. Built by the manager and handed to the controller.
 */
import type { KubeClient } from '../kube/client.ts';
import type { OwnerCheck } from '../probe/ownership.ts';
import { createAddressPolicy } from '../probe/policy.ts';
import type { CaOption, Resolver } from '../probe/connect.ts';
import { fetchSourceCard } from './fetch.ts';
import type { SourceDeps } from './tracker.ts';

/**
 * A refused loopback spec.source.url, in the operator: from the operator, loopback is its own
 * Pod, never the agent (docs/troubleshooting.md, "Blocked").
 */
export const SOURCE_LOOPBACK_ADVICE =
  "from the operator, loopback is the operator's own Pod, never the agent: the URL names the agent's own loopback; replace it with an address others can reach (spec.source.service, or a spec.source.url of the agent's Service)";

export interface SourceWiringOptions {
  client: KubeClient;
  allowCidrs: string[];
  denyCidrs?: string[];
  ownerFor?: (namespace: string) => OwnerCheck;
  ca?: CaOption;
  /** Tests only: a resolver for names the machine's DNS does not know. */
  resolver?: Resolver;
}

/** A Service's named port, by the Service's spec.ports (undefined: no such Service or port). */
export async function namedServicePort(
  client: KubeClient,
  namespace: string,
  service: string,
  port: string,
  signal: AbortSignal,
): Promise<number | undefined> {
  // A list by name, not a GET: the operator's role lists Services (the namespace rule) and
  // grants nothing more.
  const list = await client.request<{
    items?: Array<{ spec?: { ports?: Array<{ name?: string; port: number }> } }>;
  }>('GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}/services`, {
    query: { fieldSelector: `metadata.name=${service}` },
    signal,
  });
  return list.items?.[0]?.spec?.ports?.find((p) => p.name === port)?.port;
}

export function sourceWiring(opts: SourceWiringOptions): Omit<SourceDeps, 'clock'> {
  const policy = createAddressPolicy({
    allowCidrs: opts.allowCidrs,
    denyCidrs: opts.denyCidrs ?? [],
    allowSetting: 'Helm value probes.allowCidrs, flag --probe-allow-cidr',
    loopbackAdvice: SOURCE_LOOPBACK_ADVICE,
  });
  return {
    fetch: (urls, ctx) =>
      fetchSourceCard(urls, {
        policy,
        ...(opts.ownerFor ? { owner: opts.ownerFor(ctx.namespace) } : {}),
        ...(opts.ca ? { ca: opts.ca } : {}),
        ...(opts.resolver ? { resolver: opts.resolver } : {}),
        cache: ctx.cache,
        signal: ctx.signal,
      }),
    servicePort: (namespace, service, port, signal) =>
      namedServicePort(opts.client, namespace, service, port, signal),
  };
}
