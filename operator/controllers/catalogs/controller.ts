/**
 * The catalog controller (one controller per concern, as cert-manager splits its certificate
 * controllers): reconciles AgentCatalogs and ClusterAgentCatalogs into signed AI Catalog
 * documents and their HTML pages, published in ConfigMaps, from the AgentCard controller's caches
 * (it adds handlers to them, never a second watch of the same objects).
 *
 * What triggers a reconcile of a catalog:
 * - the catalog is added or its metadata.generation changes (never its own status writes);
 * - an AgentCard in its reach changes what a catalog shows of it (card-view.ts fingerprint:
 *   labels, Ready, signatures, reachability, the card's listed fields, its published digest),
 *   appears or goes; events are coalesced for DEBOUNCE_MS (longer for a catalog whose rebuild
 *   is slow, see enqueue), so a burst of card changes rebuilds each catalog a few times, not once
 *   per card;
 * - one of its ConfigMaps changes or disappears (not the echo of its own apply);
 * - a namespace's labels change (ClusterAgentCatalog namespaceSelector);
 * - a labelled signing-key Secret changes; the periodic resync (every catalog).
 *
 * At start (or on winning the election) a catalog whose spec or published ConfigMap changed while
 * no leader ran is queued `high`, the others `low` (runtime/startup.ts, startup-priority.ts).
 *
 * A reconcile that finds everything in place writes nothing (plan.ts compares bytes and status).
 */
import type { KubernetesObject, V1ConfigMap, V1Namespace, V1Secret } from '@kubernetes/client-node';
import {
  API_VERSION,
  CARD_LABEL,
  CATALOG_KIND,
  CATALOG_LABEL,
  CATALOG_PLURAL,
  CLUSTER_CATALOG_KIND,
  CLUSTER_CATALOG_PLURAL,
  GROUP,
  VERSION,
  catalogLabelValue,
  configMapName,
  type CatalogKind,
} from '../../api/names.ts';
import { collectionPath, readOptional } from '../../kube/api.ts';
import type { TrustDocument, TrustSources } from '../../catalog/trust.ts';
import type { KubeClient } from '../../kube/client.ts';
import { systemClock, type Clock } from '../../kube/clock.ts';
import { describeApiError } from '../../kube/errors.ts';
import { ResilientInformer } from '../../kube/informer.ts';
import type { Logger } from '../../log.ts';
import type { CardView } from '../../catalog/entries.ts';
import type { Informers } from '../agentcard/informers.ts';
import { objectKey } from '../../runtime/keys.ts';
import type { AgentCardObject } from '../../api/objects.ts';
import { readReferencedSecrets } from '../../signing/secrets.ts';
import { referencedSecretNames } from '../../signing/secret-index.ts';
import type { QueueGate, QueueObserver, WorkQueue } from '../../runtime/workqueue.ts';
import { Writer } from '../../runtime/writes.ts';
import { checkListAccess, waitForCaches, type ListSource } from '../../runtime/access.ts';
import type { Runnable } from '../../runtime/manager.ts';
import { controllerRunnables, reconcileQueue, WorkSignal } from '../../runtime/reconciler.ts';
import { queueAtStart } from '../../runtime/startup.ts';
import { catalogStartupView } from './startup-priority.ts';
import { cardFingerprint, cardView, publishedCardKey } from './card-view.ts';
import type { NamespaceCache } from '../../runtime/namespace-cache.ts';
import { ownedCatalogStatus, reconcileCatalogPlan, type CatalogObject } from './plan.ts';
import { publishResult } from '../../runtime/outcome.ts';

/** How long card events are gathered before the catalogs they touch are rebuilt. */
export const DEBOUNCE_MS = 250;
/** A catalog rebuilt because AgentCards changed rests this many times its last rebuild's duration. */
const BUILD_SHARE = 2;

export interface CatalogControllerOptions {
  client: KubeClient;
  log: Logger;
  /** The AgentCard controller's caches by watched namespace ('' = all). */
  caches: ReadonlyMap<string, Informers>;
  /** Where ClusterAgentCatalogs publish (and read their signing keys): the operator's namespace. */
  clusterNamespace: string;
  /**
   * Reconcile ClusterAgentCatalogs (they list the cards of every watched namespace and need to
   * read Namespaces); default: when every namespace is watched.
   */
  clusterCatalogs?: boolean;
  /**
   * The operator's shared Namespace cache (namespace-cache.ts), which ClusterAgentCatalogs read
   * for their namespaceSelector; required when they are reconciled (clusterCatalogsOn).
   */
  namespaces?: NamespaceCache;
  concurrency?: number;
  resyncMs: number;
  /** Counts API writes (the operator's metrics). */
  onWrite?: (resource: string) => void;
  /**
   * The API server's health (kube/health.ts): holds the work queue during an outage, as the
   * AgentCard controller's; on recovery, informers in backoff resume at once.
   */
  gate?: QueueGate;
  /** Time for the work queue and the rest between rebuilds (a manual clock in tests). */
  clock?: Clock;
  /** The work queue's metrics (workqueue_*, controller_runtime_reconcile_*). */
  observer?: QueueObserver;
}

/** Whether ClusterAgentCatalogs are reconciled: as asked, else when every namespace is watched. */
export function clusterCatalogsOn(
  opts: Pick<CatalogControllerOptions, 'clusterCatalogs' | 'caches'>,
): boolean {
  return opts.clusterCatalogs ?? opts.caches.has('');
}

type CatalogRef = { kind: CatalogKind; namespace: string; name: string };
const keyOf = (r: CatalogRef) => `${r.kind}/${r.namespace}/${r.name}`;
function parseKey(key: string): CatalogRef {
  const [kind, namespace, ...rest] = key.split('/');
  return { kind: kind as CatalogKind, namespace: namespace!, name: rest.join('/') };
}

export class CatalogController {
  readonly queue: WorkQueue;
  private readonly opts: CatalogControllerOptions;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly cluster: boolean;
  private readonly catalogs = new Map<string, ResilientInformer<CatalogObject & KubernetesObject>>();
  private clusterCatalogs?: ResilientInformer<CatalogObject & KubernetesObject>;
  /** The shared Namespace cache's informer (namespace-cache.ts): handlers here, started there. */
  private namespaces?: ResilientInformer<V1Namespace>;
  /** Tells the shared Namespace cache whether this controller needs it (namespace-cache.ts). */
  private readonly needNamespaces: (needed: boolean) => void = () => {};
  private readonly cardPrints = new Map<string, string>();
  /** ConfigMap and status writes, read-your-writes and echo detection (runtime/writes.ts). */
  private readonly writer: Writer<CatalogObject & KubernetesObject>;
  private started = false;
  /** Aborts the reconciles in flight when the loop is cancelled. */
  private readonly work = new WorkSignal();
  /** Each catalog's last reconcile: how long it took (ms) and when it ended. */
  private readonly lastBuild = new Map<string, { ms: number; endedAt: number }>();

  constructor(opts: CatalogControllerOptions) {
    this.opts = opts;
    this.log = opts.log.child({ controller: 'catalogs' });
    this.cluster = clusterCatalogsOn(opts);
    this.clock = opts.clock ?? systemClock;
    this.writer = new Writer({ client: opts.client, onWrite: (resource) => opts.onWrite?.(resource) });
    this.queue = reconcileQueue({
      reconcile: (key, signal) => this.reconcile(key, signal),
      work: this.work,
      concurrency: opts.concurrency ?? 2,
      gate: opts.gate,
      clock: this.clock,
      observer: opts.observer,
      log: this.log,
      failure: 'catalog reconcile failed; retrying',
      fields: (key) => ({ catalog: key }),
    });
    const api = `/apis/${GROUP}/${VERSION}`;
    for (const ns of opts.caches.keys()) {
      const inf = new ResilientInformer<CatalogObject & KubernetesObject>({
        name: `agentcatalogs/${ns || '*'}`,
        client: opts.client,
        path: collectionPath(api, CATALOG_PLURAL, ns || undefined),
        log: opts.log,
        clock: this.clock,
      });
      this.watchCatalogs(inf, CATALOG_KIND);
      this.catalogs.set(ns, inf);
    }
    if (this.cluster) {
      this.clusterCatalogs = new ResilientInformer<CatalogObject & KubernetesObject>({
        name: 'clusteragentcatalogs',
        client: opts.client,
        path: `${api}/${CLUSTER_CATALOG_PLURAL}`,
        log: opts.log,
        clock: this.clock,
      });
      this.watchCatalogs(this.clusterCatalogs, CLUSTER_CATALOG_KIND);
      if (!opts.namespaces) throw new Error('cluster catalogs need the shared Namespace cache');
      this.namespaces = opts.namespaces.informer;
      this.needNamespaces = opts.namespaces.use();
      // Only a change of labels matters (namespaceSelector): the informer hands old and new.
      this.namespaces.addEventHandler({
        add: () => this.enqueueCluster(),
        update: (old, now) => {
          if (!sameLabels(old.metadata?.labels ?? {}, now.metadata?.labels ?? {})) this.enqueueCluster();
        },
        delete: () => this.enqueueCluster(),
      });
    }
    // As the AgentCard controller's: the API server answers again, so watches waiting out their
    // backoff resume now instead of up to 30 s later.
    opts.gate?.onRecover(() => {
      for (const informer of this.own()) informer.retryNow();
    });
    for (const scope of opts.caches.values()) {
      scope.cards.on('add', (c) => this.onCard(c, false));
      scope.cards.on('update', (c) => this.onCard(c, false));
      scope.cards.on('delete', (c) => this.onCard(c, true));
      scope.configMaps.on('add', (cm) => this.onConfigMap(cm, false));
      scope.configMaps.on('update', (cm) => this.onConfigMap(cm, false));
      scope.configMaps.on('delete', (cm) => this.onConfigMap(cm, true));
      // Labelled Secrets (data cached) and every Secret's metadata: a signing key created, rotated
      // or deleted, labelled or not, rebuilds the catalogs that use it (once per version).
      for (const secrets of scope.secrets) {
        secrets.on('add', (s) => this.onSecret(s));
        secrets.on('update', (s) => this.onSecret(s));
        secrets.on('delete', (s) => this.onSecret(s));
      }
      for (const metadata of scope.secretMetadata) {
        metadata.on('add', (s) => this.onSecret(s));
        metadata.on('update', (s) => this.onSecret(s));
        metadata.on('delete', (s) => this.onSecret(s));
      }
    }
  }

  private own(): Array<ResilientInformer<CatalogObject & KubernetesObject>> {
    // Not the Namespace informer: the shared cache starts, stops and retries it (namespace-cache.ts).
    return [...this.catalogs.values(), ...(this.clusterCatalogs ? [this.clusterCatalogs] : [])];
  }

  /** The resources the API group serves (discovery), so a missing CRD is known before any watch. */
  private async servedPlurals(): Promise<Set<string>> {
    try {
      const list = await readOptional<{ resources?: Array<{ name?: string }> }>(
        this.opts.client,
        `/apis/${GROUP}/${VERSION}`,
      );
      return new Set((list?.resources ?? []).map((r) => r.name ?? ''));
    } catch (err) {
      // Discovery failing is not a reason to give up: the informers retry with backoff.
      this.log.warn('API discovery failed; assuming the catalog CRDs are installed', {
        error: describeApiError(err),
      });
      return new Set([CATALOG_PLURAL, CLUSTER_CATALOG_PLURAL]);
    }
  }

  unsynced(): string[] {
    return this.own()
      .filter((i) => !i.synced)
      .map((i) => i.name);
  }

  /**
   * The controller's runnables (runtime/manager.ts): its own watches on every replica, reconciles
   * on the leader. When the catalog CRDs are not installed (chart value crds.enabled=false and not
   * applied by hand), catalogs stay off with one warning instead of holding readiness back for
   * every AgentCard.
   */
  runnables(): Runnable[] {
    return controllerRunnables({
      name: 'catalog',
      startCaches: (signal) => this.startCaches(signal),
      stopCaches: async () => {
        await Promise.all(this.own().map((i) => i.stop()));
      },
      startReconciling: (signal) => this.startReconciling(signal),
      stopReconciling: () => this.queue.shutdown(),
      cancel: () => this.work.cancel(),
    });
  }

  private async startCaches(signal: AbortSignal): Promise<void> {
    const served = await this.servedPlurals();
    if (!served.has(CATALOG_PLURAL)) {
      this.log.warn(
        'the AgentCatalog CRD is not installed: catalogs are off until it is and the operator restarts',
        {},
      );
      this.catalogs.clear();
    }
    if (this.clusterCatalogs && !served.has(CLUSTER_CATALOG_PLURAL)) {
      this.log.warn(
        'the ClusterAgentCatalog CRD is not installed: cluster catalogs are off until it is and the operator restarts',
        {},
      );
      this.clusterCatalogs = undefined;
      this.namespaces = undefined;
    }
    // Before the access check, which may wait: the shared Namespace cache starts once all its
    // users have said whether they need it.
    this.needNamespaces(this.namespaces !== undefined);
    const api = `/apis/${GROUP}/${VERSION}`;
    const sources: ListSource[] = [...this.catalogs.keys()].map((ns) => ({
      what: `agentcatalogs in ${ns ? `namespace ${ns}` : 'every namespace'}`,
      path: collectionPath(api, CATALOG_PLURAL, ns || undefined),
    }));
    // Namespaces: the shared cache checks its own access (namespace-cache.ts).
    if (this.clusterCatalogs)
      sources.push({ what: 'clusteragentcatalogs', path: `${api}/${CLUSTER_CATALOG_PLURAL}` });
    await checkListAccess(this.opts.client, sources, { signal, log: this.log, clock: this.clock });
    await Promise.all(this.own().map((i) => i.start()));
  }

  /** Once its watches and the shared caches are loaded: queues every catalog, starts the resync. */
  private async startReconciling(signal: AbortSignal): Promise<void> {
    const shared = [...this.opts.caches.values()].flatMap((s) => [s.cards, s.configMaps, ...s.secrets]);
    const namespaces = this.namespaces ? [this.namespaces] : [];
    await waitForCaches([...this.own(), ...namespaces, ...shared], signal);
    if (this.queue.shuttingDown) return;
    this.started = true;
    // Catalogs that need a write first (runtime/startup.ts), then the re-plan of the rest.
    const cachedConfigMap = (namespace: string, name: string) => {
      const scope = this.scope(namespace);
      return scope ? scope.configMaps.get(name, namespace) : 'unknown';
    };
    const lanes = queueAtStart(
      this.queue,
      this.catalogObjects().map(({ key, catalog }) => ({
        key,
        view: catalogStartupView(catalog, cachedConfigMap),
      })),
    );
    this.log.info('caches synced; reconciling catalogs', {
      catalogs: lanes.high + lanes.low,
      changed: lanes.high,
    });
    this.queue.startResync(this.opts.resyncMs, () => this.catalogKeys());
  }

  private catalogObjects(): Array<{ key: string; catalog: CatalogObject }> {
    const out: Array<{ key: string; catalog: CatalogObject }> = [];
    for (const inf of this.catalogs.values())
      for (const c of inf.list())
        out.push({
          key: keyOf({ kind: CATALOG_KIND, namespace: c.metadata.namespace ?? '', name: c.metadata.name }),
          catalog: c,
        });
    for (const c of this.clusterCatalogs?.list() ?? [])
      out.push({
        key: keyOf({ kind: CLUSTER_CATALOG_KIND, namespace: '', name: c.metadata.name }),
        catalog: c,
      });
    return out;
  }

  private catalogKeys(): string[] {
    return this.catalogObjects().map((o) => o.key);
  }

  // ---- event handlers ------------------------------------------------------------------------

  private watchCatalogs(inf: ResilientInformer<CatalogObject & KubernetesObject>, kind: CatalogKind): void {
    const ref = (c: CatalogObject) => ({
      kind,
      namespace: kind === CATALOG_KIND ? (c.metadata.namespace ?? '') : '',
      name: c.metadata.name,
    });
    inf.addEventHandler({
      add: (c) => this.enqueue(keyOf(ref(c))),
      // A spec change, not the echo of its own status write (the informer hands old and new).
      update: (old, now) => {
        if ((old.metadata.generation ?? 0) !== (now.metadata.generation ?? 0)) this.enqueue(keyOf(ref(now)));
      },
      delete: (c) => {
        const key = keyOf(ref(c));
        this.lastBuild.delete(key);
        this.writer.forgetOwner(key);
        this.log.info('catalog deleted; its ConfigMaps are garbage-collected', { catalog: key });
      },
    });
  }

  /**
   * Queues a catalog; a delayed add (an AgentCard event) waits at least DEBOUNCE_MS, and until
   * BUILD_SHARE times its last rebuild's duration has passed since that rebuild ended: while
   * thousands of AgentCards change, a large catalog's rebuilds take at most about a third of the
   * process's time and the AgentCard reconciles keep going, and an idle catalog starts at once.
   */
  private enqueue(key: string, delayMs = 0): void {
    if (!this.started) return;
    if (delayMs <= 0) return this.queue.add(key);
    const last = this.lastBuild.get(key);
    const rest = last ? last.endedAt + BUILD_SHARE * last.ms - this.clock.now() : 0;
    this.queue.addAfter(key, Math.max(delayMs, rest));
  }

  /** Every catalog that can list a card of `namespace`. */
  private enqueueReaching(namespace: string): void {
    const scope = this.catalogs.get(namespace) ?? this.catalogs.get('');
    for (const c of scope?.list(namespace) ?? [])
      this.enqueue(keyOf({ kind: CATALOG_KIND, namespace, name: c.metadata.name }), DEBOUNCE_MS);
    this.enqueueCluster();
  }

  private enqueueCluster(): void {
    for (const c of this.clusterCatalogs?.list() ?? [])
      this.enqueue(keyOf({ kind: CLUSTER_CATALOG_KIND, namespace: '', name: c.metadata.name }), DEBOUNCE_MS);
  }

  private onCard(obj: AgentCardObject, deleted: boolean): void {
    const key = objectKey(obj.metadata.namespace, obj.metadata.name);
    if (deleted) {
      this.cardPrints.delete(key);
    } else {
      const print = cardFingerprint(obj);
      if (this.cardPrints.get(key) === print) return;
      this.cardPrints.set(key, print);
    }
    this.enqueueReaching(obj.metadata.namespace);
  }

  private onConfigMap(cm: V1ConfigMap, deleted: boolean): void {
    const namespace = cm.metadata?.namespace ?? '';
    const labels = cm.metadata?.labels ?? {};
    if (labels[CARD_LABEL]) {
      // A card's published documents: inline entries carry them.
      if (!deleted) this.enqueueInline(namespace);
      return;
    }
    const owner = cm.metadata?.ownerReferences?.find(
      (r) => r.controller && (r.kind === CATALOG_KIND || r.kind === CLUSTER_CATALOG_KIND),
    );
    if (!owner || !labels[CATALOG_LABEL]) return;
    if (deleted) this.writer.forgetConfigMap(namespace, cm.metadata?.name ?? '');
    else if (this.writer.isConfigMapEcho(cm)) return; // the echo of our own apply
    const kind = owner.kind as CatalogKind;
    this.enqueue(
      keyOf({ kind, namespace: kind === CATALOG_KIND ? namespace : '', name: owner.name }),
      DEBOUNCE_MS,
    );
  }

  private enqueueInline(namespace: string): void {
    // Inline entries carry the published card; a trust policy verifies it; a manifest digests it.
    const inline = (c: CatalogObject) => readsPublishedCards(c.spec);
    const scope = this.catalogs.get(namespace) ?? this.catalogs.get('');
    for (const c of scope?.list(namespace) ?? [])
      if (inline(c))
        this.enqueue(keyOf({ kind: CATALOG_KIND, namespace, name: c.metadata.name }), DEBOUNCE_MS);
    for (const c of this.clusterCatalogs?.list() ?? [])
      if (inline(c))
        this.enqueue(
          keyOf({ kind: CLUSTER_CATALOG_KIND, namespace: '', name: c.metadata.name }),
          DEBOUNCE_MS,
        );
  }

  private onSecret(secret: V1Secret | KubernetesObject): void {
    const namespace = secret.metadata?.namespace ?? '';
    const name = secret.metadata?.name ?? '';
    const uses = (c: CatalogObject) => referencedSecretNames(c.spec).includes(name);
    const scope = this.catalogs.get(namespace) ?? this.catalogs.get('');
    for (const c of scope?.list(namespace) ?? [])
      if (uses(c)) this.enqueue(keyOf({ kind: CATALOG_KIND, namespace, name: c.metadata.name }), DEBOUNCE_MS);
    if (namespace === this.opts.clusterNamespace)
      for (const c of this.clusterCatalogs?.list() ?? [])
        if (uses(c))
          this.enqueue(
            keyOf({ kind: CLUSTER_CATALOG_KIND, namespace: '', name: c.metadata.name }),
            DEBOUNCE_MS,
          );
  }

  // ---- reads ---------------------------------------------------------------------------------

  private scope(namespace: string): Informers | undefined {
    return this.opts.caches.get(namespace) ?? this.opts.caches.get('');
  }

  private currentCatalog(ref: CatalogRef): CatalogObject | undefined {
    const cached =
      ref.kind === CATALOG_KIND
        ? (this.catalogs.get(ref.namespace) ?? this.catalogs.get(''))?.get(ref.name, ref.namespace)
        : this.clusterCatalogs?.get(ref.name);
    return this.writer.readOwner(keyOf(ref), cached);
  }

  private liveConfigMap(namespace: string, name: string): V1ConfigMap | undefined {
    const cached = this.scope(namespace)?.configMaps.get(name, namespace);
    return this.writer.readConfigMap(namespace, name, cached);
  }

  private cardsInReach(ref: CatalogRef, audience: string | undefined, inline: boolean): CardView[] {
    const out: CardView[] = [];
    const add = (scope: Informers, namespace?: string) => {
      for (const obj of scope.cards.list(namespace)) {
        let published: string | undefined;
        const view = cardView(obj);
        if (inline) {
          const dataKey = publishedCardKey(audience, view);
          const cm = dataKey
            ? this.liveConfigMap(obj.metadata.namespace, configMapName(obj.metadata.name))
            : undefined;
          published = dataKey ? cm?.data?.[dataKey] : undefined;
          if (published !== undefined) view.publishedCard = published;
        }
        out.push(view);
      }
    };
    if (ref.kind === CATALOG_KIND) {
      const scope = this.scope(ref.namespace);
      if (scope) add(scope, ref.namespace);
    } else {
      for (const scope of this.opts.caches.values()) add(scope);
    }
    return out;
  }

  /**
   * The ConfigMaps this catalog published, from the cache, or with one LIST when their namespace
   * is not watched (a ClusterAgentCatalog's, when the operator watches other namespaces only).
   */
  private async published(
    kind: CatalogKind,
    name: string,
    namespace: string,
    uid: string,
    signal: AbortSignal,
  ): Promise<V1ConfigMap[]> {
    const label = catalogLabelValue(kind, name);
    const owned = (cm: V1ConfigMap) =>
      cm.metadata?.labels?.[CATALOG_LABEL] === label &&
      (cm.metadata?.ownerReferences ?? []).some((r) => r.uid === uid);
    const scope = this.scope(namespace);
    if (scope)
      return scope.configMaps
        .list(namespace)
        .filter(owned)
        .map((cm) => this.liveConfigMap(namespace, cm.metadata!.name!) ?? cm);
    const list = await readOptional<{ items: V1ConfigMap[] }>(
      this.opts.client,
      `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps?labelSelector=${encodeURIComponent(`${CATALOG_LABEL}=${label}`)}`,
      signal,
    );
    return (list?.items ?? []).filter(owned);
  }

  /**
   * The ConfigMaps spec.trust references, read at each reconcile (they are not the operator's, so
   * its ConfigMap cache does not hold them; a change is picked up at the next resync or change
   * of the catalog). A LIST by name, not a GET: the operator's role lists ConfigMaps, and one
   * verb fewer is one permission fewer (the same as named Secrets).
   */
  private async readTrustSources(
    namespace: string,
    trust: unknown,
    signal: AbortSignal,
  ): Promise<TrustSources> {
    const read = async (ref: unknown): Promise<TrustDocument | undefined> => {
      const cm = (ref as { configMap?: { name?: unknown; key?: unknown } } | undefined)?.configMap;
      if (typeof cm?.name !== 'string' || typeof cm.key !== 'string') return undefined;
      try {
        const list = await readOptional<{ items?: V1ConfigMap[] }>(
          this.opts.client,
          `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps?fieldSelector=${encodeURIComponent(`metadata.name=${cm.name}`)}`,
          signal,
        );
        const found = list?.items?.[0];
        if (!found) return { error: `ConfigMap ${namespace}/${cm.name} not found` };
        const text = found.data?.[cm.key];
        return text === undefined
          ? { error: `ConfigMap ${namespace}/${cm.name} has no key ${cm.key}` }
          : { text };
      } catch (err) {
        return { error: `reading ConfigMap ${namespace}/${cm.name}: ${describeApiError(err)}` };
      }
    };
    const t = trust as { trustBundle?: unknown; jwks?: unknown };
    const [trustBundle, jwks] = await Promise.all([read(t?.trustBundle), read(t?.jwks)]);
    return { ...(trustBundle ? { trustBundle } : {}), ...(jwks ? { jwks } : {}) };
  }

  // ---- the reconcile -------------------------------------------------------------------------

  async reconcile(key: string, signal: AbortSignal): Promise<void> {
    this.log.debug('reconciling catalog', { catalog: key });
    const started = this.clock.now();
    try {
      await this.reconcileCatalog(key, signal);
    } finally {
      const endedAt = this.clock.now();
      this.lastBuild.set(key, { ms: endedAt - started, endedAt });
    }
  }

  private async reconcileCatalog(key: string, signal: AbortSignal): Promise<void> {
    const ref = parseKey(key);
    const catalog = this.currentCatalog(ref);
    if (!catalog || catalog.metadata.deletionTimestamp) return;
    const publishNamespace = ref.kind === CATALOG_KIND ? ref.namespace : this.opts.clusterNamespace;
    const spec = (catalog.spec ?? {}) as { audience?: string; entries?: string; trust?: unknown };
    const cards = this.cardsInReach(ref, spec.audience, readsPublishedCards(spec));
    const trustSources =
      spec.trust !== undefined
        ? await this.readTrustSources(publishNamespace, spec.trust, signal)
        : undefined;
    const secrets = await readReferencedSecrets(
      this.opts.client,
      this.scope(publishNamespace),
      publishNamespace,
      catalog.spec,
      signal,
    );
    const published = new Map(
      (await this.published(ref.kind, ref.name, publishNamespace, catalog.metadata.uid, signal)).map((cm) => [
        cm.metadata!.name!,
        cm,
      ]),
    );
    const watched = this.scope(publishNamespace) !== undefined;
    const input = {
      kind: ref.kind,
      catalog,
      publishNamespace,
      cards,
      // From the namespace cache itself (undefined: a namespace it does not know).
      namespaceLabels: (ns: string) => {
        const namespace = this.namespaces?.get(ns);
        return namespace ? (namespace.metadata?.labels ?? {}) : undefined;
      },
      secrets,
      liveConfigMap: (name: string) =>
        watched ? this.liveConfigMap(publishNamespace, name) : published.get(name),
      liveNames: [...published.keys()],
      ...(trustSources ? { trustSources } : {}),
      now: new Date(),
    };
    // Decided once (build, sign); a failed publish only changes the derived status.
    const { decision, result, plan } = await reconcileCatalogPlan(input, (configMaps) =>
      publishResult(() =>
        this.writer.publish(
          configMaps,
          (ns, n) => this.scope(ns)?.configMaps.get(n, ns)?.metadata?.resourceVersion,
          signal,
        ),
      ),
    );
    // The API server is away: nothing more can be written; the gated queue retries.
    if (result.result === 'Outage') throw result.error;
    const written = result.result === 'Published' ? (decision.artifacts?.writes.length ?? 0) : 0;
    let publishError: unknown;
    if (result.result !== 'Published') {
      // Reported, and retried with backoff unless the API server refused the object itself (422).
      if (result.result === 'PublishFailed') publishError = result.error;
      this.log.warn('publishing a catalog ConfigMap failed', {
        catalog: key,
        configMap: result.name,
        error: result.message,
        retrying: result.result === 'PublishFailed',
      });
    }
    if (plan.statusChanged) {
      const plural = ref.kind === CATALOG_KIND ? CATALOG_PLURAL : CLUSTER_CATALOG_PLURAL;
      const namespace = ref.kind === CATALOG_KIND ? ref.namespace : undefined;
      const body = {
        apiVersion: API_VERSION,
        kind: ref.kind,
        metadata: { name: ref.name, ...(namespace !== undefined ? { namespace } : {}) },
        status: ownedCatalogStatus(plan.status),
      };
      const stored = await this.writer.writeStatus(
        key,
        { group: GROUP, version: VERSION, plural },
        namespace,
        ref.name,
        body,
        catalog.metadata.resourceVersion,
        signal,
      );
      if (!stored) return; // deleted meanwhile
    }
    if (written > 0 || plan.statusChanged) {
      this.log.info('catalog reconciled', {
        catalog: key,
        ready: plan.ready,
        entries: plan.status.entries,
        wroteConfigMaps: written,
        wroteStatus: plan.statusChanged,
        digest: plan.status.digest,
      });
    }
    if (publishError) throw publishError;
  }
}

/**
 * Whether a catalog reads its cards' published documents: inline entries, a trust policy, or
 * signing (each entry's Trust Manifest carries the digest of the card served).
 */
function readsPublishedCards(spec: unknown): boolean {
  const s = spec as { entries?: unknown; trust?: unknown; signing?: unknown } | undefined;
  return s?.entries === 'inline' || s?.trust !== undefined || s?.signing !== undefined;
}

function sameLabels(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}
