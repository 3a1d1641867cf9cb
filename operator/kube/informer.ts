/**
 * A list+watch cache (client-node's informer) that keeps running.
 *
 * client-node's ListWatch relists by itself on 410 Gone and reconnects after a client-side
 * timeout, but any other error (a failed list, a refused watch, a dropped connection) fires
 * `error` and stops it for good; and `stop()` fires `error` too. This wrapper restarts it with
 * capped exponential backoff, ignores the errors that follow its own stop(), and reports when
 * the first list has been loaded (`synced`, for /readyz).
 */
import {
  makeInformer,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { Backoff, type BackoffOptions } from '../controller/backoff.ts';
import type { Logger } from '../log.ts';
import { describeApiError } from './errors.ts';

export type ObjectHandler<T> = (obj: T) => void;

function dropManagedFields(obj: KubernetesObject): void {
  if (obj.metadata?.managedFields) delete obj.metadata.managedFields;
}

export interface InformerOptions<T extends KubernetesObject> {
  /** A short name for logs and metrics, e.g. "agentcards". */
  name: string;
  kubeConfig: KubeConfig;
  /** The collection path, e.g. /api/v1/namespaces/ns/configmaps. */
  path: string;
  /** Lists the collection with the same label selector as the watch. */
  list: () => Promise<KubernetesListObject<T>>;
  labelSelector?: string;
  log: Logger;
  backoff?: BackoffOptions;
  /** After this long without an error, the backoff starts again from its base. */
  healthyAfterMs?: number;
  /** Trims each object in place before it is cached and handed to handlers (keep only what is read). */
  trim?: (obj: T) => void;
}

export class ResilientInformer<T extends KubernetesObject> {
  readonly name: string;
  private readonly inner: ReturnType<typeof makeInformer<T>>;
  private readonly log: Logger;
  private readonly backoff: Backoff;
  private readonly healthyAfterMs: number;
  private stopped = true;
  private isSynced = false;
  private errors = 0;
  private lastStart = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(opts: InformerOptions<T>) {
    this.name = opts.name;
    this.log = opts.log;
    this.backoff = new Backoff(opts.backoff ?? { baseMs: 1_000, maxMs: 30_000 });
    this.healthyAfterMs = opts.healthyAfterMs ?? 60_000;
    this.inner = makeInformer<T>(opts.kubeConfig, opts.path, opts.list, opts.labelSelector);
    this.inner.on('error', (err: unknown) => this.onError(err));
    // Registered first, so the cached object is trimmed before any handler sees it: managedFields
    // (server-side apply bookkeeping) are often the larger half of an object and never read here.
    this.inner.on('add', dropManagedFields);
    this.inner.on('update', dropManagedFields);
    if (opts.trim) {
      this.inner.on('add', opts.trim);
      this.inner.on('update', opts.trim);
    }
  }

  on(verb: 'add' | 'update' | 'delete', handler: ObjectHandler<T>): void {
    this.inner.on(verb, handler);
  }

  get(name: string, namespace?: string): T | undefined {
    return this.inner.get(name, namespace);
  }

  list(namespace?: string): ReadonlyArray<T> {
    return this.inner.list(namespace);
  }

  /** True once the first list has been loaded and the watch started. */
  get synced(): boolean {
    return this.isSynced;
  }

  /** Starts listing and watching; resolves after the first attempt (successful or not). */
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

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    await this.inner.stop();
    await this.running?.catch(() => {});
  }

  private attempt(): Promise<void> {
    const errorsBefore = this.errors;
    this.lastStart = Date.now();
    const run = this.inner
      .start()
      .then(() => {
        if (!this.stopped && this.errors === errorsBefore) {
          if (!this.isSynced) this.log.info('informer synced', { informer: this.name });
          this.isSynced = true;
        }
      })
      .catch((err: unknown) => this.onError(err));
    this.running = run;
    return run;
  }

  private onError(err: unknown): void {
    // stop() aborts the watch request, which client-node reports as an error: not a failure.
    if (this.stopped) return;
    this.errors += 1;
    if (Date.now() - this.lastStart > this.healthyAfterMs) this.backoff.reset();
    const delay = this.backoff.next();
    this.log.warn('watch stopped; restarting', {
      informer: this.name,
      error: describeApiError(err),
      retryInMs: delay,
    });
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (!this.stopped) void this.attempt();
    }, delay);
    this.restartTimer.unref();
  }
}
