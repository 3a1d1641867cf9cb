/**
 * Hosts two AgentCards claim on the central card server, as the `Serving` condition of both.
 *
 * The card server (cardserver/hosts.ts) serves a host that two cards claim by neither, and says
 * so in its own log and metric; the users who can fix it read their AgentCards. So the
 * controller builds the same host index, with the same pure function, from the same data: the
 * published ConfigMaps labelled for central serving in its ConfigMap cache (their
 * `serving-hosts` key and audience variant keys, configmap-cache.ts keeps both). A card whose
 * ConfigMap is served centrally gets `Serving`: False with reason `HostConflict` while another
 * card claims one of its hosts, True with reason `HostsUnique` otherwise; a card served by its
 * sidecar has no `Serving` condition. It does not gate `Ready`: the card is published, the
 * sidecar-free server answers for its other hosts, and only one of the two cards' owners (or an
 * administrator) can end the conflict.
 *
 * Naming the other card: within the namespace, as its name. Across namespaces, only "an
 * AgentCard in another namespace": a namespace's users may not be allowed to read the other
 * namespace, and the condition and its Event would otherwise tell them which AgentCards exist
 * there. The card server's log names both ConfigMaps (namespace/name), for the administrator.
 *
 * The index is the controller's view: it covers the namespaces the operator watches, which is
 * what the chart gives the card server too (`watchNamespaces`).
 */
import { CARD_LABEL, SERVING_CENTRAL, SERVING_HOSTS_KEY, SERVING_LABEL } from '../api/names.ts';
import { buildHostIndex, parseServingHosts, type CardHosts, type HostIndex } from '../cardserver/hosts.ts';
import { getCondition, setCondition, type ConditionInput } from './conditions.ts';
import type { PlannedEvent } from './events.ts';
import { objectKey, splitKey } from './keys.ts';
import { statusChanged, type ControllerStatus } from './status.ts';

/** A card ConfigMap as the cache holds it (configmap-cache.ts) or as the controller applies it. */
interface CardConfigMap {
  metadata?: { namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  dataDigests?: Record<string, string>;
}

export const SERVING_CONDITION = 'Serving';

/** One conflicted host pattern of a card and the other cards (`namespace/name`) claiming it. */
export interface HostConflict {
  host: string;
  others: string[];
}

/** What the controller knows of one card's central serving (undefined: served by its sidecar). */
export interface CentralServing {
  hosts: number;
  conflicts: HostConflict[];
}

/** The central cards' host claims, kept current from the ConfigMap cache's events. */
export class CentralHosts {
  /** Card key (`namespace/name`) → its claims. */
  private readonly cards = new Map<string, CardHosts>();
  private index: HostIndex = buildHostIndex([]);

  /**
   * Takes a ConfigMap event; returns the cards whose conflicts changed (to reconcile), the
   * ConfigMap's own card included when it starts or stops being served centrally.
   */
  update(cm: CardConfigMap, deleted: boolean): string[] {
    const cardName = cm.metadata?.labels?.[CARD_LABEL];
    if (!cardName) return [];
    const key = objectKey(cm.metadata?.namespace ?? '', cardName);
    const central = !deleted && cm.metadata?.labels?.[SERVING_LABEL] === SERVING_CENTRAL;
    const before = this.cards.get(key);
    const next: CardHosts | undefined = central
      ? {
          key,
          defaultHosts: parseServingHosts(cm.data?.[SERVING_HOSTS_KEY]),
          dataKeys: [...Object.keys(cm.data ?? {}), ...Object.keys(cm.dataDigests ?? {})].sort(),
        }
      : undefined;
    if (sameClaims(before, next)) return [];
    if (next) this.cards.set(key, next);
    else this.cards.delete(key);
    const old = this.index;
    this.index = buildHostIndex(this.cards.values());
    const changed = new Set<string>();
    if (!!before !== !!next) changed.add(key);
    for (const [host, keys] of old.conflicts) {
      if (this.index.conflicts.get(host)?.join() !== keys.join()) keys.forEach((k) => changed.add(k));
    }
    for (const [host, keys] of this.index.conflicts) {
      if (old.conflicts.get(host)?.join() !== keys.join()) keys.forEach((k) => changed.add(k));
    }
    return [...changed].sort();
  }

  /** The card's central serving: its host count and conflicts; undefined when not central. */
  servingOf(key: string): CentralServing | undefined {
    const card = this.cards.get(key);
    if (!card) return undefined;
    const hosts = new Set(buildHostIndex([card]).claims.keys());
    const conflicts: HostConflict[] = [];
    for (const [host, keys] of this.index.conflicts) {
      if (keys.includes(key)) conflicts.push({ host, others: keys.filter((k) => k !== key) });
    }
    conflicts.sort((a, b) => a.host.localeCompare(b.host));
    return { hosts: hosts.size, conflicts };
  }

  forget(): void {
    this.cards.clear();
    this.index = buildHostIndex([]);
  }
}

function sameClaims(a: CardHosts | undefined, b: CardHosts | undefined): boolean {
  if (!a || !b) return a === b;
  return (
    a.defaultHosts.join('\n') === b.defaultHosts.join('\n') && a.dataKeys.join('\n') === b.dataKeys.join('\n')
  );
}

const MAX_LISTED = 5;

/** How the other claimant is named to the card's readers (see the module comment). */
export function otherCardName(other: string, namespace: string): string {
  const [ns, name] = splitKey(other);
  return ns === namespace ? `AgentCard ${name}` : 'an AgentCard in another namespace';
}

/** The Serving condition for a card served centrally (pure). */
export function servingCondition(
  namespace: string,
  serving: CentralServing,
  generation: number,
): ConditionInput {
  if (serving.conflicts.length === 0) {
    return {
      type: SERVING_CONDITION,
      status: 'True',
      reason: 'HostsUnique',
      message: `no other AgentCard claims its ${serving.hosts} host${serving.hosts === 1 ? '' : 's'} on the card server`,
      observedGeneration: generation,
    };
  }
  const listed = serving.conflicts.slice(0, MAX_LISTED).map((c) => {
    const names = [...new Set(c.others.map((o) => otherCardName(o, namespace)))].join(', ');
    return `${c.host} (also claimed by ${names})`;
  });
  const more = serving.conflicts.length - listed.length;
  return {
    type: SERVING_CONDITION,
    status: 'False',
    reason: 'HostConflict',
    message:
      `the card server answers none of the cards claiming ${listed.join(', ')}` +
      (more > 0 ? ` and ${more} more host${more === 1 ? '' : 's'}` : '') +
      ' (404) until all but one let the host go',
    observedGeneration: generation,
  };
}

/**
 * The status and events of a planned reconcile with the Serving condition set (central), or
 * removed (sidecar). Pure; `statusChanged` is recomputed against the live status.
 */
export function withServingCondition<
  P extends { status: ControllerStatus; statusChanged: boolean; events: PlannedEvent[] },
>(
  plan: P,
  live: { status?: unknown; namespace: string; generation: number },
  serving: CentralServing | undefined,
  now: Date,
): P {
  const conditions = plan.status.conditions ?? [];
  const before = getCondition(conditions, SERVING_CONDITION);
  let next = conditions.filter((c) => c.type !== SERVING_CONDITION);
  const events = [...plan.events];
  if (serving) {
    const condition = servingCondition(live.namespace, serving, live.generation);
    next = setCondition(conditions, condition, now);
    if (
      condition.status === 'False' &&
      (before?.status !== 'False' || before.message !== condition.message)
    ) {
      events.push({ type: 'Warning', reason: 'HostConflict', action: 'Serve', message: condition.message });
    }
  }
  const status = { ...plan.status, conditions: next };
  return { ...plan, status, statusChanged: statusChanged(live.status, status), events };
}
