/**
 * examples/ as the demo applies them: every AgentCard's interfaces point at the local demo agent
 * (by binding), so the probes prove something real; every Secret an AgentCard signs with gets a
 * key generated now (an example's published throwaway key is replaced, a missing Secret is
 * created); what needs a part of Kubernetes the demo has not (Gateway API, probe credentials for
 * a real agent) is left out.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import type { DemoAgentUrls } from '../operator/demo/echo-agent.ts';

type Doc = {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string };
  spec?: Record<string, unknown>;
  [key: string]: unknown;
};
type Iface = { url?: string; protocolBinding?: string; protocolVersion?: string; tenant?: string };
type KeyRef = { secretRef?: { name?: string; key?: string } };

export type PreparedExamples = {
  /** Multi-document YAML for `kubectl apply -f -`. */
  manifests: string;
  /** AgentCard names, in file order. */
  cards: string[];
  /** The first AgentCard with spec.signing, if any. */
  signedCard?: string;
  /** The first AgentCard with spec.audiences, and the first host of each audience. */
  audiencesCard?: { name: string; hosts: Array<{ audience: string; host: string }> };
  /** Signing key Secrets holding a key generated now. */
  signingSecrets: string[];
};

export async function prepareExamples(
  dir: string,
  opts: { agent: DemoAgentUrls; newSigningJwk: (kid: string) => Promise<string> },
): Promise<PreparedExamples> {
  const files = readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort();
  const docs: Doc[] = [];
  for (const file of files) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
      if (doc.errors.length) throw new Error(`examples/${file}: ${doc.errors[0]!.message}`);
      const value = doc.toJS() as Doc | null;
      if (value && typeof value === 'object') docs.push(value);
    }
  }
  const kept = docs.filter((d) => !String(d.apiVersion ?? '').startsWith('gateway.networking.k8s.io/'));
  for (const d of kept) if (d.metadata) delete d.metadata.namespace;

  const signingSecrets = new Map<string, Set<string>>();
  const cards: string[] = [];
  let signedCard: string | undefined;
  let audiencesCard: PreparedExamples['audiencesCard'];
  for (const d of kept.filter((x) => x.kind === 'AgentCard')) {
    const name = d.metadata?.name ?? '';
    cards.push(name);
    const spec = (d.spec ??= {});
    const card = (spec.card ?? {}) as { supportedInterfaces?: Iface[] };
    for (const iface of card.supportedInterfaces ?? []) {
      const url = urlFor(iface.protocolBinding, opts.agent);
      if (!url) continue;
      iface.url = url;
      delete iface.tenant;
    }
    // The demo agent asks for no credentials; the demo has no Gateway API.
    if (spec.probe && typeof spec.probe === 'object')
      delete (spec.probe as Record<string, unknown>).credentials;
    if (spec.serving && typeof spec.serving === 'object')
      delete (spec.serving as Record<string, unknown>).httpRoute;
    const audiences = spec.audiences as Array<{ name?: string; hosts?: string[] }> | undefined;
    if (audiences?.length && !audiencesCard) {
      audiencesCard = {
        name,
        hosts: audiences.map((a) => ({ audience: a.name ?? '', host: (a.hosts ?? [])[0] ?? '' })),
      };
    }
    const signing = spec.signing as { keys?: KeyRef[] } | undefined;
    if (signing?.keys?.length) {
      signedCard ??= name;
      for (const k of signing.keys) {
        const secret = k.secretRef?.name;
        if (!secret) continue;
        if (!signingSecrets.has(secret)) signingSecrets.set(secret, new Set());
        signingSecrets.get(secret)!.add(k.secretRef?.key ?? 'key.jwk');
      }
    }
  }
  for (const [name, keys] of signingSecrets) {
    let secret = kept.find((d) => d.kind === 'Secret' && d.metadata?.name === name);
    if (!secret) {
      secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name }, type: 'Opaque' };
      kept.push(secret);
    }
    const stringData = (secret.stringData ?? {}) as Record<string, string>;
    const data = (secret.data ?? {}) as Record<string, string>;
    for (const key of keys) {
      delete data[key];
      stringData[key] = await opts.newSigningJwk(`${name}-demo`);
    }
    secret.stringData = stringData;
    if (Object.keys(data).length) secret.data = data;
    else delete secret.data;
  }
  // Secrets first, so the first reconcile of a signed card finds its key.
  kept.sort((a, b) => Number(b.kind === 'Secret') - Number(a.kind === 'Secret'));
  return {
    manifests: kept.map((d) => stringify(d)).join('---\n'),
    cards,
    signedCard,
    ...(audiencesCard ? { audiencesCard } : {}),
    signingSecrets: [...signingSecrets.keys()],
  };
}

function urlFor(binding: string | undefined, agent: DemoAgentUrls): string | undefined {
  switch (binding) {
    case 'JSONRPC':
      return agent.jsonrpc;
    case 'HTTP+JSON':
      return agent.rest;
    case 'GRPC':
      return agent.grpc;
    default:
      return undefined;
  }
}
