/**
 * The operator's one cache of Namespaces (name and labels only), shared by the controllers that
 * read namespace labels: the catalog controller (a ClusterAgentCatalog's namespaceSelector) and the
 * adoption controller (--adopt-namespace-label). As controller-runtime's cache: one watch and one
 * cache per kind per manager; each controller adds its own handlers and waits for the sync, none
 * watches Namespaces itself.
 *
 * Its runnable (`always`: standbys keep it warm, as the AgentCard controller's caches) checks
 * access once and starts the watch once every user has said, as its own caches start, whether it
 * needs it: the catalog controller does not when the ClusterAgentCatalog CRD is not installed, and
 * with no other user nothing watches Namespaces then (nor needs to list them).
 */
import type { V1Namespace } from '@kubernetes/client-node';
import type { KubeClient } from '../kube/client.ts';
import type { Clock } from '../kube/clock.ts';
import { ResilientInformer } from '../kube/informer.ts';
import type { Logger } from '../log.ts';
import { whenAborted } from './abort.ts';
import { checkListAccess } from './access.ts';
import type { Runnable } from './manager.ts';
import type { QueueGate } from './workqueue.ts';

export const NAMESPACES_PATH = '/api/v1/namespaces';

export interface NamespaceCacheOptions {
  client: KubeClient;
  log: Logger;
  /** The API server's health: watches waiting out their backoff resume when it answers again. */
  gate?: QueueGate;
  clock?: Clock;
}

/**
 * Keeps a Namespace's name, labels and version (in place): only the labels are read (selectors).
 * The metadata is replaced, not pruned with delete (V8's dictionary objects are larger).
 */
export function trimNamespace(ns: V1Namespace): void {
  ns.metadata = {
    name: ns.metadata?.name,
    labels: ns.metadata?.labels,
    resourceVersion: ns.metadata?.resourceVersion,
  };
  delete ns.spec;
  delete ns.status;
}

export class NamespaceCache {
  readonly informer: ResilientInformer<V1Namespace>;
  private readonly opts: NamespaceCacheOptions;
  /** One per user: whether it needs the Namespaces, known once its caches start. */
  private readonly needs: Array<Promise<boolean>> = [];
  /** Undefined until every user has answered. */
  private wanted: boolean | undefined;

  constructor(opts: NamespaceCacheOptions) {
    this.opts = opts;
    this.informer = new ResilientInformer<V1Namespace>({
      name: 'namespaces',
      client: opts.client,
      path: NAMESPACES_PATH,
      log: opts.log,
      ...(opts.clock ? { clock: opts.clock } : {}),
      trim: trimNamespace,
    });
    // Once here for every user: the watch resumes at once instead of up to 30 s later.
    opts.gate?.onRecover(() => this.informer.retryNow());
  }

  /**
   * Registers a user, before the manager runs. The user adds its handlers to `informer` and calls
   * the function returned, once, when its caches start: whether it needs the Namespaces after all.
   */
  use(): (needed: boolean) => void {
    let answer: (needed: boolean) => void = () => {};
    this.needs.push(new Promise<boolean>((resolve) => (answer = resolve)));
    return answer;
  }

  /** The informer's name while it has not loaded its first list and a user needs it. */
  unsynced(): string[] {
    return this.wanted !== false && !this.informer.synced ? [this.informer.name] : [];
  }

  /** The cache's runnable (runtime/manager.ts), on every replica. */
  runnable(): Runnable {
    return {
      name: 'namespace-caches',
      mode: 'always',
      start: async (signal) => {
        const needed = await Promise.race([
          Promise.all(this.needs).then((n) => n.some(Boolean)),
          whenAborted(signal),
        ]);
        if (needed === undefined || signal.aborted) return;
        this.wanted = needed;
        if (!needed) {
          this.opts.log.info('no controller needs the Namespaces; not watching them', {});
          return;
        }
        await checkListAccess(this.opts.client, [{ what: 'namespaces', path: NAMESPACES_PATH }], {
          signal,
          log: this.opts.log,
          ...(this.opts.clock ? { clock: this.opts.clock } : {}),
        });
        await this.informer.start();
      },
      stop: () => this.informer.stop(),
    };
  }
}
