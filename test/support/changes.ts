// What actually changed on the API server, as opposed to what was asked of it: a watch from a
// known resourceVersion delivers one event per change that was stored (ADDED, MODIFIED, DELETED),
// and none for a request that failed or for an apply that changed nothing.
import { Watch, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';

export interface ChangeRecorder {
  /** The event types seen so far, per object name, in order; throws if the watch ended early. */
  byName(): Record<string, string[]>;
  /** Stops the watch. */
  stop(): void;
}

/**
 * Records every change under `path` (a collection URL, e.g. /api/v1/namespaces/ns/configmaps)
 * after `resourceVersion` (from a list of the same collection, so nothing before it is replayed).
 */
export async function recordChanges(
  kc: KubeConfig,
  path: string,
  resourceVersion: string,
  labelSelector?: string,
): Promise<ChangeRecorder> {
  const seen: Record<string, string[]> = {};
  let ended: string | undefined;
  let stopping = false;
  const watch = new Watch(kc);
  // client-node ends a watch after 30 s without an event (an inactivity timeout); a record must
  // last through quiet stretches (an operator still starting), so only stop() or the API server
  // ends it. The timeout has no public setter (client-node 1.x: a private field), hence the cast.
  (watch as unknown as { requestTimeoutMs: number }).requestTimeoutMs = 30 * 60_000;
  const controller = await watch.watch(
    path,
    { resourceVersion, allowWatchBookmarks: false, ...(labelSelector ? { labelSelector } : {}) },
    (type: string, object: KubernetesObject) => {
      const name = object.metadata?.name ?? '?';
      (seen[name] ??= []).push(type);
    },
    (err: unknown) => {
      if (!stopping) ended = err instanceof Error ? err.message : 'the watch ended';
    },
  );
  return {
    byName: () => {
      if (ended) throw new Error(`the watch on ${path} ended early (${ended}); its record is incomplete`);
      return structuredClone(seen);
    },
    stop: () => {
      stopping = true;
      controller.abort();
    },
  };
}
