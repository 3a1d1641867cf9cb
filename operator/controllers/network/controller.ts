/**
 * The network controller (`--network-policies`): for each AgentCard, the NetworkPolicy its
 * `Enforce` policies' callers rules and quarantine ask for (plan.ts says what it admits and why),
 * created, put back when edited by hand, replaced when the policies, the callers, the Services or
 * the card change, and deleted when nothing asks for it any more. The AgentCard owns it (the
 * garbage collector deletes it with the card); no finalizer.
 *
 * Keys are AgentCards (`namespace/name`). What queues one:
 * - the card itself (its labels, spec, or the facts of its status: trust, for quarantine);
 * - any card added, deleted, or whose signer identity changed, when a callers rule is in force
 *   (who may call is resolved from the cards), coalesced for CARD_DELAY_MS;
 * - a policy added, changed or deleted: the cards it can select;
 * - a namespace's labels (namespace selectors), a Service of the card's namespace (ports);
 * - its generated NetworkPolicy changed or deleted (drift is put back); the resync.
 *
 * An invalid policy (../../policy/parse.ts) contributes its last valid version seen by this
 * process; one never seen valid contributes nothing, and a NetworkPolicy that names it is left as
 * it is (never lose the last good state: a typo must not open the network).
 */
import type { KubernetesObject, V1Namespace, V1Service } from '@kubernetes/client-node';
import { Gauge, type Registry } from 'prom-client';
import { API_VERSION, CLUSTER_POLICY_KIND, KIND, POLICY_KIND, type PolicyKind } from '../../api/names.ts';
import type { AgentCardObject } from '../../api/objects.ts';
import type { EventRecorder } from '../../kube/events.ts';
import type { KubeClient } from '../../kube/client.ts';
import { apiStatusCode, describeApiError } from '../../kube/errors.ts';
import { isOutage } from '../../kube/health.ts';
import type { Logger } from '../../log.ts';
import { cardFacts, cardSubject } from '../../policy/card-facts.ts';
import type { Caller, Subject } from '../../policy/evaluate.ts';
import { parsePolicy } from '../../policy/parse.ts';
import { policyRef, type Policy } from '../../policy/resource.ts';
import {
  ControllerBuilder,
  type BuiltController,
  type Request,
  type Runtime,
} from '../../runtime/builder.ts';
import type { Cache, SharedInformer } from '../../runtime/cache.ts';
import { objectKey, splitKey } from '../../runtime/keys.ts';
import type { Runnable } from '../../runtime/manager.ts';
import { sortedJson } from '../../runtime/sorted-json.ts';
import { Writer } from '../../runtime/writes.ts';
import {
  AGENT_CARDS,
  AGENT_POLICIES,
  CLUSTER_AGENT_POLICIES,
  GENERATED_NETWORK_POLICIES,
  NAMESPACES,
  SERVICES,
} from '../cache/collections.ts';
import {
  AGENT_CARD_REF_ANNOTATION,
  closedReason,
  networkPolicyDrift,
  networkPolicyName,
  planNetworkPolicy,
  POLICIES_ANNOTATION,
  type KeyedPolicy,
  type NetworkPlan,
  type OperatorPods,
  type ServiceView,
} from './plan.ts';

/** How long card events are gathered before the agents whose callers they may be plan again. */
export const CARD_DELAY_MS = 1_000;
const NETWORKING_API = '/apis/networking.k8s.io/v1';

export interface NetworkControllerOptions {
  client: KubeClient;
  log: Logger;
  cache: Cache;
  runtime: Runtime;
  events: EventRecorder;
  registry: Registry;
  /** The operator's Pods, admitted on every port of every agent (its probes). */
  operator: OperatorPods;
  resyncMs: number;
  concurrency?: number;
  /** Read ClusterAgentPolicies; default: when every namespace is watched. */
  clusterPolicies?: boolean;
  onWrite?: (resource: string) => void;
}

type CardObject = AgentCardObject &
  KubernetesObject & {
    metadata: { name: string; namespace: string; uid?: string; labels?: Record<string, string> };
  };

type PolicyObject = KubernetesObject & {
  metadata: { name: string; namespace?: string; generation?: number; resourceVersion?: string };
  spec?: unknown;
};

type GeneratedObject = KubernetesObject & {
  metadata: {
    name: string;
    namespace: string;
    uid?: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
  };
  spec?: unknown;
};

const policyKey = (kind: PolicyKind, p: PolicyObject) =>
  `${kind}/${kind === POLICY_KIND ? (p.metadata.namespace ?? '') : ''}/${p.metadata.name}`;

/** agentcard_network_policies and agentcard_quarantined_agents, read at scrape time. */
class NetworkMetrics {
  readonly generated = new Set<string>();
  readonly quarantined = new Set<string>();

  constructor(registry: Registry) {
    const generated = this.generated;
    const quarantined = this.quarantined;
    new Gauge({
      name: 'agentcard_network_policies',
      help: 'NetworkPolicies the operator generated for agents from Enforce policies (callers rules and quarantine).',
      registers: [registry],
      collect() {
        this.set(generated.size);
      },
    });
    new Gauge({
      name: 'agentcard_quarantined_agents',
      help: 'AgentCards quarantined on the network: they fail a trust rule of an Enforce policy with quarantine: true.',
      registers: [registry],
      collect() {
        this.set(quarantined.size);
      },
    });
  }
}

export class NetworkController {
  private readonly log: Logger;
  private readonly opts: NetworkControllerOptions;
  private readonly writer: Writer<KubernetesObject>;
  private readonly cards: SharedInformer<CardObject>;
  private readonly policies: SharedInformer<PolicyObject>;
  private readonly clusterPolicies?: SharedInformer<PolicyObject>;
  private readonly namespaces?: SharedInformer<V1Namespace>;
  private readonly services: SharedInformer<V1Service>;
  private readonly generated: SharedInformer<GeneratedObject>;
  private readonly built: BuiltController;
  private readonly metrics: NetworkMetrics;
  /** Policy key → its parse, for the resourceVersion parsed. */
  private readonly parsed = new Map<string, { version?: string; policy?: Policy }>();
  /** Policy key → its last valid version (kept while it is invalid). */
  private readonly lastValid = new Map<string, Policy>();
  /** Card key → its subject, for the resourceVersion built. */
  private readonly subjects = new Map<string, { version?: string; subject: Subject }>();
  /** Card key → what other agents' plans read of it (callers), to wake them only on a change. */
  private readonly callerPrints = new Map<string, string>();
  /** Card key → what its own plan reads of it. */
  private readonly cardPrints = new Map<string, string>();
  /** Every known agent as a caller; rebuilt after a card is added, deleted or signed anew. */
  private callerList?: Caller[];
  /** Card key → why its NetworkPolicy fails closed, as last reported. */
  private readonly closedNotes = new Map<string, string>();

  constructor(opts: NetworkControllerOptions) {
    this.opts = opts;
    this.log = opts.log.child({ controller: 'network' });
    this.writer = new Writer({ client: opts.client, onWrite: (resource) => opts.onWrite?.(resource) });
    this.metrics = new NetworkMetrics(opts.registry);
    const { cache } = opts;
    this.cards = cache.informer(AGENT_CARDS) as SharedInformer<CardObject>;
    this.policies = cache.informer<PolicyObject>(AGENT_POLICIES);
    this.services = cache.informer(SERVICES);
    this.generated = cache.informer(GENERATED_NETWORK_POLICIES) as SharedInformer<GeneratedObject>;
    const builder = new ControllerBuilder(
      { ...opts.runtime, log: this.log },
      {
        name: 'network',
        concurrency: opts.concurrency ?? 2,
        resyncMs: opts.resyncMs,
        failure: 'network policy reconcile failed; retrying',
        fields: (key) => ({ agentcard: key }),
      },
    )
      .watches(this.cards, (c, { type }) => this.onCard(c, type === 'delete'))
      .watches(this.policies, (p, event) => this.onPolicy(POLICY_KIND, p, event))
      .watches(this.services, (s) => this.cardKeys(s.metadata?.namespace ?? ''))
      .watches(this.generated, (o) => {
        const key = o.metadata.annotations?.[AGENT_CARD_REF_ANNOTATION];
        return key ? [key] : [];
      });
    if (opts.clusterPolicies ?? cache.allNamespaces) {
      this.clusterPolicies = cache.informer<PolicyObject>(CLUSTER_AGENT_POLICIES);
      this.namespaces = cache.informer({
        ...NAMESPACES,
        with: this.clusterPolicies as SharedInformer<KubernetesObject>,
      });
      builder
        .watches(this.clusterPolicies, (p, event) => this.onPolicy(CLUSTER_POLICY_KIND, p, event))
        .watches(this.namespaces, (ns, { type, old }) => {
          if (
            type === 'update' &&
            sortedJson(old?.metadata?.labels ?? {}) === sortedJson(ns.metadata?.labels ?? {})
          )
            return [];
          this.callerList = undefined;
          return this.cardKeys();
        });
    }
    this.built = builder.complete(this);
  }

  unsynced(): string[] {
    return this.built.unsynced();
  }

  runnables(): Runnable[] {
    return this.built.runnables();
  }

  /** Every AgentCard, and every card a generated NetworkPolicy names (a card deleted meanwhile). */
  *keys(): Iterable<{ key: string }> {
    const keys = new Set<string>();
    for (const c of this.cards.list()) keys.add(objectKey(c.metadata.namespace, c.metadata.name));
    for (const o of this.generated.list()) {
      const key = o.metadata.annotations?.[AGENT_CARD_REF_ANNOTATION];
      if (key) keys.add(key);
    }
    for (const key of keys) yield { key };
  }

  started(lanes: { high: number; low: number }): void {
    this.log.info("caches synced; reconciling agents' NetworkPolicies", { agents: lanes.high + lanes.low });
  }

  // ---- event handlers ----------------------------------------------------------------------

  private onCard(card: CardObject, deleted: boolean): Request[] {
    const key = objectKey(card.metadata.namespace, card.metadata.name);
    const facts = cardFacts(card);
    const callerPrint = deleted ? undefined : sortedJson(facts.signerIdentities ?? null);
    const ownPrint = deleted
      ? undefined
      : sortedJson({ labels: card.metadata.labels ?? {}, generation: card.metadata.generation ?? 0, facts });
    const requests: Request[] = [];
    if (deleted || this.cardPrints.get(key) !== ownPrint) requests.push({ key });
    if (deleted) this.cardPrints.delete(key);
    else this.cardPrints.set(key, ownPrint!);
    // Another agent's callers may change: a card added or gone, a signer identity changed.
    const before = this.callerPrints.get(key);
    if (before !== callerPrint) {
      this.callerList = undefined;
      if (this.callersInForce()) requests.push(...this.cardKeys(undefined, CARD_DELAY_MS));
    }
    if (deleted) {
      this.callerPrints.delete(key);
      this.subjects.delete(key);
    } else this.callerPrints.set(key, callerPrint!);
    return requests;
  }

  /** A policy added, its spec changed, or deleted: the cards it can select. */
  private onPolicy(
    kind: PolicyKind,
    p: PolicyObject,
    { type, old }: { type: 'add' | 'update' | 'delete'; old?: PolicyObject },
  ): Request[] {
    if (type === 'update' && (old?.metadata.generation ?? 0) === (p.metadata.generation ?? 0)) return [];
    if (type === 'delete') {
      const key = policyKey(kind, p);
      this.parsed.delete(key);
      this.lastValid.delete(key);
    }
    return this.cardKeys(kind === POLICY_KIND ? p.metadata.namespace : undefined);
  }

  /** The cards of a namespace (or all), optionally after a delay. */
  private cardKeys(namespace?: string, afterMs?: number): Request[] {
    return this.cards.list(namespace).map((c) => ({
      key: objectKey(c.metadata.namespace, c.metadata.name),
      ...(afterMs ? { afterMs, priority: 'low' as const } : {}),
    }));
  }

  /** Whether any valid Enforce policy has a callers rule (then callers must be resolved again). */
  private callersInForce(): boolean {
    return this.policiesIn().effective.some(
      ({ policy }) => policy.spec.mode === 'Enforce' && policy.spec.rules.some((r) => r.callers),
    );
  }

  // ---- policies ------------------------------------------------------------------------------

  /**
   * The effective policies (each valid one, or the last valid version of an invalid one), and the
   * refs of the invalid ones never seen valid.
   */
  private policiesIn(namespace?: string): { effective: KeyedPolicy[]; invalid: string[] } {
    const effective: KeyedPolicy[] = [];
    const invalid: string[] = [];
    const visit = (kind: PolicyKind, obj: PolicyObject) => {
      const ns = kind === POLICY_KIND ? (obj.metadata.namespace ?? '') : '';
      const key = policyKey(kind, obj);
      let entry = this.parsed.get(key);
      if (!entry || entry.version !== obj.metadata.resourceVersion) {
        const result = parsePolicy({ ...obj, apiVersion: API_VERSION, kind, status: undefined });
        entry = { version: obj.metadata.resourceVersion, ...(result.ok ? { policy: result.policy } : {}) };
        this.parsed.set(key, entry);
        if (result.ok) this.lastValid.set(key, result.policy);
      }
      const policy = entry.policy ?? this.lastValid.get(key);
      if (policy) effective.push({ key, policy });
      else invalid.push(policyRef({ kind, name: obj.metadata.name, ...(ns ? { namespace: ns } : {}) }));
    };
    for (const p of this.policies.list(namespace)) visit(POLICY_KIND, p);
    for (const p of this.clusterPolicies?.list() ?? []) visit(CLUSTER_POLICY_KIND, p);
    return { effective, invalid };
  }

  // ---- the reconcile -------------------------------------------------------------------------

  async reconcile(key: string, signal: AbortSignal): Promise<void> {
    const [namespace, name] = splitKey(key);
    const log = this.log.child({ agentcard: key });
    const card = this.cards.get(name, namespace);
    const npName = networkPolicyName(name);
    const cached = this.generated.get(npName, namespace);
    const live = cached?.metadata.annotations?.[AGENT_CARD_REF_ANNOTATION] === key ? cached : undefined;

    if (!card || card.metadata.deletionTimestamp) {
      this.forget(key);
      if (live?.metadata.uid && (await this.delete(live, signal)))
        log.info('generated NetworkPolicy deleted: its AgentCard is gone', { networkPolicy: npName });
      return;
    }

    const { effective, invalid } = this.policiesIn(namespace);
    const named = live?.metadata.annotations?.[POLICIES_ANNOTATION]?.split(', ') ?? [];
    const held = invalid.filter((ref) => named.includes(ref));
    if (held.length) {
      log.warn(
        'an invalid policy this NetworkPolicy comes from is not known in a valid version; it is left as it is',
        {
          networkPolicy: npName,
          policies: held,
        },
      );
      return;
    }
    // Only Enforce policies with a callers rule or quarantine act here: without one in scope, the
    // card is not even rendered.
    const acting = effective.filter(
      ({ policy }) =>
        policy.spec.mode === 'Enforce' &&
        (policy.spec.quarantine === true || policy.spec.rules.some((r) => r.callers)),
    );
    const plan: NetworkPlan = acting.length
      ? planNetworkPolicy({
          subject: this.subjectOf(card),
          uid: card.metadata.uid ?? '',
          policies: acting,
          services: this.serviceViews(namespace),
          callers: this.callers(),
          operator: this.opts.operator,
        })
      : { quarantinedBy: [], callersFrom: [], closed: false };
    this.report(card, key, plan, log);

    try {
      if (!plan.policy) {
        if (live?.metadata.uid && (await this.delete(live, signal)))
          log.info('generated NetworkPolicy deleted: no Enforce policy asks for it', {
            networkPolicy: npName,
          });
        return;
      }
      if (!live) {
        await this.writer.create(
          'networkpolicies',
          `${NETWORKING_API}/namespaces/${namespace}/networkpolicies`,
          plan.policy,
          signal,
        );
        log.info('NetworkPolicy created', {
          networkPolicy: npName,
          policies: plan.policy.metadata.annotations[POLICIES_ANNOTATION],
        });
      } else if (networkPolicyDrift(live, plan.policy)) {
        await this.writer.replace(
          'networkpolicies',
          `${NETWORKING_API}/namespaces/${namespace}/networkpolicies/${encodeURIComponent(npName)}`,
          {
            ...plan.policy,
            metadata: { ...plan.policy.metadata, resourceVersion: live.metadata.resourceVersion },
          },
          signal,
        );
        log.info('NetworkPolicy updated', { networkPolicy: npName });
      }
    } catch (err) {
      if (isOutage(err) || signal.aborted) throw err;
      const code = apiStatusCode(err);
      if (code !== 403 && code !== 409 && code !== 422) throw err;
      const message =
        code === 409
          ? `a NetworkPolicy named ${npName} exists and was not generated by the operator, or changed meanwhile; it is not touched: ${describeApiError(err)}`
          : `writing the NetworkPolicy ${npName} failed: ${describeApiError(err)}`;
      log.warn('NetworkPolicy not written', { networkPolicy: npName, status: code });
      this.event(card, { type: 'Warning', reason: 'NetworkPolicyNotWritten', action: 'Enforce', message });
    }
  }

  private async delete(live: GeneratedObject, signal: AbortSignal): Promise<boolean> {
    const path = `${NETWORKING_API}/namespaces/${live.metadata.namespace}/networkpolicies/${encodeURIComponent(live.metadata.name)}`;
    return this.writer.deleteOwned('networkpolicies', path, live.metadata.uid!, signal);
  }

  /** Metrics, quarantine Events and why a policy fails closed, on a change only. */
  private report(card: CardObject, key: string, plan: NetworkPlan, log: Logger): void {
    if (plan.policy) this.metrics.generated.add(key);
    else this.metrics.generated.delete(key);
    const closed = closedReason(plan);
    if (closed && this.closedNotes.get(key) !== closed) {
      log.warn("every port but the card's restricted to the callers: the A2A ports are not all known", {
        why: closed,
      });
      this.event(card, { type: 'Warning', reason: 'PortsNotResolved', action: 'Enforce', message: closed });
    }
    if (closed) this.closedNotes.set(key, closed);
    else this.closedNotes.delete(key);
    const was = this.metrics.quarantined.has(key);
    if (plan.quarantinedBy.length && !was) {
      this.metrics.quarantined.add(key);
      log.warn('agent quarantined on the network', { policies: plan.quarantinedBy });
      this.event(card, {
        type: 'Warning',
        reason: 'Quarantined',
        action: 'Quarantine',
        message: `the card fails a trust rule of ${plan.quarantinedBy.join(', ')} (quarantine: true): its Pods admit only the card's port and the operator (NetworkPolicy ${networkPolicyName(card.metadata.name)})`,
      });
    } else if (!plan.quarantinedBy.length && was) {
      this.metrics.quarantined.delete(key);
      log.info('agent no longer quarantined', {});
      this.event(card, {
        type: 'Normal',
        reason: 'QuarantineLifted',
        action: 'Quarantine',
        message: 'the card no longer fails a trust rule of a policy with quarantine: true',
      });
    }
  }

  private forget(key: string): void {
    this.closedNotes.delete(key);
    this.metrics.generated.delete(key);
    this.metrics.quarantined.delete(key);
  }

  private event(
    card: CardObject,
    event: { type: 'Normal' | 'Warning'; reason: string; action: string; message: string },
  ) {
    this.opts.events.record(
      {
        apiVersion: API_VERSION,
        kind: KIND,
        name: card.metadata.name,
        namespace: card.metadata.namespace,
        uid: card.metadata.uid ?? '',
      },
      event,
    );
  }

  // ---- inputs --------------------------------------------------------------------------------

  private subjectOf(card: CardObject): Subject {
    const key = objectKey(card.metadata.namespace, card.metadata.name);
    let entry = this.subjects.get(key);
    if (!entry || entry.version !== card.metadata.resourceVersion) {
      entry = { version: card.metadata.resourceVersion, subject: cardSubject(card, undefined) };
      this.subjects.set(key, entry);
    }
    const nsLabels = this.namespaces?.get(card.metadata.namespace)?.metadata?.labels;
    return nsLabels ? { ...entry.subject, namespaceLabels: nsLabels } : entry.subject;
  }

  private serviceViews(namespace: string): ServiceView[] {
    return this.services.list(namespace).map((s) => ({
      name: s.metadata?.name ?? '',
      hasSelector: Object.keys(s.spec?.selector ?? {}).length > 0,
      headless: s.spec?.clusterIP === 'None',
      ports: (s.spec?.ports ?? []).map((p) => ({
        port: p.port,
        ...(p.targetPort !== undefined ? { targetPort: p.targetPort as number | string } : {}),
        ...(p.protocol ? { protocol: p.protocol } : {}),
      })),
    }));
  }

  private callers(): Caller[] {
    this.callerList ??= this.cards.list().map((c) => {
      const labels = this.namespaces?.get(c.metadata.namespace)?.metadata?.labels;
      const ids = cardFacts(c).signerIdentities;
      return {
        name: c.metadata.name,
        namespace: c.metadata.namespace,
        ...(labels ? { namespaceLabels: labels } : {}),
        ...(ids ? { signerIdentities: ids } : {}),
      };
    });
    return this.callerList;
  }
}
