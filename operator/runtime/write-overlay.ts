/**
 * Read-your-writes over an informer cache. After a write, the cache may lag behind the API
 * server; the object the server returned is kept as an overlay until the cache moves past the
 * resourceVersion the write started from, so a reconcile that runs in between does not write
 * the same thing twice.
 */
import type { KubernetesObject } from '@kubernetes/client-node';

interface Entry<T> {
  /** resourceVersion of the cached object when the write started (undefined: it did not exist). */
  before: string | undefined;
  object: T;
}

export class WriteOverlay<T extends KubernetesObject> {
  private readonly entries = new Map<string, Entry<T>>();

  /** Remembers what a write returned; `before` is the cached resourceVersion it started from. */
  remember(key: string, before: string | undefined, object: T): void {
    this.entries.set(key, { before, object });
  }

  /** The freshest view: the overlay while the cache still shows the pre-write version. */
  read(key: string, cached: T | undefined): T | undefined {
    const entry = this.entries.get(key);
    if (entry && cached?.metadata?.resourceVersion === entry.before) return entry.object;
    this.entries.delete(key);
    return cached;
  }

  /** Whether `resourceVersion` is the one our own last write produced (its watch echo). */
  isOwnEcho(key: string, resourceVersion: string | undefined): boolean {
    return this.entries.get(key)?.object.metadata?.resourceVersion === resourceVersion;
  }

  forget(key: string): void {
    this.entries.delete(key);
  }
}
