/**
 * A list+watch cache that keeps running (the client-go reflector + informer pattern).
 *
 * It lists the collection (in pages), then watches from the list's resourceVersion with
 * bookmarks. A watch that the server ends (its timeout) resumes from the last resourceVersion
 * seen; a 410 Gone (the revision was compacted) relists and reports the differences as
 * add/update/delete; any other error (a refused list, a dropped connection) restarts after a
 * capped exponential backoff, resuming where it stopped (after a 500 from the watch, relisting).
 * `stop()` ends the watch without an error.
 *
 * A watch that stays open but delivers nothing, not even a bookmark, for WATCH_IDLE_MS is taken
 * for dead (a partition that drops packets closes nothing, and the body timeout would end such a
 * stream only after the watch's timeoutSeconds plus a minute): it is aborted and resumed from the
 * last resourceVersion like any failed watch.
 * https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes
 *
 * Handlers get what client-go's ResourceEventHandler gets: an update hands over the cached object
 * it replaces and the new one, a delete the last object known (the watch's DELETED object, or the
 * cached one when a relist finds it gone), so a controller compares old and new instead of keeping
 * its own copy of old state. Indexes (client-go's Indexers) answer "which cached objects have this
 * owner, label, namespace" from a map kept up to date on every change, without scanning or
 * copying the cache; the namespace index is always there (list(namespace) uses it). A new version
 * takes the parts of the cached one it replaces that did not change (share.ts): one copy of each,
 * and an unchanged part is the same object in both.
 *
 * Restarts after an error wait a capped exponential backoff with equal jitter by default, so the
 * dozen informers of a process that all failed when the API server went away do not all come
 * back in the same instant when it returns.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { Backoff, type BackoffOptions } from './backoff.ts';
import { shareWithPrevious } from './share.ts';
import { systemClock, type Clock } from './clock.ts';
import { IdleDeadline } from './idle-deadline.ts';
import type { Logger } from '../log.ts';
import { ApiError, METADATA_ONLY, type KubeClient, type WatchEvent } from './client.ts';
import { apiStatusCode, describeApiError } from './errors.ts';

/** An add or delete handler; an update handler registered with on() gets (new, old). */
export type ObjectHandler<T> = (obj: T, old?: T) => void;

/** client-go's ResourceEventHandlerFuncs: any of the three, update with (old, new). */
export interface EventHandler<T> {
  add?: (obj: T) => void;
  update?: (oldObj: T, newObj: T) => void;
  /** The last state known of the object. */
  delete?: (obj: T) => void;
}

/** The values an object is filed under in one index (client-go's IndexFunc); none: not filed. */
export type IndexFunc<T> = (obj: T) => readonly string[];

/** The index every informer keeps: by metadata.namespace ('' for cluster-scoped objects). */
export const NAMESPACE_INDEX = 'namespace';

/** An index by controller owner: `kind/name` of the ownerReference with controller=true. */
export function byControllerOwner(obj: KubernetesObject): string[] {
  const owner = obj.metadata?.ownerReferences?.find((r) => r.controller);
  return owner ? [`${owner.kind}/${owner.name}`] : [];
}

/** An index by the value of one label (objects without it are not filed). */
export function byLabel(label: string): IndexFunc<KubernetesObject> {
  return (obj) => {
    const value = obj.metadata?.labels?.[label];
    return value === undefined ? [] : [value];
  };
}
/** A list answer as the server sends it (client-node's model calls `continue` `_continue`). */
interface ListPage<T> {
  items: T[] | null;
  metadata?: { resourceVersion?: string; continue?: string };
}
type Verb = 'add' | 'update' | 'delete';

export interface InformerOptions<T extends KubernetesObject> {
  /** Indexes by name, kept from the start (addIndexers adds more before start). */
  indexers?: Record<string, IndexFunc<T>>;
  /** A short name for logs and metrics, e.g. "agentcards". */
  name: string;
  client: KubeClient;
  /** The collection path, e.g. /api/v1/namespaces/ns/configmaps. */
  path: string;
  labelSelector?: string;
  /** e.g. metadata.name=x: with RBAC resourceNames, the only list and watch the API server allows. */
  fieldSelector?: string;
  log: Logger;
  /** Default: 1 s doubling to 30 s, equal jitter. */
  backoff?: BackoffOptions;
  /** After this long without an error, the backoff starts again from its base. */
  healthyAfterMs?: number;
  /** Trims each object in place before it is cached and handed to handlers (keep only what is read). */
  trim?: (obj: T) => void;
  /**
   * Hands the trim each object's managedFields instead of dropping them first: for a trim that
   * reads them (the central card server's Last-Modified is their latest time) and keeps only that.
   */
  keepManagedFields?: boolean;
  /** Objects per list page. */
  pageSize?: number;
  /** Time for the restart backoff (a manual clock in tests). */
  clock?: Clock;
  /** Lists and watches PartialObjectMetadata only (METADATA_ONLY): a cache of metadata. */
  metadataOnly?: boolean;
  /** How long a watch may deliver nothing (no event, no bookmark) before it is restarted. */
  watchIdleMs?: number;
}

/**
 * The API server's watch cache sends every watch that asked for bookmarks (allowWatchBookmarks)
 * a BOOKMARK once a minute, whether or not anything changed: measured on kube-apiserver 1.36 with
 * its defaults, idle watches got them 60 s apart, the first one 60 or 120 s after the watch
 * opened. Three intervals of silence (one more than the longest gap seen) mean the stream is dead,
 * not quiet. A resource served without the watch cache sends no bookmarks: a quiet watch of it is
 * restarted every WATCH_IDLE_MS, one request, from its last resourceVersion.
 * https://kubernetes.io/docs/reference/using-api/api-concepts/#watch-bookmarks
 */
export const WATCH_IDLE_MS = 180_000;

/** The server ends each watch after 5 to 10 minutes (client-go's spread), then it resumes. */
function watchTimeoutSeconds(): number {
  return 300 + Math.floor(Math.random() * 300);
}

const keyOf = (obj: KubernetesObject) => `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;

/** Thrown inside a watch to relist (410 Gone, in the stream or as the answer). */
class Relist extends Error {}

export class ResilientInformer<T extends KubernetesObject> {
  readonly name: string;
  private readonly opts: InformerOptions<T>;
  private readonly log: Logger;
  private readonly backoff: Backoff;
  private readonly healthyAfterMs: number;
  private readonly watchIdleMs: number;
  private readonly handlers: Array<EventHandler<T>> = [];
  private cache = new Map<string, T>();
  /** index name -> its function. */
  private readonly indexFns = new Map<string, IndexFunc<T>>();
  /** index name -> value -> keys of the cached objects filed under it. */
  private indexes = new Map<string, Map<string, Set<string>>>();
  private syncWaiters: Array<{ resolve: () => void; reject: (err: Error) => void }> = [];
  private resourceVersion = '';
  private stopped = true;
  /** stop() was called (and start() not since): a wait for the sync would never end. */
  private stopCalled = false;
  private isSynced = false;
  private lastStart = 0;
  private cancelRestart: (() => void) | undefined;
  private readonly clock: Clock;
  private abort: AbortController | undefined;
  private running: Promise<void> | undefined;

  constructor(opts: InformerOptions<T>) {
    this.name = opts.name;
    this.opts = opts;
    this.log = opts.log;
    this.backoff = new Backoff(opts.backoff ?? { baseMs: 1_000, maxMs: 30_000, jitter: 'equal' });
    this.healthyAfterMs = opts.healthyAfterMs ?? 60_000;
    this.clock = opts.clock ?? systemClock;
    this.watchIdleMs = opts.watchIdleMs ?? WATCH_IDLE_MS;
    this.addIndexers({
      [NAMESPACE_INDEX]: (obj) => [obj.metadata?.namespace ?? ''],
      ...opts.indexers,
    });
  }

  /** The handler of one verb; an update handler gets (new, old). */
  on(verb: Verb, handler: ObjectHandler<T>): void {
    if (verb === 'update') this.handlers.push({ update: (old, obj) => handler(obj, old) });
    else this.handlers.push({ [verb]: handler });
  }

  /** Adds handlers in client-go's shape: update gets (old, new), delete the last known object. */
  addEventHandler(handler: EventHandler<T>): void {
    this.handlers.push(handler);
  }

  /**
   * Adds indexes (client-go's AddIndexers); objects already cached are filed at once. An index
   * name may be given once.
   */
  addIndexers(indexers: Record<string, IndexFunc<T>>): void {
    for (const [name, fn] of Object.entries(indexers)) {
      if (this.indexFns.has(name))
        throw new Error(`informer ${this.name} already has an index named ${name}`);
      this.indexFns.set(name, fn);
      const index = new Map<string, Set<string>>();
      this.indexes.set(name, index);
      for (const [key, obj] of this.cache) fileUnder(index, fn(obj), key);
    }
  }

  /**
   * The cached objects filed under `value` in the index `indexName` (client-go's ByIndex): found
   * through the index, never by scanning the cache.
   */
  byIndex(indexName: string, value: string): T[] {
    const index = this.indexes.get(indexName);
    if (!index) throw new Error(`informer ${this.name} has no index named ${indexName}`);
    const out: T[] = [];
    for (const key of index.get(value) ?? []) {
      const obj = this.cache.get(key);
      if (obj) out.push(obj);
    }
    return out;
  }

  /** The values of an index that have objects filed under them (client-go's ListIndexFuncValues). */
  indexValues(indexName: string): string[] {
    const index = this.indexes.get(indexName);
    if (!index) throw new Error(`informer ${this.name} has no index named ${indexName}`);
    return [...index.keys()];
  }

  get(name: string, namespace?: string): T | undefined {
    return this.cache.get(`${namespace ?? ''}/${name}`);
  }

  /** Every cached object, or those of one namespace (through the namespace index). */
  list(namespace?: string): ReadonlyArray<T> {
    return namespace === undefined ? [...this.cache.values()] : this.byIndex(NAMESPACE_INDEX, namespace);
  }

  /** True once the first list has been loaded and the watch started. */
  get synced(): boolean {
    return this.isSynced;
  }

  /** Starts listing and watching; resolves after the first list attempt (successful or not). */
  start(): Promise<void> {
    this.stopped = false;
    this.stopCalled = false;
    return this.attempt();
  }

  /**
   * Resolves once synced; rejects when `signal` aborts or the informer stops first. It waits for
   * the sync itself, not on a timer: an informer that cannot sync keeps retrying on its clock
   * meanwhile, and a test on a manual clock sees the wait end in the step that synced it.
   */
  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.isSynced) return Promise.resolve();
    const stopped = () => new Error(`informer ${this.name} stopped before it synced`);
    // Not started yet is not stopped: a reconciler may wait for caches that another runnable
    // starts a moment later (runtime/manager.ts starts them side by side).
    if (signal?.aborted || this.stopCalled) return Promise.reject(stopped());
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.syncWaiters = this.syncWaiters.filter((w) => w !== waiter);
        reject(stopped());
      };
      const waiter = {
        resolve: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        reject: (err: Error) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      this.syncWaiters.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Restarts at once if waiting out a backoff after an error (the caller knows the API server
   * answers again); otherwise does nothing.
   */
  retryNow(): void {
    if (!this.cancelRestart || this.stopped) return;
    this.cancelRestart();
    this.cancelRestart = undefined;
    void this.attempt();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stopCalled = true;
    const waiters = this.syncWaiters;
    this.syncWaiters = [];
    for (const w of waiters) w.reject(new Error(`informer ${this.name} stopped before it synced`));
    this.cancelRestart?.();
    this.cancelRestart = undefined;
    this.abort?.abort();
    await this.running?.catch(() => {});
  }

  /** One run: list if needed (awaited), then watch in the background until stopped or failed. */
  private async attempt(): Promise<void> {
    this.lastStart = this.clock.now();
    const abort = (this.abort = new AbortController());
    try {
      if (!this.resourceVersion) await this.relist(abort.signal);
    } catch (err) {
      this.onError(err);
      return;
    }
    if (this.stopped) return;
    if (!this.isSynced) this.log.info('informer synced', { informer: this.name });
    this.isSynced = true;
    const waiters = this.syncWaiters;
    this.syncWaiters = [];
    for (const w of waiters) w.resolve();
    this.running = this.watchLoop(abort.signal).catch((err: unknown) => {
      if (!abort.signal.aborted) this.onError(err);
    });
  }

  private async watchLoop(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const opened = this.clock.now();
      let events = 0;
      // Started before the request: an answer whose headers never come is silence too.
      const idle = new IdleDeadline(this.clock, this.watchIdleMs);
      try {
        await this.opts.client.watch<T>(
          this.opts.path,
          {
            resourceVersion: this.resourceVersion,
            allowWatchBookmarks: true,
            labelSelector: this.opts.labelSelector,
            fieldSelector: this.opts.fieldSelector,
            timeoutSeconds: watchTimeoutSeconds(),
          },
          (event) => {
            idle.touch();
            events += 1;
            this.onEvent(event);
          },
          AbortSignal.any([signal, idle.signal]),
          this.opts.metadataOnly ? METADATA_ONLY.watch : undefined,
        );
        // A server that closes every watch at once would otherwise be asked again in a tight loop.
        if (events === 0 && this.clock.now() - opened < 1_000 && !signal.aborted)
          throw new Error('the API server closed the watch at once');
      } catch (err) {
        if (idle.expired && !signal.aborted)
          throw new Error(
            `the watch delivered nothing (no event, no bookmark) for ${this.watchIdleMs / 1000} s; resuming it`,
            { cause: err },
          );
        // 500: the server answers but cannot serve a watch from this revision. Measured on
        // kube-apiserver 1.36 for a resource served without the watch cache, resumed from a
        // revision etcd had compacted: "etcd event received with PrevKv=nil" (500), not 410, on
        // every try. Resuming would ask the same thing forever; the restart relists instead, as
        // client-go's reflector does after every failed watch.
        if (apiStatusCode(err) === 500) this.resourceVersion = '';
        if (!(err instanceof Relist) && apiStatusCode(err) !== 410) throw err;
        this.log.info('watch expired (410 Gone); relisting', { informer: this.name });
        await this.relist(signal);
      } finally {
        idle.dispose();
      }
    }
  }

  /** Loads the whole collection and reports what changed since the cache was last filled. */
  private async relist(signal: AbortSignal): Promise<void> {
    const fresh = new Map<string, T>();
    let listVersion: string;
    let next: string | undefined;
    do {
      const page = await this.opts.client.request<ListPage<T>>('GET', this.opts.path, {
        query: {
          labelSelector: this.opts.labelSelector,
          fieldSelector: this.opts.fieldSelector,
          limit: this.opts.pageSize ?? 500,
          continue: next,
        },
        signal,
        accept: this.opts.metadataOnly ? METADATA_ONLY.list : undefined,
      });
      // An empty PartialObjectMetadataList has "items": null.
      for (const item of page.items ?? []) {
        const key = keyOf(item);
        fresh.set(key, shareWithPrevious(this.cache.get(key), this.prepare(item)));
      }
      listVersion = page.metadata?.resourceVersion ?? '';
      next = page.metadata?.continue || undefined;
    } while (next);
    const previous = this.cache;
    this.cache = fresh;
    this.reindex();
    this.resourceVersion = listVersion;
    for (const [key, obj] of fresh) {
      const before = previous.get(key);
      if (!before) this.emit('add', obj);
      else if (before.metadata?.resourceVersion !== obj.metadata?.resourceVersion)
        this.emit('update', obj, before);
    }
    // The last state known of an object that went while the watch was down.
    for (const [key, obj] of previous) if (!fresh.has(key)) this.emit('delete', obj);
  }

  /** Rebuilds every index from the cache (after a relist replaced it). */
  private reindex(): void {
    for (const [name, fn] of this.indexFns) {
      const index = new Map<string, Set<string>>();
      for (const [key, obj] of this.cache) fileUnder(index, fn(obj), key);
      this.indexes.set(name, index);
    }
  }

  /** Moves one key in every index from what `before` was filed under to what `after` is. */
  private updateIndexes(key: string, before: T | undefined, after: T | undefined): void {
    for (const [name, fn] of this.indexFns) {
      const index = this.indexes.get(name)!;
      const old = before ? fn(before) : [];
      const now = after ? fn(after) : [];
      for (const value of old) {
        if (now.includes(value)) continue;
        const keys = index.get(value);
        keys?.delete(key);
        if (keys?.size === 0) index.delete(value);
      }
      fileUnder(index, now, key);
    }
  }

  private onEvent(event: WatchEvent<T>): void {
    if (event.type === 'ERROR') {
      const status = event.object as unknown as { code?: number; message?: string };
      if (status.code === 410) throw new Relist();
      throw new ApiError(status.code ?? 500, status);
    }
    const version = event.object.metadata?.resourceVersion;
    if (event.type === 'BOOKMARK') {
      if (version) this.resourceVersion = version;
      return;
    }
    const key = keyOf(event.object);
    const before = this.cache.get(key);
    if (event.type === 'DELETED') {
      this.cache.delete(key);
      this.updateIndexes(key, before, undefined);
      this.emit('delete', this.prepare(event.object));
    } else {
      // Only what stays cached is worth sharing with the version it replaces.
      const obj = shareWithPrevious(before, this.prepare(event.object));
      this.cache.set(key, obj);
      this.updateIndexes(key, before, obj);
      if (before) this.emit('update', obj, before);
      else this.emit('add', obj);
    }
    if (version) this.resourceVersion = version;
  }

  /**
   * managedFields (server-side apply bookkeeping) are often the larger half of an object and no
   * controller reads them (a trim that does asks for them: keepManagedFields); the caller's trim
   * drops more.
   *
   * The metadata is replaced without them, not pruned with delete: V8 turns an object parsed by
   * JSON.parse into a slower and larger dictionary object on any delete, its last property's
   * included. A parsed AgentCard as the bench writes it, side by side in one run: 3.93 KiB of heap
   * cached with the delete, 3.56 KiB without (docs/scaling.md, "Where the memory goes").
   */
  private prepare(obj: T): T {
    if (obj.metadata?.managedFields && !this.opts.keepManagedFields) {
      const { managedFields: _dropped, ...metadata } = obj.metadata;
      obj.metadata = metadata;
    }
    this.opts.trim?.(obj);
    return obj;
  }

  private emit(verb: Verb, obj: T, old?: T): void {
    for (const handler of this.handlers) {
      try {
        if (verb === 'update') handler.update?.(old!, obj);
        else handler[verb]?.(obj);
      } catch (err) {
        this.log.error('informer handler failed', { informer: this.name, error: describeApiError(err) });
      }
    }
  }

  private onError(err: unknown): void {
    if (this.stopped) return;
    if (this.clock.now() - this.lastStart > this.healthyAfterMs) this.backoff.reset();
    const delay = this.backoff.next();
    this.log.warn('watch stopped; restarting', {
      informer: this.name,
      error: describeApiError(err),
      retryInMs: delay,
    });
    this.cancelRestart?.();
    this.cancelRestart = this.clock.setTimer(delay, () => {
      this.cancelRestart = undefined;
      if (!this.stopped) void this.attempt();
    });
  }
}

function fileUnder(index: Map<string, Set<string>>, values: readonly string[], key: string): void {
  for (const value of values) {
    let keys = index.get(value);
    if (!keys) index.set(value, (keys = new Set()));
    keys.add(key);
  }
}
