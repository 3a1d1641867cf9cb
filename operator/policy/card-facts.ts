/**
 * What the engine knows of an AgentCard in the cluster (evaluate.ts Subject and Facts), from the
 * AgentCard object as the operator caches it: its spec rendered, and the facts its status holds
 * for its current generation. The policy controller counts with it; the network controller
 * resolves callers (their verified signer identities) and quarantine with it.
 */
import { API_VERSION, KIND } from '../api/names.ts';
import type { AgentCardObject } from '../api/objects.ts';
import { hasSource, validateResource } from '../card/validate.ts';
import type { Facts, Subject } from './evaluate.ts';
import { offlineFacts, specCardViews } from './subject.ts';
import type { UnverifiedSigner } from '../signing/identity.ts';

export interface CardStatusView {
  observedGeneration?: number;
  conditions?: Array<{ type?: string; status?: string; observedGeneration?: number }>;
  card?: unknown;
  signatures?: Array<{ kid?: unknown; certificate?: { identities?: unknown; verifiedIdentity?: unknown } }>;
  source?: { signature?: { result?: Facts['sourceSignature'] } };
}

/** A URI SAN (a SPIFFE ID), not a DNS name: it has a scheme. */
const isUri = (id: string) => /^[a-z][a-z0-9+.-]*:/i.test(id);

/**
 * What the card's status tells the engine, for its current generation only (an older status says
 * nothing about the current spec): signed or not once published, the signing certificates' URI
 * identities, an adopted card's source signature, Ready. Without spec.signing the card is never
 * signed, which is known from the spec alone.
 */
export function cardFacts(card: AgentCardObject): Facts {
  const spec = card.spec as { signing?: unknown } | undefined;
  const facts: Facts = { ...offlineFacts(spec) };
  const status = card.status as CardStatusView | undefined;
  const generation = card.metadata.generation ?? 0;
  if (!status || status.observedGeneration !== generation) return facts;
  if (status.card !== undefined) {
    const signatures = Array.isArray(status.signatures) ? status.signatures : [];
    facts.signed = signatures.length > 0;
    // Only an identity its chain proves counts (../signing/identity.ts); a certificate that
    // proves none is reported with what it claims.
    const identities: string[] = [];
    const unverified: UnverifiedSigner[] = [];
    for (const sig of signatures) {
      const cert = sig.certificate;
      if (!cert) continue;
      if (typeof cert.verifiedIdentity === 'string') identities.push(cert.verifiedIdentity);
      else {
        const ids = Array.isArray(cert.identities) ? cert.identities : [];
        const claimed = ids.find((i): i is string => typeof i === 'string' && isUri(i));
        unverified.push({
          kid: typeof sig.kid === 'string' ? sig.kid : '',
          ...(claimed ? { claimed } : {}),
          reason:
            "its chain does not verify to its Secret's ca.crt (the card's PolicyCompliant condition says why)",
        });
      }
    }
    facts.signerIdentities = identities;
    if (unverified.length) facts.unverifiedSigners = unverified;
  }
  const sourceResult = status.source?.signature?.result;
  if (sourceResult) facts.sourceSignature = sourceResult;
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  if (
    ready &&
    ready.observedGeneration === generation &&
    (ready.status === 'True' || ready.status === 'False')
  )
    facts.ready = ready.status === 'True';
  return facts;
}

/**
 * The engine's subject of a cached AgentCard: a written card's rendered cards (none when its spec
 * is invalid: its content is then not evaluated), an adopted card's none (the agent's card is
 * in the published ConfigMap, not in the cache), and the facts of its status.
 */
export function cardSubject(
  card: AgentCardObject & { metadata: { labels?: Record<string, string> } },
  namespaceLabels: Readonly<Record<string, string>> | undefined,
): Subject {
  const resource = { apiVersion: API_VERSION, kind: KIND, metadata: card.metadata, spec: card.spec };
  const adopted = hasSource(resource);
  const base: Subject = {
    name: card.metadata.name,
    namespace: card.metadata.namespace,
    labels: card.metadata.labels ?? {},
    ...(namespaceLabels ? { namespaceLabels } : {}),
    adopted,
    facts: cardFacts(card),
  };
  if (adopted) return base;
  const result = validateResource(resource);
  return result.spec && result.card ? { ...base, cards: specCardViews(result.spec, result.card) } : base;
}
