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
import { applyConfigMap, applyStatus, collectionPath, readOptional } from '../../kube/api.ts';
import type { KubeClient } from '../../kube/client.ts';
import { systemClock, type Clock } from '../../kube/clock.ts';
import { describeApiError, isNotFound } from '../../kube/errors.ts';
import { ResilientInformer } from '../../kube/informer.ts';
import type { Logger } from '../../log.ts';
import type { CardView } from '../../catalog/entries.ts';
import type { Informers } from '../informers.ts';
import { objectKey } from '../keys.ts';
import type { AgentCardObject } from '../plan.ts';
import { readReferencedSecrets } from '../read-secrets.ts';
import { referencedSecretNames } from '../secret-index.ts';
import { WorkQueue, type QueueGate } from '../workqueue.ts';
import { WriteOverlay } from '../write-overlay.ts';
import { cardFingerprint, cardView, publishedCardKey } from './card-view.ts';
import { ownedCatalogStatus, planCatalog, type CatalogObject } from './plan.ts';

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
  concurrency?: number;
  resyncMs: number;
  /** Counts API writes (the operator's metrics). */
  onWrite?: (resource: string) => void;
  /** The API server's health (kube/health.ts): on recovery, informers in backoff resume at once. */
  gate?: Pick<QueueGate, 'onRecover'>;
  /** Time for the work queue and the rest between rebuilds (a manual clock in tests). */
  clock?: Clock;
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
  private namespaces?: ResilientInformer<V1Namespace>;
  private readonly seenGeneration = new Map<string, number>();
  private readonly cardPrints = new Map<string, string>();
  private readonly nsLabels = new Map<string, string>();
  private readonly catalogOverlay = new WriteOverlay<CatalogObject & KubernetesObject>();
  private readonly configMapOverlay = new WriteOverlay<V1ConfigMap>();
  /** ConfigMaps being applied now (their watch event may beat the response). */
  private readonly applying = new Map<string, Record<string, string>>();
  private started = false;
  /** Each catalog's last reconcile: how long it took (ms) and when it ended. */
  private readonly lastBuild = new Map<string, { ms: number; endedAt: number }>();

  constructor(opts: CatalogControllerOptions) {
    this.opts = opts;
    this.log = opts.log.child({ controller: 'catalogs' });
    this.cluster = opts.clusterCatalogs ?? opts.caches.has('');
    this.clock = opts.clock ?? systemClock;
    this.queue = new WorkQueue((key) => this.reconcile(key), {
      concurrency: opts.concurrency ?? 2,
      clock: this.clock,
      onError: (key, err, retryInMs) =>
        this.log.warn('catalog reconcile failed; retrying', {
          catalog: key,
          error: describeApiError(err),
          retryInMs,
        }),
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
      this.namespaces = new ResilientInformer<V1Namespace>({
        name: 'namespaces',
        client: opts.client,
        path: '/api/v1/namespaces',
        log: opts.log,
        clock: this.clock,
        trim: (ns) => {
          ns.metadata = {
            name: ns.metadata?.name,
            labels: ns.metadata?.labels,
            resourceVersion: ns.metadata?.resourceVersion,
          };
          delete ns.spec;
          delete ns.status;
        },
      });
      const onNs = (ns: V1Namespace, deleted: boolean) => {
        const name = ns.metadata?.name ?? '';
        const labels = deleted ? '' : JSON.stringify(ns.metadata?.labels ?? {});
        if (this.nsLabels.get(name) === labels) return;
        if (deleted) this.nsLabels.delete(name);
        else this.nsLabels.set(name, labels);
        this.enqueueCluster();
      };
      this.namespaces.on('add', (ns) => onNs(ns, false));
      this.namespaces.on('update', (ns) => onNs(ns, false));
      this.namespaces.on('delete', (ns) => onNs(ns, true));
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
      scope.secrets.on('update', (s) => this.onSecret(s));
      scope.secrets.on('add', (s) => this.onSecret(s));
    }
  }

  private own(): Array<ResilientInformer<KubernetesObject>> {
    return [...this.catalogs.values(), this.clusterCatalogs, this.namespaces].filter(
      (i): i is ResilientInformer<KubernetesObject> => i !== undefined,
    ) as Array<ResilientInformer<KubernetesObject>>;
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
   * Starts its own watches; reconciles once they and the shared caches are loaded. When the
   * catalog CRDs are not installed (chart value crds.enabled=false and not applied by hand),
   * catalogs stay off with one warning instead of holding readiness back for every AgentCard.
   */
  async start(signal: AbortSignal): Promise<void> {
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
    await Promise.all(this.own().map((i) => i.start()));
    const shared = [...this.opts.caches.values()].flatMap((s) => [s.cards, s.configMaps, s.secrets]);
    await Promise.all([...this.own(), ...shared].map((i) => i.waitForSync(signal)));
    if (this.queue.shuttingDown) return;
    this.started = true;
    const keys = this.catalogKeys();
    this.log.info('caches synced; reconciling catalogs', { catalogs: keys.length });
    for (const key of keys) this.queue.add(key);
    this.queue.startResync(this.opts.resyncMs, () => this.catalogKeys());
  }

  async stop(): Promise<void> {
    await this.queue.shutdown();
    await Promise.all(this.own().map((i) => i.stop()));
  }

  private catalogKeys(): string[] {
    const keys: string[] = [];
    for (const inf of this.catalogs.values())
      for (const c of inf.list())
        keys.push(
          keyOf({ kind: CATALOG_KIND, namespace: c.metadata.namespace ?? '', name: c.metadata.name }),
        );
    for (const c of this.clusterCatalogs?.list() ?? [])
      keys.push(keyOf({ kind: CLUSTER_CATALOG_KIND, namespace: '', name: c.metadata.name }));
    return keys;
  }

  // ---- event handlers ------------------------------------------------------------------------

  private watchCatalogs(inf: ResilientInformer<CatalogObject & KubernetesObject>, kind: CatalogKind): void {
    const ref = (c: CatalogObject) => ({
      kind,
      namespace: kind === CATALOG_KIND ? (c.metadata.namespace ?? '') : '',
      name: c.metadata.name,
    });
    const changed = (c: CatalogObject, added: boolean) => {
      const key = keyOf(ref(c));
      const generation = c.metadata.generation ?? 0;
      if (added || this.seenGeneration.get(key) !== generation) {
        this.seenGeneration.set(key, generation);
        this.enqueue(key);
      }
    };
    inf.on('add', (c) => changed(c, true));
    inf.on('update', (c) => changed(c, false));
    inf.on('delete', (c) => {
      const key = keyOf(ref(c));
      this.seenGeneration.delete(key);
      this.lastBuild.delete(key);
      this.catalogOverlay.forget(key);
      this.log.info('catalog deleted; its ConfigMaps are garbage-collected', { catalog: key });
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
    const cmKey = objectKey(namespace, cm.metadata?.name ?? '');
    if (deleted) this.configMapOverlay.forget(cmKey);
    else if (this.configMapOverlay.isOwnEcho(cmKey, cm.metadata?.resourceVersion)) return;
    else if (sameData(cm.data, this.applying.get(cmKey))) return;
    const kind = owner.kind as CatalogKind;
    this.enqueue(
      keyOf({ kind, namespace: kind === CATALOG_KIND ? namespace : '', name: owner.name }),
      DEBOUNCE_MS,
    );
  }

  private enqueueInline(namespace: string): void {
    const inline = (c: CatalogObject) => (c.spec as { entries?: string } | undefined)?.entries === 'inline';
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

  private onSecret(secret: V1Secret): void {
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
    return this.catalogOverlay.read(keyOf(ref), cached);
  }

  private liveConfigMap(namespace: string, name: string): V1ConfigMap | undefined {
    const cached = this.scope(namespace)?.configMaps.get(name, namespace);
    return this.configMapOverlay.read(objectKey(namespace, name), cached);
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
    );
    return (list?.items ?? []).filter(owned);
  }

  // ---- the reconcile -------------------------------------------------------------------------

  async reconcile(key: string): Promise<void> {
    const started = this.clock.now();
    try {
      await this.reconcileCatalog(key);
    } finally {
      const endedAt = this.clock.now();
      this.lastBuild.set(key, { ms: endedAt - started, endedAt });
    }
  }

  private async reconcileCatalog(key: string): Promise<void> {
    const ref = parseKey(key);
    const catalog = this.currentCatalog(ref);
    if (!catalog || catalog.metadata.deletionTimestamp) return;
    const publishNamespace = ref.kind === CATALOG_KIND ? ref.namespace : this.opts.clusterNamespace;
    const spec = (catalog.spec ?? {}) as { audience?: string; entries?: string };
    const cards = this.cardsInReach(ref, spec.audience, spec.entries === 'inline');
    const secrets = await readReferencedSecrets(
      this.opts.client,
      this.scope(publishNamespace)?.secrets,
      publishNamespace,
      catalog.spec,
    );
    const published = new Map(
      (await this.published(ref.kind, ref.name, publishNamespace, catalog.metadata.uid)).map((cm) => [
        cm.metadata!.name!,
        cm,
      ]),
    );
    const watched = this.scope(publishNamespace) !== undefined;
    const parsedLabels = new Map<string, Record<string, string> | undefined>();
    const input = {
      kind: ref.kind,
      catalog,
      publishNamespace,
      cards,
      namespaceLabels: (ns: string) => {
        if (!parsedLabels.has(ns)) {
          const text = this.nsLabels.get(ns);
          parsedLabels.set(ns, text === undefined ? undefined : (JSON.parse(text) as Record<string, string>));
        }
        return parsedLabels.get(ns);
      },
      secrets,
      liveConfigMap: (name: string) =>
        watched ? this.liveConfigMap(publishNamespace, name) : published.get(name),
      liveNames: [...published.keys()],
      now: new Date(),
    };
    let plan = await planCatalog(input);
    let publishError: unknown;
    for (const cm of plan.configMaps) {
      const cmKey = objectKey(publishNamespace, cm.metadata.name);
      const before = this.scope(publishNamespace)?.configMaps.get(cm.metadata.name, publishNamespace)
        ?.metadata?.resourceVersion;
      this.applying.set(cmKey, cm.data);
      try {
        this.opts.onWrite?.('configmap');
        const stored = await applyConfigMap(this.opts.client, cm);
        delete stored.metadata?.managedFields;
        this.configMapOverlay.remember(cmKey, before, stored);
      } catch (err) {
        publishError = err;
        this.log.warn('publishing a catalog ConfigMap failed', {
          catalog: key,
          configMap: cm.metadata.name,
          error: describeApiError(err),
        });
        plan = await planCatalog({ ...input, publishError: describeApiError(err) });
        break;
      } finally {
        this.applying.delete(cmKey);
      }
    }
    if (plan.statusChanged) {
      try {
        this.opts.onWrite?.('status');
        const plural = ref.kind === CATALOG_KIND ? CATALOG_PLURAL : CLUSTER_CATALOG_PLURAL;
        const namespace = ref.kind === CATALOG_KIND ? ref.namespace : undefined;
        const body = {
          apiVersion: API_VERSION,
          kind: ref.kind,
          metadata: { name: ref.name, ...(namespace !== undefined ? { namespace } : {}) },
          status: ownedCatalogStatus(plan.status),
        };
        const stored = (await applyStatus(
          this.opts.client,
          { group: GROUP, version: VERSION, plural },
          namespace,
          ref.name,
          body,
        )) as CatalogObject & KubernetesObject;
        delete stored.metadata?.managedFields;
        this.catalogOverlay.remember(key, catalog.metadata.resourceVersion, stored);
      } catch (err) {
        if (isNotFound(err)) return;
        throw err;
      }
    }
    if (plan.configMaps.length > 0 || plan.statusChanged) {
      this.log.info('catalog reconciled', {
        catalog: key,
        ready: plan.ready,
        entries: plan.status.entries,
        wroteConfigMaps: publishError ? 0 : plan.configMaps.length,
        wroteStatus: plan.statusChanged,
        digest: plan.status.digest,
      });
    }
    if (publishError) throw publishError;
  }
}

function sameData(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  if (!a || !b) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  return ka.every((k) => a[k] === b[k]);
}
