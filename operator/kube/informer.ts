/**
 * A list+watch cache that keeps running (the client-go reflector + informer pattern).
 *
 * It lists the collection (in pages), then watches from the list's resourceVersion with
 * bookmarks. A watch that the server ends (its timeout) resumes from the last resourceVersion
 * seen; a 410 Gone (the revision was compacted) relists and reports the differences as
 * add/update/delete; any other error (a refused list, a dropped connection) restarts after a
 * capped exponential backoff, resuming where it stopped. `stop()` ends the watch without an error.
 *
 * A watch that stays open but delivers nothing, not even a bookmark, for WATCH_IDLE_MS is taken
 * for dead (a partition that drops packets closes nothing, and the body timeout would end such a
 * stream only after the watch's timeoutSeconds plus a minute): it is aborted and resumed from the
 * last resourceVersion like any failed watch.
 * https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { Backoff, type BackoffOptions } from './backoff.ts';
import { systemClock, type Clock } from './clock.ts';
import { IdleDeadline } from './idle-deadline.ts';
import type { Logger } from '../log.ts';
import { ApiError, METADATA_ONLY, type KubeClient, type WatchEvent } from './client.ts';
import { apiStatusCode, describeApiError } from './errors.ts';

export type ObjectHandler<T> = (obj: T) => void;
/** A list answer as the server sends it (client-node's model calls `continue` `_continue`). */
interface ListPage<T> {
  items: T[] | null;
  metadata?: { resourceVersion?: string; continue?: string };
}
type Verb = 'add' | 'update' | 'delete';

export interface InformerOptions<T extends KubernetesObject> {
  /** A short name for logs and metrics, e.g. "agentcards". */
  name: string;
  client: KubeClient;
  /** The collection path, e.g. /api/v1/namespaces/ns/configmaps. */
  path: string;
  labelSelector?: string;
  /** e.g. metadata.name=x: with RBAC resourceNames, the only list and watch the API server allows. */
  fieldSelector?: string;
  log: Logger;
  backoff?: BackoffOptions;
  /** After this long without an error, the backoff starts again from its base. */
  healthyAfterMs?: number;
  /** Trims each object in place before it is cached and handed to handlers (keep only what is read). */
  trim?: (obj: T) => void;
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
  private readonly handlers: Record<Verb, Array<ObjectHandler<T>>> = { add: [], update: [], delete: [] };
  private cache = new Map<string, T>();
  private resourceVersion = '';
  private stopped = true;
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
    this.backoff = new Backoff(opts.backoff ?? { baseMs: 1_000, maxMs: 30_000 });
    this.healthyAfterMs = opts.healthyAfterMs ?? 60_000;
    this.clock = opts.clock ?? systemClock;
    this.watchIdleMs = opts.watchIdleMs ?? WATCH_IDLE_MS;
  }

  on(verb: Verb, handler: ObjectHandler<T>): void {
    this.handlers[verb].push(handler);
  }

  get(name: string, namespace?: string): T | undefined {
    return this.cache.get(`${namespace ?? ''}/${name}`);
  }

  list(namespace?: string): ReadonlyArray<T> {
    const all = [...this.cache.values()];
    return namespace === undefined ? all : all.filter((o) => o.metadata?.namespace === namespace);
  }

  /** True once the first list has been loaded and the watch started. */
  get synced(): boolean {
    return this.isSynced;
  }

  /** Starts listing and watching; resolves after the first list attempt (successful or not). */
  start(): Promise<void> {
    this.stopped = false;
    return this.attempt();
  }

  /** Resolves once synced (polling; an informer that cannot sync keeps retrying meanwhile). */
  async waitForSync(signal?: AbortSignal): Promise<void> {
    while (!this.isSynced) {
      if (signal?.aborted || this.stopped) throw new Error(`informer ${this.name} stopped before it synced`);
      await new Promise((r) => setTimeout(r, 50));
    }
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
      for (const item of page.items ?? []) fresh.set(keyOf(item), this.prepare(item));
      listVersion = page.metadata?.resourceVersion ?? '';
      next = page.metadata?.continue || undefined;
    } while (next);
    const previous = this.cache;
    this.cache = fresh;
    this.resourceVersion = listVersion;
    for (const [key, obj] of fresh) {
      const before = previous.get(key);
      if (!before) this.emit('add', obj);
      else if (before.metadata?.resourceVersion !== obj.metadata?.resourceVersion) this.emit('update', obj);
    }
    for (const [key, obj] of previous) if (!fresh.has(key)) this.emit('delete', obj);
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
    const obj = this.prepare(event.object);
    const key = keyOf(obj);
    if (event.type === 'DELETED') {
      this.cache.delete(key);
      this.emit('delete', obj);
    } else {
      const existed = this.cache.has(key);
      this.cache.set(key, obj);
      this.emit(existed ? 'update' : 'add', obj);
    }
    if (version) this.resourceVersion = version;
  }

  /**
   * managedFields (server-side apply bookkeeping) are often the larger half of an object and never
   * read here; the caller's trim drops more.
   */
  private prepare(obj: T): T {
    if (obj.metadata?.managedFields) delete obj.metadata.managedFields;
    this.opts.trim?.(obj);
    return obj;
  }

  private emit(verb: Verb, obj: T): void {
    for (const handler of this.handlers[verb]) {
      try {
        handler(obj);
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
