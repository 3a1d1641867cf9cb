/**
 * The AgentCard controller: informers feed a work queue; each reconcile reads what it needs
 * (AgentCard and ConfigMap from the caches, referenced Secrets from a small labelled cache or a
 * direct GET), plans (plan.ts) and writes only what changed (server-side apply).
 *
 * What triggers a reconcile:
 * - an AgentCard is added, or its metadata.generation changes (spec edits), or someone else
 *   edits the controller-owned status (corrected at once); never the echo of the controller's
 *   own status write, so its writes cause no loop;
 * - an owned ConfigMap changes or disappears (not the echo of the controller's own apply);
 * - a Secret that an AgentCard references appears, changes or goes, labelled or not (a
 *   metadata-only watch of all Secrets; labelled ones also have their data cached);
 * - a probe verdict changes (probe wiring);
 * - a Pod that asks for the card (annotation agentcard.dev/inject) appears, goes, or gains or
 *   loses the sidecar (status.serving);
 * - with --policies: an AgentPolicy or ClusterAgentPolicy added, deleted or whose spec changed
 *   (every card in its reach, in the background), a card's labels, a namespace's labels;
 * - the periodic resync (every AgentCard, e.g. every 10 minutes).
 * The first reconcile of every card, the resync, probe verdicts and a Secret many cards share
 * are background work: queued `low`, so that a spec change (or any other edit) goes first; at
 * start (or on winning the election) a card whose spec or ConfigMap changed while no leader ran
 * is queued `high` (runtime/startup.ts, startup-priority.ts).
 *
 * Read-your-writes: see write-overlay.ts. The caches are built in informers.ts, the Pod index
 * for status.serving in pod-index.ts; the decisions themselves are pure (plan.ts).
 */
import { createHash } from 'node:crypto';
import type { V1ConfigMap, V1Secret, KubernetesObject } from '@kubernetes/client-node';
import {
  ACCEPT_BREAKING_ANNOTATION,
  API_VERSION,
  CARD_LABEL,
  CLUSTER_POLICY_KIND,
  POLICY_KIND,
  type PolicyKind,
  configMapName,
  GROUP,
  KIND,
  PLURAL,
  signingCertificateName,
  VERSION,
} from '../../api/names.ts';
import type { IssuanceState } from '../../signing/issuance.ts';
import type { AgentCardSpec } from '../../card/resource.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { EventRecorder } from '../../kube/events.ts';
import type { Logger } from '../../log.ts';
import {
  AGENT_CARDS,
  OWNED_CONFIGMAPS,
  PODS,
  secretCaches,
  type CachedAgentCard,
  type SecretCaches,
} from '../cache/collections.ts';
import type { CachedConfigMap } from '../cache/configmap-trim.ts';
import { objectKey, splitKey } from '../../runtime/keys.ts';
import { CONTROLLER_NAMES, type ControllerMetrics } from '../metrics.ts';
import { reconcilePlan } from './plan.ts';
import { type AgentCardObject } from '../../api/objects.ts';
import { publishResult } from '../../runtime/outcome.ts';
import { PodIndex } from '../../serving/pod-index.ts';
import type { ProbeHooks, ProbeWiringOptions } from './probes.ts';
import { readReferencedSecrets } from '../../signing/secrets.ts';
import { referencedSecretNames, SecretIndex } from '../../signing/secret-index.ts';
import { summarizeServing } from '../../serving/pods.ts';
import { cardStartupView } from './startup-priority.ts';
import { DATA_KEYS } from '../../api/names.ts';
import { CentralHosts } from '../../serving/central-hosts.ts';
import { withServingCondition } from './serving-condition.ts';
import {
  noServedChecks,
  withDeliveredCondition,
  type ServedHooks,
  type ServedWiringOptions,
} from './served.ts';
import { sortedJson } from '../../runtime/sorted-json.ts';
import { CardPolicies } from './policies.ts';
import { ownedStatus, statusApplyBody, type ControllerStatus } from './status.ts';
import type { HandlerResult, Priority, WorkQueue } from '../../runtime/workqueue.ts';
import { SourceTracker, type SourceDeps } from '../../source/tracker.ts';
import { systemClock, type Clock } from '../../kube/clock.ts';
import { Writer } from '../../runtime/writes.ts';
import type { Runnable } from '../../runtime/manager.ts';
import {
  ControllerBuilder,
  type BuiltController,
  type EventType,
  type Request,
  type Runtime,
} from '../../runtime/builder.ts';
import type { Cache, SharedInformer } from '../../runtime/cache.ts';
import type { Channel } from '../../runtime/channel.ts';
import type { StartupView } from '../../runtime/startup.ts';

const RESOURCE = { group: GROUP, version: VERSION, plural: PLURAL };

const labelsOf = (card: AgentCardObject) =>
  (card.metadata as { labels?: Record<string, string> }).labels ?? {};

/** A short digest of the controller-owned part of a status (order of keys does not matter). */
function statusDigest(status: unknown): string {
  return createHash('sha256')
    .update(sortedJson(ownedStatus(status)))
    .digest('base64');
}

export interface ControllerOptions {
  client: KubeClient;
  /** The manager's cache (runtime/cache.ts) and what every controller shares. */
  cache: Cache;
  runtime: Runtime;
  /** Named mode: the only Secrets the operator may read, by name (`--secret-name`). */
  secretNames?: readonly string[];
  /**
   * Set when the operator requests signing certificates (--cert-manager): what the issuer
   * controller knows of a card's Certificate (controllers/issuer/), read when its key is resolved;
   * `wake` is where the issuer says that it changed.
   */
  issuance?: { state: (cardKey: string) => IssuanceState | undefined; wake: Channel };
  concurrency: number;
  resyncMs: number;
  log: Logger;
  metrics: ControllerMetrics;
  events: EventRecorder;
  /**
   * The probes of the cards' interfaces (probes.ts probeWiring, or noProbes), made with what they
   * read of this controller: a card's live status, and a way to queue it again.
   */
  probes: (card: {
    liveStatus: ProbeWiringOptions['liveStatus'];
    requeue: (key: string) => void;
  }) => ProbeHooks;
  /** Fetching the cards of spec.source (operator/source/); none: adopted cards are not fetched. */
  source?: Omit<SourceDeps, 'clock'>;
  /** The served-card check (served.ts servedWiring); none: noServedChecks. */
  served?: (card: {
    liveStatus: ServedWiringOptions['liveStatus'];
    publishedData: ServedWiringOptions['publishedData'];
    requeue: (key: string) => void;
  }) => ServedHooks;
  /** Time for the source's re-fetch schedule and the queue's delays (a manual clock in tests). */
  clock?: Clock;
  /**
   * --policies: cards are judged by the AgentPolicies (and, with `cluster`, the
   * ClusterAgentPolicies) that select them (policies.ts, policy-gate.ts); none: no policy applies.
   */
  policies?: { cluster: boolean };
  /**
   * Called once, the first time the queue drains after the start queued every card: the start's
   * burst of reconciles is over (the operator tunes its garbage collector for the steady state then).
   */
  onCaughtUp?: () => void;
}

export class Controller {
  readonly queue: WorkQueue;
  /** The probes (probes.ts): the manager stops their scheduler after the reconciles. */
  readonly probes: ProbeHooks;
  /** The served-card check (served.ts): the manager stops it with the probes. */
  readonly served: ServedHooks;
  private readonly opts: ControllerOptions;
  private readonly log: Logger;
  private readonly cards: SharedInformer<CachedAgentCard>;
  private readonly configMaps: SharedInformer<CachedConfigMap>;
  private readonly secrets: SecretCaches;
  private readonly built: BuiltController;
  private readonly secretIndex = new SecretIndex();
  /**
   * A digest of the controller-owned status each card should have (what the last reconcile
   * planned), so that a status someone else edits is noticed and corrected at once, not at the
   * next resync: a status-only update does not change metadata.generation.
   */
  private readonly plannedStatus = new Map<string, string>();
  /** ConfigMap and status writes, read-your-writes and echo detection (runtime/writes.ts). */
  private readonly writer: Writer<AgentCardObject & KubernetesObject>;
  private readonly pods = new PodIndex();
  /** The adopted cards' sources: what each one serves, and when it is fetched again. */
  private readonly sources: SourceTracker;
  /** Hosts claimed on the central card server, for the Serving condition (serving/central-hosts.ts). */
  private readonly centralHosts = new CentralHosts();
  /** The policies in force (--policies), read from the shared cache. */
  private readonly policies?: CardPolicies;

  constructor(opts: ControllerOptions) {
    this.opts = opts;
    this.log = opts.log;
    this.writer = new Writer({
      client: opts.client,
      onWrite: (resource) => opts.metrics.apiWrites.inc({ resource }),
    });
    const clock = opts.clock ?? systemClock;
    this.sources = new SourceTracker({
      clock,
      fetch:
        opts.source?.fetch ??
        (async (urls) => ({
          ok: false,
          url: urls[0] ?? '',
          reason: 'SourceFetchDisabled',
          message: 'this operator does not fetch sources',
        })),
      servicePort: opts.source?.servicePort ?? (async () => undefined),
    });
    this.probes = opts.probes({
      liveStatus: (key) => this.liveStatus(key),
      requeue: (key) => this.requeue(key),
    });
    this.served =
      opts.served?.({
        liveStatus: (key) => this.liveStatus(key),
        publishedData: (key) => {
          const [namespace, name] = splitKey(key);
          return this.currentConfigMap(namespace, configMapName(name))?.data;
        },
        requeue: (key) => this.requeue(key),
      }) ?? noServedChecks();
    const { cache } = opts;
    this.cards = cache.informer(AGENT_CARDS);
    this.configMaps = cache.informer(OWNED_CONFIGMAPS);
    this.secrets = secretCaches(cache, opts.secretNames);
    const builder = new ControllerBuilder(
      { ...opts.runtime, clock },
      {
        name: CONTROLLER_NAMES.cards,
        concurrency: opts.concurrency,
        resyncMs: opts.resyncMs,
        failure: 'reconcile failed; retrying',
        fields: (key) => {
          const [namespace, name] = splitKey(key);
          return { namespace, name };
        },
        onDepth: (d) => opts.metrics.workqueueDepth.set(d),
      },
    )
      .watches(this.cards, (card, { type, old }) => this.onCard(card, type, old))
      .watches(this.configMaps, (cm, { type }) => this.onConfigMap(cm, type === 'delete'))
      .watches(cache.informer(PODS), (pod, { type }) => this.pods.update(pod, type === 'delete'));
    for (const secrets of [...this.secrets.secrets, ...this.secrets.metadata])
      builder.watches(secrets as SharedInformer<KubernetesObject>, (secret) => this.onSecret(secret));
    if (opts.issuance) builder.wakes(opts.issuance.wake);
    if (opts.policies) {
      const policies = new CardPolicies(cache, opts.policies.cluster);
      this.policies = policies;
      builder.watches(policies.policies, (p, event) => this.onPolicy(POLICY_KIND, p, event));
      if (policies.clusterPolicies)
        builder.watches(policies.clusterPolicies, (p, event) => this.onPolicy(CLUSTER_POLICY_KIND, p, event));
      if (policies.namespaces)
        builder.watches(policies.namespaces, (ns, { type, old }) =>
          type === 'update' &&
          sortedJson(old?.metadata?.labels ?? {}) === sortedJson(ns.metadata?.labels ?? {})
            ? []
            : this.cardsIn(ns.metadata?.name ?? ''),
        );
    }
    this.built = builder.complete(this);
    this.queue = this.built.queue;
  }

  /** The controller's runnables (runtime/manager.ts): its reconcile loop, on the leader. */
  runnables(): Runnable[] {
    return this.built.runnables();
  }

  /** Names of informers that have not loaded their first list yet. */
  unsynced(): string[] {
    return this.built.unsynced();
  }

  /** Every AgentCard; at start, those whose spec or ConfigMap changed go first (runtime/startup.ts). */
  *keys(): Iterable<{ key: string; view: StartupView }> {
    for (const card of this.cards.list()) {
      const { namespace, name } = card.metadata;
      const configMap = this.configMaps.get(configMapName(name), namespace);
      yield { key: objectKey(namespace, name), view: cardStartupView(card, configMap) };
    }
  }

  started(lanes: { high: number; low: number }): void {
    const agentCards = lanes.high + lanes.low;
    this.log.info('caches synced; reconciling', { agentCards, changed: lanes.high });
    // Called once per process: the manager runs the leader's runnables once (a lost lease ends it).
    const since = performance.now();
    void this.queue.idle().then(() => {
      // A lost lease also empties the queue: that is not catching up.
      if (this.queue.shuttingDown) return;
      const seconds = Math.round((performance.now() - since) / 100) / 10;
      this.log.info('every AgentCard reconciled once', { agentCards, seconds });
      this.opts.onCaughtUp?.();
    });
  }

  private enqueue(key: string, priority: Priority = 'high'): void {
    this.built.enqueue({ key, priority });
  }

  // ---- event handlers (each returns the keys to reconcile) ---------------------------------

  /** `old`: the cached card an update replaces (none: added). */
  private onCard(obj: AgentCardObject, type: EventType, old?: AgentCardObject): string[] {
    if (type === 'delete') {
      this.onCardDeleted(obj);
      return [];
    }
    const { namespace, name } = obj.metadata;
    const key = objectKey(namespace, name);
    this.secretIndex.set(
      key,
      referencedSecretNames(obj.spec, name).map((s) => objectKey(namespace, s)),
    );
    const changed =
      !old ||
      (old.metadata.generation ?? 0) !== (obj.metadata.generation ?? 0) ||
      !!obj.metadata.deletionTimestamp ||
      // Accepting a held breaking change is an annotation: it does not move the generation.
      old.metadata.annotations?.[ACCEPT_BREAKING_ANNOTATION] !==
        obj.metadata.annotations?.[ACCEPT_BREAKING_ANNOTATION] ||
      // Labels select the policies that judge the card: they do not move the generation either.
      (!!this.policies && sortedJson(labelsOf(old)) !== sortedJson(labelsOf(obj))) ||
      this.statusEditedByOthers(key, obj);
    return changed ? [key] : [];
  }

  /** Whether an update shows a controller-owned status other than the one last planned. */
  private statusEditedByOthers(key: string, obj: AgentCardObject): boolean {
    const planned = this.plannedStatus.get(key);
    if (planned === undefined || this.writer.isOwnerEcho(key, obj.metadata.resourceVersion)) return false;
    return statusDigest(obj.status) !== planned;
  }

  private onCardDeleted(obj: AgentCardObject): void {
    const { namespace, name } = obj.metadata;
    const key = objectKey(namespace, name);
    this.secretIndex.delete(key);
    this.plannedStatus.delete(key);
    this.writer.forgetOwner(key);
    this.writer.forgetConfigMap(namespace, configMapName(name));
    this.opts.metrics.forgetCard(namespace, name);
    this.probes.forget(key);
    this.served.forget(key);
    this.sources.forget(key);
    this.log.info('AgentCard deleted; its ConfigMap is garbage-collected', { namespace, name });
  }

  /**
   * A policy was added, deleted, or its spec changed (not the echo of the policy controller's
   * status write): the cards in its reach are judged again, in the background.
   */
  private onPolicy(
    kind: PolicyKind,
    p: KubernetesObject,
    { type, old }: { type: EventType; old?: KubernetesObject },
  ): Request[] {
    if (type === 'update' && (old?.metadata?.generation ?? 0) === (p.metadata?.generation ?? 0)) return [];
    if (type === 'delete') this.policies?.forget(kind, p as never);
    return this.cardsIn(kind === POLICY_KIND ? (p.metadata?.namespace ?? '') : undefined);
  }

  /** Every card of a namespace (undefined: of every namespace), queued in the background. */
  private cardsIn(namespace: string | undefined): Request[] {
    return this.cards
      .list(namespace)
      .map((c) => ({ key: objectKey(c.metadata.namespace, c.metadata.name), priority: 'low' as const }));
  }

  private onConfigMap(obj: V1ConfigMap, deleted: boolean): string[] {
    const namespace = obj.metadata?.namespace ?? '';
    const owner =
      obj.metadata?.labels?.[CARD_LABEL] ??
      obj.metadata?.ownerReferences?.find((r) => r.controller && r.kind === KIND)?.name;
    if (!owner) return [];
    // Before the echo check: the echo of our own apply can be what starts or ends a conflict.
    const keys = this.centralHosts.update(obj, deleted);
    if (deleted) this.writer.forgetConfigMap(namespace, obj.metadata?.name ?? '');
    else if (this.writer.isConfigMapEcho(obj)) return keys; // the echo of our own apply
    return [...keys, objectKey(namespace, owner)];
  }

  /**
   * A Secret appeared, changed or went (from the labelled-Secret cache or the metadata watch of
   * all Secrets). Each cache reports a version once: a relist reports only what changed against
   * its cache (kube/informer.ts), so no record of versions is kept here. Both caches re-queue:
   * the metadata watch usually reports a new version first, and a card reconciled in between
   * still reads the old key from the labelled cache; that cache's own event re-queues it.
   */
  private onSecret(obj: V1Secret | KubernetesObject): Request[] {
    const key = objectKey(obj.metadata?.namespace ?? '', obj.metadata?.name ?? '');
    // A Secret many cards share (a signing key) re-signs them in the background.
    const cards = this.secretIndex.cardsFor(key);
    return cards.map((card) => ({ key: card, priority: cards.length > 1 ? 'low' : 'high' }));
  }

  // ---- reads with read-your-writes -----------------------------------------------------------

  private currentCard(namespace: string, name: string): AgentCardObject | undefined {
    const cached = this.cards.get(name, namespace);
    return this.writer.readOwner(objectKey(namespace, name), cached);
  }

  private currentConfigMap(namespace: string, name: string): V1ConfigMap | undefined {
    const cached = this.configMaps.get(name, namespace);
    return this.writer.readConfigMap(namespace, name, cached);
  }

  // ---- the reconcile -------------------------------------------------------------------------

  async reconcile(key: string, signal: AbortSignal): Promise<HandlerResult> {
    const [namespace, name] = splitKey(key);
    const resource = this.currentCard(namespace, name);
    if (!resource || resource.metadata.deletionTimestamp) {
      this.probes.forget(key);
      this.served.forget(key);
      this.sources.forget(key);
      return;
    }
    const started = process.hrtime.bigint();
    const log = this.log.child({ namespace, name });
    try {
      const result = await this.reconcileCard(key, resource, log, signal);
      this.opts.metrics.reconcileTotal.inc({ result: 'success' });
      return result;
    } catch (err) {
      this.opts.metrics.reconcileTotal.inc({ result: 'error' });
      throw err;
    } finally {
      this.opts.metrics.reconcileDuration.observe(Number(process.hrtime.bigint() - started) / 1e9);
    }
  }

  private async reconcileCard(
    key: string,
    resource: AgentCardObject,
    log: Logger,
    signal: AbortSignal,
  ): Promise<HandlerResult> {
    const { namespace, name } = resource.metadata;
    const generation = resource.metadata.generation ?? 0;
    const now = new Date();
    const source = await this.sources.resolve(
      key,
      {
        namespace,
        spec: resource.spec,
        // After a restart whose first fetch fails: the card last published (source/restore.ts).
        published: () => ({
          card: this.currentConfigMap(namespace, configMapName(name))?.data?.[DATA_KEYS.card],
          status: ownedStatus(resource.status).source,
        }),
      },
      now,
      signal,
    );
    if (source?.fetched) {
      log.debug('fetched the source', {
        condition: source.condition.reason,
        digest: source.status?.digest ?? null,
        nextFetchInMs: source.requeueAfterMs,
      });
    }
    const secrets = await readReferencedSecrets(
      this.opts.client,
      this.secrets,
      namespace,
      resource.spec,
      signal,
      name,
    );
    const cmName = configMapName(name);
    const input = {
      resource,
      secrets,
      liveConfigMap: this.currentConfigMap(namespace, cmName),
      interfaces: (spec: AgentCardSpec | undefined) =>
        this.probes.verdict(key, spec, generation, ownedStatus(resource.status)),
      now,
      serving: summarizeServing({ name, namespace }, this.pods.podsFor(key)),
      issued: {
        secretName: signingCertificateName(name),
        enabled: this.opts.issuance !== undefined,
        state: this.opts.issuance?.state(key),
      },
      ...(source ? { source } : {}),
      ...(this.policies ? { policy: this.policies.input(namespace) } : {}),
    };
    // Decided once (validate, render, sign); a failed publish only changes the derived status.
    const {
      decision,
      result,
      plan: decided,
    } = await reconcilePlan(input, (configMap) =>
      publishResult(() =>
        this.writer.publish(
          [configMap],
          (ns, n) => this.configMaps.get(n, ns)?.metadata?.resourceVersion,
          signal,
        ),
      ),
    );
    let plan = decided;
    log.debug('planned', {
      generation,
      liveConfigMap: input.liveConfigMap?.metadata?.resourceVersion ?? null,
      writeConfigMap: !!decision.artifacts?.write,
      writeStatus: plan.statusChanged,
      events: plan.events.length,
      signing: plan.signingNote,
    });
    // The API server is away: nothing more can be written; the gated queue retries.
    if (result.result === 'Outage') throw result.error;
    let publishError: unknown;
    if (result.result !== 'Published') {
      // Reported, and retried with backoff unless the API server refused the object itself.
      if (result.result === 'PublishFailed') publishError = result.error;
      log.warn('publishing the ConfigMap failed', {
        configMap: cmName,
        error: result.message,
        retrying: result.result === 'PublishFailed',
      });
    } else if (plan.configMap) {
      // The hosts it claims now, without waiting for the echo; the other claimants re-plan.
      for (const card of this.centralHosts.update(plan.configMap, false))
        if (card !== key) this.enqueue(card);
    }
    plan = withServingCondition(
      plan,
      { status: resource.status, namespace, generation },
      this.centralHosts.servingOf(key),
      now,
    );
    plan = withDeliveredCondition(
      plan,
      { status: resource.status },
      this.served.condition(key, plan.spec, generation, ownedStatus(resource.status)),
      now,
    );

    // Recorded before the write, so that its watch echo (which may beat the response) matches.
    this.plannedStatus.set(key, statusDigest(plan.status));
    if (plan.statusChanged) {
      const written = await this.writer.writeStatus(
        key,
        RESOURCE,
        namespace,
        name,
        statusApplyBody({ apiVersion: API_VERSION, kind: KIND, name, namespace }, plan.status),
        resource.metadata.resourceVersion,
        signal,
      );
      if (!written) return undefined; // deleted meanwhile
    }

    if (plan.configMap || plan.statusChanged) {
      // One line per reconcile that wrote something; nothing for the ones that found all in order.
      log.info('reconciled', {
        generation,
        ready: plan.ready,
        wrote: [plan.configMap ? 'configmap' : '', plan.statusChanged ? 'status' : '']
          .filter(Boolean)
          .join('+'),
        ...(plan.configMap ? { digest: plan.status.card?.digest } : {}),
      });
    }
    const regarding = { apiVersion: API_VERSION, kind: KIND, name, namespace, uid: resource.metadata.uid };
    for (const event of plan.events) this.opts.events.record(regarding, event);
    if (plan.change?.class) this.opts.metrics.cardChanges.inc({ class: plan.change.class });
    this.opts.metrics.setCard(namespace, name, {
      ready: plan.ready,
      version: plan.status.card?.version,
      digest: plan.status.card?.digest,
      conditions: plan.status.conditions,
      podsMissingSidecar: plan.status.serving?.podsMissingSidecar,
      signatures: plan.status.signatures,
    });
    if (plan.spec) this.probes.track(key, plan.spec, secrets);
    // The keys of what was published: a decision without artifacts (keys unusable) keeps the last.
    if (plan.spec && decision.artifacts && result.result === 'Published')
      this.served.track(key, plan.spec, decision.artifacts.jwks);
    if (publishError) throw publishError;
    // The next fetch of the source, or a signing certificate's expiry warning or expiry, whichever
    // comes first (the queue keeps one delayed add per key).
    const after = [source?.requeueAfterMs, plan.requeueAfterMs].filter((ms) => ms !== undefined);
    return after.length ? { requeueAfterMs: Math.min(...after) } : undefined;
  }

  /** Re-queues one card, behind any change to act on (probe verdict changes). */
  requeue(key: string): void {
    this.enqueue(key, 'low');
  }

  /** The controller-owned status of a card as this controller sees it now (probe wiring). */
  liveStatus(key: string): { status: ControllerStatus; generation: number } | undefined {
    const [namespace, name] = splitKey(key);
    const card = this.currentCard(namespace, name);
    return card ? { status: ownedStatus(card.status), generation: card.metadata.generation ?? 0 } : undefined;
  }
}
