/**
 * An AgentCard as a catalog sees it (catalog/entries.ts CardView), read from the raw object the
 * informer caches, and a fingerprint of exactly those facts: an AgentCard update that leaves the
 * fingerprint unchanged (a probe's lastProbeTime, a serving count) does not rebuild any catalog.
 */
import { createHash } from 'node:crypto';
import { DEFAULT_AUDIENCE } from '../../card/audience.ts';
import { DATA_KEYS } from '../../api/names.ts';
import type { CardView } from '../../catalog/entries.ts';
import type { AgentCardObject } from '../../api/objects.ts';

interface RawStatus {
  conditions?: Array<{
    type?: string;
    status?: string;
    reason?: string;
    message?: string;
    observedGeneration?: number;
  }>;
  signatures?: unknown[];
  reachableInterfaces?: string;
  card?: { digest?: string };
}

type CardWithMeta = AgentCardObject & {
  metadata: AgentCardObject['metadata'] & {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
};

const conditionOf = (status: RawStatus, type: string) => status.conditions?.find((c) => c.type === type);
const tri = (s: string | undefined): 'True' | 'False' | 'Unknown' =>
  s === 'True' || s === 'False' ? s : 'Unknown';

export function cardView(obj: AgentCardObject, publishedCard?: string): CardView {
  const o = obj as CardWithMeta;
  const spec = (o.spec ?? {}) as { card?: unknown; audiences?: unknown };
  const status = (o.status ?? {}) as RawStatus;
  const ready = conditionOf(status, 'Ready');
  // Ready for an older generation describes an older spec: not Ready for this one.
  const current =
    ready?.observedGeneration === undefined || ready.observedGeneration >= (o.metadata.generation ?? 0);
  const readyStatus = current ? tri(ready?.status) : 'Unknown';
  // A card an Enforce policy fails (docs/policy.md) is listed by no catalog.
  const policy = conditionOf(status, 'PolicyCompliant');
  const withheld =
    policy?.status === 'False' &&
    policy.reason === 'PolicyEnforced' &&
    (policy.observedGeneration ?? 0) >= (o.metadata.generation ?? 0);
  return {
    namespace: o.metadata.namespace,
    name: o.metadata.name,
    labels: o.metadata.labels ?? {},
    annotations: o.metadata.annotations ?? {},
    card: spec.card,
    ...(spec.audiences !== undefined ? { audiences: spec.audiences } : {}),
    ready: readyStatus,
    ...(readyStatus !== 'True' && ready?.message ? { readyMessage: ready.message } : {}),
    signed: Array.isArray(status.signatures) && status.signatures.length > 0,
    ...(status.reachableInterfaces ? { reachableInterfaces: status.reachableInterfaces } : {}),
    interfacesReachable: tri(conditionOf(status, 'InterfacesReachable')?.status),
    ...(publishedCard !== undefined ? { publishedCard } : {}),
    ...(withheld ? { policyWithheld: policy.message ?? '' } : {}),
  };
}

/** The ConfigMap data key of the published card for an audience (the default: agent-card.json). */
export function publishedCardKey(audience: string | undefined, view: CardView): string | undefined {
  if (audience === undefined || audience === DEFAULT_AUDIENCE) return DATA_KEYS.card;
  const list = Array.isArray(view.audiences)
    ? (view.audiences as Array<{ name?: unknown; hosts?: unknown }>)
    : [];
  const match = list.find((a) => a?.name === audience);
  const host = Array.isArray(match?.hosts)
    ? match.hosts.find((h) => typeof h === 'string' && !h.startsWith('*'))
    : undefined;
  // The per-host variant files the sidecar selects by Host (host.<host>.agent-card.json).
  return typeof host === 'string' ? `host.${host.toLowerCase()}.${DATA_KEYS.card}` : undefined;
}

/**
 * What a catalog reads of a card, as one comparable string: the SHA-256 of those facts (44
 * characters), not the facts themselves (about 1 KiB a card, kept for every card in reach).
 */
export function cardFingerprint(obj: AgentCardObject): string {
  const view = cardView(obj);
  const digest = ((obj.status ?? {}) as RawStatus).card?.digest ?? '';
  return createHash('sha256')
    .update(JSON.stringify([view, digest]), 'utf8')
    .digest('base64');
}
