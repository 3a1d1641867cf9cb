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
 *   appears or goes; events are coalesced for DEBOUNCE_MS, and a catalog rests after each
 *   rebuild in proportion to the work it took (pacing.ts), so a burst of card changes rebuilds
 *   each catalog a few times, not once per card;
 * - one of its ConfigMaps changes or disappears (not the echo of its own apply);
 * - a namespace's labels change (ClusterAgentCatalog namespaceSelector);
 * - for a catalog with spec.imports: a CatalogImport appears, goes or changes its labels, or one of
 *   the ConfigMaps an import keeps its verified entries in changes (imports.ts);
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
  IMPORT_LABEL,
  CLUSTER_CATALOG_KIND,
  CLUSTER_CATALOG_PLURAL,
  GROUP,
  VERSION,
  catalogLabelValue,
  configMapName,
  type CatalogKind,
} from '../../api/names.ts';
import type { AgentCardObject } from '../../api/objects.ts';
import type { CardView } from '../../catalog/entries.ts';
import type { TrustDocument, TrustSources } from '../../catalog/trust.ts';
import { readOptional } from '../../kube/api.ts';
import type { KubeClient } from '../../kube/client.ts';
import { systemClock, type Clock } from '../../kube/clock.ts';
import { describeApiError } from '../../kube/errors.ts';
import type { Logger } from '../../log.ts';
import {
  ControllerBuilder,
  type BuiltController,
  type EventType,
  type Request,
  type Runtime,
} from '../../runtime/builder.ts';
import type { Cache, SharedInformer } from '../../runtime/cache.ts';
import { objectKey } from '../../runtime/keys.ts';
import type { Runnable } from '../../runtime/manager.ts';
import { publishResult } from '../../runtime/outcome.ts';
import type { StartupView } from '../../runtime/startup.ts';
import type { HandlerResult, WorkQueue } from '../../runtime/workqueue.ts';
import { Writer } from '../../runtime/writes.ts';
import { referencedSecretNames } from '../../signing/secret-index.ts';
import { readReferencedSecrets } from '../../signing/secrets.ts';
import {
  AGENT_CARDS,
  AGENT_CATALOGS,
  CATALOG_IMPORTS,
  CLUSTER_AGENT_CATALOGS,
  NAMESPACES,
  OWNED_CONFIGMAPS,
  secretCaches,
  type CachedAgentCard,
  type SecretCaches,
} from '../cache/collections.ts';
import type { CachedConfigMap } from '../cache/configmap-trim.ts';
import { cardFingerprint, cardView, publishedCardKey } from './card-view.ts';
import { ownedCatalogStatus, reconcileCatalogPlan, type CatalogMemo, type CatalogObject } from './plan.ts';
import { catalogStartupView } from './startup-priority.ts';
import { RebuildPacer } from './pacing.ts';
import { ImportedEntries, type CachedImport } from './imports.ts';
import { CONTROLLER_NAMES } from '../metrics.ts';

/**
 * How long card events are gathered before the catalogs they touch are rebuilt; a rebuild also
 * waits out the rest after the catalog's last one (pacing.ts). A rebuild is incremental (plan.ts,
 * catalog/build.ts): after one card's change it decides in a few tens of milliseconds at 10,000
 * entries, so its rest is shorter than DEBOUNCE_MS and a single change is not delayed; only a
 * full rebuild (start, a spec or key change) of a large catalog is followed by a rest of seconds.
 */
export const DEBOUNCE_MS = 100;

export interface CatalogControllerOptions {
  client: KubeClient;
  log: Logger;
  /** The manager's cache (runtime/cache.ts) and what every controller shares. */
  cache: Cache;
  runtime: Runtime;
  /** Named mode (`--secret-name`): the same Secret watches as the AgentCard controller's. */
  secretNames?: readonly string[];
  /** Where ClusterAgentCatalogs publish (and read their signing keys): the operator's namespace. */
  clusterNamespace: string;
  /**
   * Reconcile ClusterAgentCatalogs (they list the cards of every watched namespace and read the
   * Namespaces' labels); default: when every namespace is watched.
   */
  clusterCatalogs?: boolean;
  concurrency?: number;
  resyncMs: number;
  /** Counts API writes (the operator's metrics). */
  onWrite?: (resource: string) => void;
}

type CatalogRef = { kind: CatalogKind; namespace: string; name: string };
/** When a rebuild's decision was made: its writes start then (pacing.ts counts the work before). */
type RebuildTiming = { decidedAt?: number };
const keyOf = (r: CatalogRef) => `${r.kind}/${r.namespace}/${r.name}`;
function parseKey(key: string): CatalogRef {
  const [kind, namespace, ...rest] = key.split('/');
  return { kind: kind as CatalogKind, namespace: namespace!, name: rest.join('/') };
}

type CachedCatalog = CatalogObject & KubernetesObject;

export class CatalogController {
  readonly queue: WorkQueue;
  private readonly opts: CatalogControllerOptions;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly catalogs: SharedInformer<CachedCatalog>;
  private readonly clusterCatalogs?: SharedInformer<CachedCatalog>;
  /** Read for a ClusterAgentCatalog's namespaceSelector; watched only while those are. */
  private readonly namespaces?: SharedInformer<V1Namespace>;
  private readonly cards: SharedInformer<CachedAgentCard>;
  private readonly configMaps: SharedInformer<CachedConfigMap>;
  /** CatalogImports and their stored entries (spec.imports). */
  private readonly imports: SharedInformer<CachedImport>;
  private readonly imported: ImportedEntries;
  private readonly secrets: SecretCaches;
  private readonly built: BuiltController;
  private readonly cardPrints = new Map<string, string>();
  /** ConfigMap and status writes, read-your-writes and echo detection (runtime/writes.ts). */
  private readonly writer: Writer<CatalogObject & KubernetesObject>;
  /** The rest after each catalog's rebuild. */
  private readonly pacer = new RebuildPacer();
  /** Each catalog's memo of its last published decision (plan.ts CatalogMemo). */
  private readonly memos = new Map<string, CatalogMemo>();
  /** The catalog's view of each AgentCard object the informer holds (replaced objects drop out). */
  private readonly views = new WeakMap<AgentCardObject, CardView>();

  constructor(opts: CatalogControllerOptions) {
    this.opts = opts;
    this.log = opts.log.child({ controller: 'catalogs' });
    this.clock = opts.runtime.clock ?? systemClock;
    this.writer = new Writer({ client: opts.client, onWrite: (resource) => opts.onWrite?.(resource) });
    const { cache } = opts;
    this.catalogs = cache.informer<CachedCatalog>(AGENT_CATALOGS);
    this.cards = cache.informer(AGENT_CARDS);
    this.configMaps = cache.informer(OWNED_CONFIGMAPS);
    this.imports = cache.informer<CachedImport>(CATALOG_IMPORTS);
    this.imported = new ImportedEntries(this.imports, this.configMaps);
    this.secrets = secretCaches(cache, opts.secretNames);
    const builder = new ControllerBuilder(
      { ...opts.runtime, log: this.log },
      {
        name: CONTROLLER_NAMES.catalogs,
        concurrency: opts.concurrency ?? 2,
        resyncMs: opts.resyncMs,
        failure: 'catalog reconcile failed; retrying',
        fields: (key) => ({ catalog: key }),
      },
    )
      .watches(this.catalogs, (c, event) => this.onCatalog(CATALOG_KIND, c, event))
      .watches(this.cards, (c, { type }) => this.onCard(c, type === 'delete'))
      .watches(this.configMaps, (cm, { type }) => this.onConfigMap(cm, type === 'delete'))
      // Only an import's labels matter here (spec.imports.selector); its entries are in ConfigMaps.
      .watches(this.imports, (imp, { type, old }) =>
        type === 'update' && sameLabels(old?.metadata?.labels ?? {}, imp.metadata?.labels ?? {})
          ? []
          : this.importing(imp.metadata.namespace),
      );
    if (opts.clusterCatalogs ?? cache.allNamespaces) {
      this.clusterCatalogs = cache.informer<CachedCatalog>(CLUSTER_AGENT_CATALOGS);
      this.namespaces = cache.informer({
        ...NAMESPACES,
        with: this.clusterCatalogs as SharedInformer<KubernetesObject>,
      });
      builder
        .watches(this.clusterCatalogs, (c, event) => this.onCatalog(CLUSTER_CATALOG_KIND, c, event))
        // Only a change of labels matters (namespaceSelector): the informer hands old and new.
        .watches(this.namespaces, (ns, { type, old }) =>
          type === 'update' && sameLabels(old?.metadata?.labels ?? {}, ns.metadata?.labels ?? {})
            ? []
            : this.clusterKeys(),
        );
    }
    // Labelled Secrets (data cached) and every Secret's metadata: a signing key created, rotated
    // or deleted, labelled or not, rebuilds the catalogs that use it (once per version).
    for (const secrets of [...this.secrets.secrets, ...this.secrets.metadata])
      builder.watches(secrets as SharedInformer<KubernetesObject>, (secret) => this.onSecret(secret));
    this.built = builder.complete(this);
    this.queue = this.built.queue;
  }

  unsynced(): string[] {
    return this.built.unsynced();
  }

  /** The controller's runnables (runtime/manager.ts): its reconcile loop, on the leader. */
  runnables(): Runnable[] {
    return this.built.runnables();
  }

  /** Every catalog; at start, those whose spec or published ConfigMap changed go first. */
  *keys(): Iterable<{ key: string; view: StartupView }> {
    const cachedConfigMap = (namespace: string, name: string) =>
      this.configMaps.watches(namespace) ? this.configMaps.get(name, namespace) : 'unknown';
    for (const { key, catalog } of this.catalogObjects())
      yield { key, view: catalogStartupView(catalog, cachedConfigMap) };
  }

  started(lanes: { high: number; low: number }): void {
    this.log.info('caches synced; reconciling catalogs', {
      catalogs: lanes.high + lanes.low,
      changed: lanes.high,
    });
  }

  private catalogObjects(): Array<{ key: string; catalog: CatalogObject }> {
    const out: Array<{ key: string; catalog: CatalogObject }> = [];
    for (const c of this.catalogs.list())
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

  // ---- event handlers (each returns the requests to queue) ---------------------------------

  private onCatalog(
    kind: CatalogKind,
    c: CatalogObject,
    { type, old }: { type: EventType; old?: CatalogObject },
  ) {
    const key = keyOf({
      kind,
      namespace: kind === CATALOG_KIND ? (c.metadata.namespace ?? '') : '',
      name: c.metadata.name,
    });
    if (type === 'delete') {
      this.pacer.forget(key);
      this.memos.delete(key);
      this.writer.forgetOwner(key);
      this.log.info('catalog deleted; its ConfigMaps are garbage-collected', { catalog: key });
      return [];
    }
    // Added, or a spec change; not the echo of its own status write (the informer hands old and new).
    if (type === 'update' && (old?.metadata.generation ?? 0) === (c.metadata.generation ?? 0)) return [];
    return [key];
  }

  /** A catalog rebuilt because something it lists changed: events gathered for DEBOUNCE_MS. */
  private debounced(key: string): Request {
    return { key, afterMs: DEBOUNCE_MS };
  }

  /** Every catalog that can list a card of `namespace`. */
  private reaching(namespace: string): Request[] {
    return [
      ...this.catalogs
        .list(namespace)
        .map((c) => this.debounced(keyOf({ kind: CATALOG_KIND, namespace, name: c.metadata.name }))),
      ...this.clusterKeys(),
    ];
  }

  private clusterKeys(): Request[] {
    return (this.clusterCatalogs?.list() ?? []).map((c) =>
      this.debounced(keyOf({ kind: CLUSTER_CATALOG_KIND, namespace: '', name: c.metadata.name })),
    );
  }

  private onCard(obj: AgentCardObject, deleted: boolean): Request[] {
    const key = objectKey(obj.metadata.namespace, obj.metadata.name);
    if (deleted) {
      this.cardPrints.delete(key);
    } else {
      const print = cardFingerprint(obj);
      if (this.cardPrints.get(key) === print) return [];
      this.cardPrints.set(key, print);
    }
    return this.reaching(obj.metadata.namespace);
  }

  /** Every catalog with spec.imports that can list a CatalogImport of `namespace`. */
  private importing(namespace: string): Request[] {
    const lists = (c: CatalogObject) => (c.spec as { imports?: unknown } | undefined)?.imports !== undefined;
    return [
      ...this.catalogs
        .list(namespace)
        .filter(lists)
        .map((c) => this.debounced(keyOf({ kind: CATALOG_KIND, namespace, name: c.metadata.name }))),
      ...(this.clusterCatalogs?.list() ?? [])
        .filter(lists)
        .map((c) =>
          this.debounced(keyOf({ kind: CLUSTER_CATALOG_KIND, namespace: '', name: c.metadata.name })),
        ),
    ];
  }

  private onConfigMap(cm: V1ConfigMap, deleted: boolean): Request[] {
    const namespace = cm.metadata?.namespace ?? '';
    const labels = cm.metadata?.labels ?? {};
    if (labels[IMPORT_LABEL] !== undefined) {
      // An import's stored entries (federation/store.ts): the catalogs that list imports.
      if (deleted) this.imported.forget(cm);
      return this.importing(namespace);
    }
    if (labels[CARD_LABEL]) {
      // A card's published documents: inline entries carry them.
      return deleted ? [] : this.inlineKeys(namespace);
    }
    const owner = cm.metadata?.ownerReferences?.find(
      (r) => r.controller && (r.kind === CATALOG_KIND || r.kind === CLUSTER_CATALOG_KIND),
    );
    if (!owner || !labels[CATALOG_LABEL]) return [];
    if (deleted) this.writer.forgetConfigMap(namespace, cm.metadata?.name ?? '');
    else if (this.writer.isConfigMapEcho(cm)) return []; // the echo of our own apply
    const kind = owner.kind as CatalogKind;
    return [
      this.debounced(keyOf({ kind, namespace: kind === CATALOG_KIND ? namespace : '', name: owner.name })),
    ];
  }

  private inlineKeys(namespace: string): Request[] {
    // Inline entries carry the published card; a trust policy verifies it; a manifest digests it.
    const inline = (c: CatalogObject) => readsPublishedCards(c.spec);
    return [
      ...this.catalogs
        .list(namespace)
        .filter(inline)
        .map((c) => this.debounced(keyOf({ kind: CATALOG_KIND, namespace, name: c.metadata.name }))),
      ...(this.clusterCatalogs?.list() ?? [])
        .filter(inline)
        .map((c) =>
          this.debounced(keyOf({ kind: CLUSTER_CATALOG_KIND, namespace: '', name: c.metadata.name })),
        ),
    ];
  }

  private onSecret(secret: V1Secret | KubernetesObject): Request[] {
    const namespace = secret.metadata?.namespace ?? '';
    const name = secret.metadata?.name ?? '';
    const uses = (c: CatalogObject) => referencedSecretNames(c.spec).includes(name);
    const out = this.catalogs
      .list(namespace)
      .filter(uses)
      .map((c) => this.debounced(keyOf({ kind: CATALOG_KIND, namespace, name: c.metadata.name })));
    if (namespace === this.opts.clusterNamespace)
      for (const c of this.clusterCatalogs?.list() ?? [])
        if (uses(c))
          out.push(
            this.debounced(keyOf({ kind: CLUSTER_CATALOG_KIND, namespace: '', name: c.metadata.name })),
          );
    return out;
  }

  // ---- reads ---------------------------------------------------------------------------------

  private currentCatalog(ref: CatalogRef): CatalogObject | undefined {
    const cached =
      ref.kind === CATALOG_KIND
        ? this.catalogs.get(ref.name, ref.namespace)
        : this.clusterCatalogs?.get(ref.name);
    return this.writer.readOwner(keyOf(ref), cached);
  }

  private liveConfigMap(namespace: string, name: string): V1ConfigMap | undefined {
    const cached = this.configMaps.get(name, namespace);
    return this.writer.readConfigMap(namespace, name, cached);
  }

  private cardsInReach(ref: CatalogRef, audience: string | undefined, inline: boolean): CardView[] {
    const out: CardView[] = [];
    // A namespaced catalog lists its own namespace's cards (none when it is not watched).
    const namespace = ref.kind === CATALOG_KIND ? ref.namespace : undefined;
    if (namespace !== undefined && !this.cards.watches(namespace)) return out;
    {
      for (const obj of this.cards.list(namespace)) {
        // The same view object while the informer holds the same AgentCard object (and, for
        // inline entries, the same published card): the plan's memo then knows its entry.
        let view = this.views.get(obj);
        if (!view) this.views.set(obj, (view = cardView(obj)));
        if (inline) {
          const dataKey = publishedCardKey(audience, view);
          const cm = dataKey
            ? this.liveConfigMap(obj.metadata.namespace, configMapName(obj.metadata.name))
            : undefined;
          const published = dataKey ? cm?.data?.[dataKey] : undefined;
          if (published !== view.publishedCard) {
            view = cardView(obj, published);
            this.views.set(obj, view);
          }
        }
        out.push(view);
      }
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
    if (this.configMaps.watches(namespace))
      return this.configMaps
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

  async reconcile(key: string, signal: AbortSignal): Promise<HandlerResult> {
    // A rebuild asked for during the rest starts when it ends (pacing.ts).
    const rest = this.pacer.restLeft(key, this.clock.now());
    if (rest > 0) return { requeueAfterMs: rest };
    this.log.debug('reconciling catalog', { catalog: key });
    const started = this.clock.now();
    const timing: RebuildTiming = {};
    try {
      await this.reconcileCatalog(key, signal, timing);
    } finally {
      const endedAt = this.clock.now();
      this.pacer.rebuilt(key, (timing.decidedAt ?? endedAt) - started, endedAt);
    }
  }

  private async reconcileCatalog(key: string, signal: AbortSignal, timing: RebuildTiming): Promise<void> {
    const ref = parseKey(key);
    const catalog = this.currentCatalog(ref);
    if (!catalog || catalog.metadata.deletionTimestamp) return;
    const publishNamespace = ref.kind === CATALOG_KIND ? ref.namespace : this.opts.clusterNamespace;
    const spec = (catalog.spec ?? {}) as {
      audience?: string;
      entries?: string;
      trust?: unknown;
      imports?: unknown;
    };
    const cards = this.cardsInReach(ref, spec.audience, readsPublishedCards(spec));
    const trustSources =
      spec.trust !== undefined
        ? await this.readTrustSources(publishNamespace, spec.trust, signal)
        : undefined;
    const secrets = await readReferencedSecrets(
      this.opts.client,
      this.configMaps.watches(publishNamespace) ? this.secrets : undefined,
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
    const watched = this.configMaps.watches(publishNamespace);
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
      ...(spec.imports !== undefined
        ? { imports: this.imported.inReach(ref.kind === CATALOG_KIND ? ref.namespace : undefined) }
        : {}),
      now: new Date(),
      memo: this.memos.get(key),
    };
    // Decided once (build, sign); a failed publish only changes the derived status.
    const { decision, result, plan } = await reconcileCatalogPlan(input, (configMaps) => {
      timing.decidedAt = this.clock.now();
      return publishResult(() =>
        this.writer.publish(
          configMaps,
          (ns, n) => this.configMaps.get(n, ns)?.metadata?.resourceVersion,
          signal,
        ),
      );
    });
    // Decided, and written if it had anything to write: what follows is the status write.
    timing.decidedAt ??= this.clock.now();
    // The memo describes what is published only once the publish succeeded.
    if (result.result === 'Published' && decision.memo) this.memos.set(key, decision.memo);
    else this.memos.delete(key);
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
