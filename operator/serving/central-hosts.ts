/**
 * Hosts two AgentCards claim on the central card server: the index the AgentCard controller
 * keeps of them (its `Serving` condition is controllers/agentcard/serving-condition.ts).
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
import { objectKey } from '../runtime/keys.ts';

/** A card ConfigMap as the cache holds it (configmap-cache.ts) or as the controller applies it. */
interface CardConfigMap {
  metadata?: { namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  dataDigests?: Record<string, string>;
}

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
