/**
 * The manager's informer cache, as controller-runtime's: one list+watch per collection (resource,
 * scope, selectors) for the whole process, however many controllers read it. A controller asks
 * for a collection (`informer()`) while it is built, adds handlers through the builder
 * (builder.ts) and reads the cache in its reconcile; it never starts, stops or retries a watch.
 *
 * - **Scopes**: a namespaced collection is watched once per watched namespace (`--namespace`), or
 *   once across all namespaces when none is given; a cluster-scoped one once. A read names the
 *   object's namespace and is answered from the scope that holds it.
 * - **Trims**: what a cache keeps of each object is the collection's `trim` (kube/informer.ts
 *   applies it before caching). Two users of one collection share one copy, so they must ask for
 *   the same trim: a second, different trim is a programming error, thrown at build time.
 * - **Access at start**: one LIST of at most one object per collection (access.ts) before any
 *   watch starts, so a missing RBAC rule or CRD ends the process with a line that names it.
 * - **Collections that may arrive later** (`optional`: the catalog CRDs, cert-manager's
 *   Certificates): when API discovery does not serve the resource, the cache says so once, keeps
 *   the collection empty and synced, and looks again every `lookAgainMs`; once served it checks
 *   access, starts the watch, and tells the controllers that read it (`whenAvailable`), which
 *   queue their objects again. A collection watched only alongside another (`with`) starts with it.
 * - **Outages**: when the API server answers again (kube/health.ts), watches waiting out their
 *   backoff resume at once.
 *
 * The cache's runnable runs on every replica (`always`): a standby keeps warm caches, so a
 * failover does not wait for thousands of objects to be listed again.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { collectionPath, readOptional } from '../kube/api.ts';
import type { KubeClient } from '../kube/client.ts';
import { systemClock, type Clock } from '../kube/clock.ts';
import { describeApiError } from '../kube/errors.ts';
import { ResilientInformer, type EventHandler, type IndexFunc } from '../kube/informer.ts';
import type { Logger } from '../log.ts';
import { whenAborted } from './abort.ts';
import { checkListAccess, type ListSource } from './access.ts';
import type { Runnable } from './manager.ts';
import type { QueueGate } from './workqueue.ts';

/** How often a collection whose resource is not served is looked for again. */
export const LOOK_AGAIN_MS = 30_000;

export interface Collection<T extends KubernetesObject> {
  /** For logs, metrics and messages: "agentcards", "secret-metadata". */
  name: string;
  /** The API group's path: `/api/v1` or `/apis/<group>/<version>`. */
  api: string;
  plural: string;
  namespaced: boolean;
  labelSelector?: string;
  /** With RBAC resourceNames, `metadata.name=<name>` is the only list the API server allows. */
  fieldSelector?: string;
  /** PartialObjectMetadata only. */
  metadataOnly?: boolean;
  /** What is kept of each object (in place); one per collection, shared by its users. */
  trim?: (obj: T) => void;
  indexers?: Record<string, IndexFunc<T>>;
  /** The resource may not be served (a CRD installed later): see the module comment. */
  optional?: boolean;
  /** For the messages about an optional collection: its kind ("ClusterAgentCatalog"). */
  kind?: string;
  /** Watched only while this optional collection is (it has no reader without it). */
  with?: SharedInformer<KubernetesObject>;
}

/** One collection as every controller reads it, across its scopes. */
export class SharedInformer<T extends KubernetesObject> {
  readonly name: string;
  /** Scope ('' = every namespace, or cluster-scoped) → its informer. */
  private readonly scopes: ReadonlyMap<string, ResilientInformer<T>>;
  readonly collection: Collection<T>;
  /** Whether the resource is served (always, unless optional and not found). */
  private served: boolean;
  /** Watched only while this one is (`Collection.with`); a user that needs it always clears it. */
  private alongside: SharedInformer<KubernetesObject> | undefined;
  /** Set once the cache starts: no user may join after. */
  started = false;
  private readonly availableListeners: Array<() => void> = [];
  /** Resolves once the cache knows whether the resource is served (at once when not optional). */
  private readonly decided: Promise<void>;
  private decide: () => void = () => {};

  constructor(collection: Collection<T>, scopes: ReadonlyMap<string, ResilientInformer<T>>) {
    this.name = collection.name;
    this.collection = collection;
    this.scopes = scopes;
    this.served = !collection.optional;
    this.alongside = collection.with;
    this.decided = collection.optional
      ? new Promise<void>((resolve) => (this.decide = resolve))
      : Promise.resolve();
  }

  /** Resolves once it is known whether the collection is served (and the one it goes with). */
  async whenDecided(): Promise<void> {
    await this.decided;
    await this.alongside?.whenDecided();
  }

  /** Whether the resource is served and watched (a not-yet-served optional one reads as empty). */
  get available(): boolean {
    return this.served && (this.alongside?.available ?? true);
  }

  /** Called once when the collection becomes available after the start (a CRD installed later). */
  whenAvailable(listener: () => void): void {
    this.availableListeners.push(listener);
  }

  /** @internal Another user needs it whether or not `with` is watched. */
  needAlways(): void {
    this.alongside = undefined;
  }

  /** @internal The cache looked at discovery: served or not. */
  markServed(served: boolean): void {
    this.served = served;
    this.decide();
  }

  /** @internal The cache started its watch after the start: its readers queue their objects again. */
  announce(): void {
    for (const l of this.availableListeners) l();
  }

  /** The informers, one per scope. */
  informers(): ResilientInformer<T>[] {
    return [...this.scopes.values()];
  }

  private scopeOf(namespace: string | undefined): ResilientInformer<T> | undefined {
    if (!this.collection.namespaced) return this.scopes.get('');
    return this.scopes.get(namespace ?? '') ?? this.scopes.get('');
  }

  /** Whether objects of this namespace are watched (a namespace outside `--namespace` is not). */
  watches(namespace: string): boolean {
    return this.scopeOf(namespace) !== undefined;
  }

  get(name: string, namespace?: string): T | undefined {
    if (!this.available) return undefined;
    return this.scopeOf(namespace)?.get(name, this.collection.namespaced ? namespace : undefined);
  }

  /** Every cached object, or those of one namespace. */
  list(namespace?: string): ReadonlyArray<T> {
    if (!this.available) return [];
    if (namespace !== undefined && this.collection.namespaced)
      return this.scopeOf(namespace)?.list(namespace) ?? [];
    const all = this.informers();
    return all.length === 1 ? all[0]!.list() : all.flatMap((i) => i.list());
  }

  /** Objects filed under `value` in the index `indexName` (an indexer of the collection). */
  byIndex(indexName: string, value: string): T[] {
    if (!this.available) return [];
    return this.informers().flatMap((i) => i.byIndex(indexName, value));
  }

  addEventHandler(handler: EventHandler<T>): void {
    for (const informer of this.scopes.values()) informer.addEventHandler(handler);
  }

  /** Loaded (or not served: empty); an optional collection not served yet does not hold anyone up. */
  get synced(): boolean {
    return !this.available || this.informers().every((i) => i.synced);
  }

  /** Names of the scopes' informers not loaded yet (for readiness). */
  unsynced(): string[] {
    if (!this.available) return [];
    return this.informers()
      .filter((i) => !i.synced)
      .map((i) => i.name);
  }

  /** Resolves once loaded; for a collection that is not served (yet), once that is known. */
  async waitForSync(signal: AbortSignal): Promise<void> {
    await Promise.race([this.whenDecided(), whenAborted(signal)]);
    if (signal.aborted) throw new Error(`waiting for ${this.name} stopped`);
    if (!this.available) return;
    await Promise.all(this.informers().map((i) => i.waitForSync(signal)));
  }
}

export interface CacheOptions {
  client: KubeClient;
  log: Logger;
  /** Namespaces to watch; empty: all namespaces. */
  namespaces: readonly string[];
  gate?: QueueGate;
  clock?: Clock;
  /** Default LOOK_AGAIN_MS. */
  lookAgainMs?: number;
}

export class Cache {
  private readonly opts: CacheOptions;
  private readonly clock: Clock;
  private readonly collections = new Map<string, SharedInformer<KubernetesObject>>();
  private timer: NodeJS.Timeout | undefined;

  constructor(opts: CacheOptions) {
    this.opts = opts;
    this.clock = opts.clock ?? systemClock;
    opts.gate?.onRecover(() => {
      for (const shared of this.collections.values()) for (const i of shared.informers()) i.retryNow();
    });
  }

  /** The namespaces watched ('' alone: all of them). */
  get scopes(): readonly string[] {
    return this.opts.namespaces.length > 0 ? this.opts.namespaces : [''];
  }

  /** Whether every namespace is watched. */
  get allNamespaces(): boolean {
    return this.opts.namespaces.length === 0;
  }

  /** The shared informer of a collection: created by its first user, the same one for the rest. */
  informer<T extends KubernetesObject>(collection: Collection<T>): SharedInformer<T> {
    const id = [
      collection.api,
      collection.plural,
      collection.labelSelector ?? '',
      collection.fieldSelector ?? '',
      collection.metadataOnly ? 'metadata' : 'objects',
    ].join('|');
    const existing = this.collections.get(id) as SharedInformer<T> | undefined;
    if (existing) {
      if (!collection.with) existing.needAlways();
      if (existing.collection.trim !== collection.trim)
        throw new Error(`collection ${collection.name} is asked for with two different trims`);
      if (existing.started) throw new Error(`collection ${collection.name} is asked for after the start`);
      return existing;
    }
    const scopes = new Map<string, ResilientInformer<T>>();
    for (const ns of collection.namespaced ? this.scopes : ['']) {
      scopes.set(
        ns,
        new ResilientInformer<T>({
          // A cluster-scoped collection is one informer, named as the collection.
          name: collection.namespaced ? `${collection.name}/${ns || '*'}` : collection.name,
          client: this.opts.client,
          path: collectionPath(collection.api, collection.plural, ns || undefined),
          labelSelector: collection.labelSelector,
          fieldSelector: collection.fieldSelector,
          metadataOnly: collection.metadataOnly,
          trim: collection.trim,
          indexers: collection.indexers,
          log: this.opts.log,
          clock: this.clock,
        }),
      );
    }
    const shared = new SharedInformer<T>(collection, scopes);
    this.collections.set(id, shared as unknown as SharedInformer<KubernetesObject>);
    return shared;
  }

  /** Informers not loaded yet, for readiness. */
  unsynced(): string[] {
    return [...this.collections.values()].flatMap((c) => c.unsynced());
  }

  /** The cache's runnable, on every replica. */
  runnable(): Runnable {
    return {
      name: 'caches',
      mode: 'always',
      start: (signal) => this.start(signal),
      stop: () => this.stop(),
    };
  }

  private async start(signal: AbortSignal): Promise<void> {
    const all = [...this.collections.values()];
    for (const c of all) c.started = true;
    const optional = all.filter((c) => c.collection.optional);
    if (optional.length) {
      const served = await this.servedResources(optional, signal);
      for (const c of optional) c.markServed(served.has(resourceId(c.collection)));
    }
    const pending = all.filter((c) => !c.available);
    for (const c of pending.filter((p) => !p.collection.optional))
      this.opts.log.info(
        `no controller needs the ${c.name} while the collection they go with is not served; not watching them`,
        {
          collection: c.name,
        },
      );
    for (const c of pending.filter((p) => p.collection.optional))
      this.opts.log.warn(
        `the ${c.collection.kind ?? c.name} CRD is not installed; looking for it again every ${this.lookAgainMs / 1000} s`,
        { collection: c.name },
      );
    await this.startCollections(
      all.filter((c) => c.available),
      signal,
    );
    if (pending.length) this.lookAgain(pending, signal);
  }

  private get lookAgainMs(): number {
    return this.opts.lookAgainMs ?? LOOK_AGAIN_MS;
  }

  /** Access check, then the watches (resolves once started, not synced). */
  private async startCollections(
    collections: ReadonlyArray<SharedInformer<KubernetesObject>>,
    signal: AbortSignal,
  ): Promise<void> {
    const sources: ListSource[] = collections.flatMap((c) =>
      [...(c.collection.namespaced ? this.scopes : [''])].map((ns) => ({
        what: describeCollection(c.collection, ns),
        path: collectionPath(c.collection.api, c.collection.plural, ns || undefined),
        labelSelector: c.collection.labelSelector,
        fieldSelector: c.collection.fieldSelector,
      })),
    );
    await checkListAccess(this.opts.client, sources, { signal, log: this.opts.log, clock: this.clock });
    await Promise.all(collections.flatMap((c) => c.informers().map((i) => i.start())));
  }

  /**
   * Looks for the pending collections' resources every lookAgainMs; starts each collection once
   * it is available (its resource served, and the one it is watched alongside), then tells its
   * readers.
   */
  private lookAgain(pending: Array<SharedInformer<KubernetesObject>>, signal: AbortSignal): void {
    const tick = async () => {
      const optional = pending.filter((c) => c.collection.optional);
      const served = await this.servedResources(optional, signal);
      for (const c of optional) if (served.has(resourceId(c.collection))) c.markServed(true);
      const now = pending.filter((c) => c.available);
      if (now.length) {
        await this.startCollections(now, signal);
        for (const c of now) {
          this.opts.log.info(`the ${c.collection.kind ?? c.name} CRD is installed now; watching`, {
            collection: c.name,
          });
          c.announce();
        }
      }
      pending = pending.filter((c) => !c.available);
      if (pending.length && !signal.aborted) schedule();
    };
    const schedule = () => {
      this.timer = setTimeout(
        () =>
          void tick().catch((err: unknown) => {
            if (signal.aborted) return;
            this.opts.log.warn('looking for a collection failed; looking again', {
              error: describeApiError(err),
            });
            schedule();
          }),
        this.lookAgainMs,
      );
      this.timer.unref?.();
    };
    schedule();
    void whenAborted(signal).then(() => clearTimeout(this.timer));
  }

  /** `group/version/plural` of every resource the groups of these collections serve. */
  private async servedResources(
    collections: ReadonlyArray<SharedInformer<KubernetesObject>>,
    signal: AbortSignal,
  ): Promise<Set<string>> {
    const apis = new Set(collections.map((c) => c.collection.api));
    const out = new Set<string>();
    await Promise.all(
      [...apis].map(async (api) => {
        try {
          const list = await readOptional<{ resources?: Array<{ name?: string }> }>(
            this.opts.client,
            api,
            signal,
          );
          for (const r of list?.resources ?? []) out.add(`${api}|${r.name ?? ''}`);
        } catch (err) {
          if (signal.aborted) throw err;
          // Discovery failing is no reason to give up: take it as served; the access check and
          // the informers retry with backoff.
          this.opts.log.warn('API discovery failed; assuming the resources are served', {
            api,
            error: describeApiError(err),
          });
          for (const c of collections) if (c.collection.api === api) out.add(resourceId(c.collection));
        }
      }),
    );
    return out;
  }

  private async stop(): Promise<void> {
    clearTimeout(this.timer);
    await Promise.all([...this.collections.values()].flatMap((c) => c.informers().map((i) => i.stop())));
  }
}

/** For the access check's message: "agentcards in namespace shop". */
function describeCollection(c: Collection<KubernetesObject>, scope: string): string {
  const where = !c.namespaced ? 'the cluster' : scope ? `namespace ${scope}` : 'every namespace';
  const selected = [c.labelSelector, c.fieldSelector].filter(Boolean).join(',');
  return `${c.plural}${selected ? ` (${selected})` : ''} in ${where}`;
}

function resourceId(c: Collection<KubernetesObject>): string {
  return `${c.api}|${c.plural}`;
}
