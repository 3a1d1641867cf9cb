/**
 * The adoption controller: creates and owns an AgentCard for each Deployment or StatefulSet
 * labelled `agentcard.dev/adopt: "true"` in a namespace the administrator allows (plan.ts), and
 * deletes it when the label goes or the namespace stops being allowed. Deleting the workload
 * deletes its card through the garbage collector (the card's ownerReference).
 *
 * It watches the labelled workloads only (label selector), and reads AgentCards from the
 * AgentCard controller's caches (no second watch of them). A card of the same name that it does
 * not own is never touched: the workload is skipped with a warning.
 */
import type { KubernetesObject, V1Namespace } from '@kubernetes/client-node';
import { ADOPT_SELECTOR, ADOPTED_LABEL, GROUP, PLURAL, VERSION } from '../../api/names.ts';
import { collectionPath } from '../../kube/api.ts';
import { CONTENT_TYPE, type KubeClient } from '../../kube/client.ts';
import { isNotFound } from '../../kube/errors.ts';
import { ResilientInformer } from '../../kube/informer.ts';
import type { Logger } from '../../log.ts';
import type { Informers } from '../agentcard/informers.ts';
import type { NamespaceCache } from '../../runtime/namespace-cache.ts';
import type { HandlerResult, QueueGate, QueueObserver, WorkQueue } from '../../runtime/workqueue.ts';
import { checkListAccess, waitForCaches, type ListSource } from '../../runtime/access.ts';
import type { Runnable } from '../../runtime/manager.ts';
import { controllerRunnables, reconcileQueue, WorkSignal } from '../../runtime/reconciler.ts';
import {
  desiredAdoptedCard,
  namespaceAllowed,
  ownedBy,
  wantsAdoption,
  type AdoptedCard,
  type AdoptionPolicy,
  type Workload,
  type WorkloadKind,
} from './plan.ts';

/** The field manager of the adopted cards' spec (the AgentCard controller owns their status). */
export const ADOPTION_FIELD_MANAGER = 'agentcard-operator-adoption';

const KINDS: Array<{ kind: WorkloadKind; plural: string }> = [
  { kind: 'Deployment', plural: 'deployments' },
  { kind: 'StatefulSet', plural: 'statefulsets' },
];

export interface AdoptionControllerOptions {
  client: KubeClient;
  log: Logger;
  /** The AgentCard controller's caches by watched namespace ('' = all). */
  caches: ReadonlyMap<string, Informers>;
  policy: AdoptionPolicy;
  /**
   * The operator's shared Namespace cache (controller/namespace-cache.ts), read for the policy's
   * namespace label; required when the policy has one.
   */
  namespaces?: NamespaceCache;
  resyncMs: number;
  gate?: QueueGate;
  observer?: QueueObserver;
  onWrite?: (resource: string) => void;
}

type WorkloadObject = Workload & KubernetesObject;

export class AdoptionController {
  readonly queue: WorkQueue;
  private readonly opts: AdoptionControllerOptions;
  private readonly log: Logger;
  /** kind → scope → informer of the labelled workloads. */
  private readonly workloads = new Map<WorkloadKind, Map<string, ResilientInformer<WorkloadObject>>>();
  /** The shared Namespace cache's informer: handlers here, started there. */
  private readonly namespaces?: ResilientInformer<V1Namespace>;
  private readonly needNamespaces: (needed: boolean) => void = () => {};
  private readonly work = new WorkSignal();

  constructor(opts: AdoptionControllerOptions) {
    this.opts = opts;
    this.log = opts.log.child({ controller: 'adoption' });
    this.queue = reconcileQueue({
      reconcile: (key, signal) => this.reconcile(key, signal),
      work: this.work,
      concurrency: 2,
      gate: opts.gate,
      observer: opts.observer,
      log: this.log,
      failure: 'adoption failed; retrying',
      fields: (key) => ({ workload: key }),
    });
    for (const { kind, plural } of KINDS) {
      const byScope = new Map<string, ResilientInformer<WorkloadObject>>();
      for (const ns of opts.caches.keys()) {
        const inf = new ResilientInformer<WorkloadObject>({
          name: `${plural}/${ns || '*'}`,
          client: opts.client,
          path: collectionPath('/apis/apps/v1', plural, ns || undefined),
          labelSelector: ADOPT_SELECTOR,
          log: opts.log,
          // Only the metadata is read; the Pod template can be large.
          trim: (w) => {
            const m = w.metadata;
            w.metadata = {
              name: m.name,
              namespace: m.namespace,
              uid: m.uid,
              labels: m.labels,
              annotations: m.annotations,
              deletionTimestamp: m.deletionTimestamp,
              resourceVersion: (m as { resourceVersion?: string }).resourceVersion,
            } as WorkloadObject['metadata'];
            w.kind = kind;
            delete (w as { spec?: unknown }).spec;
            delete (w as { status?: unknown }).status;
          },
        });
        inf.addEventHandler({
          add: (w) => this.queue.add(keyOf(kind, w.metadata.namespace, w.metadata.name)),
          update: (_old, w) => this.queue.add(keyOf(kind, w.metadata.namespace, w.metadata.name)),
          // The label removed, or the workload deleted: the card goes.
          delete: (w) => this.queue.add(keyOf(kind, w.metadata.namespace, w.metadata.name)),
        });
        byScope.set(ns, inf);
      }
      this.workloads.set(kind, byScope);
    }
    if (opts.policy.namespaceLabel) {
      if (!opts.namespaces) throw new Error('a namespace label policy needs the shared Namespace cache');
      this.namespaces = opts.namespaces.informer;
      this.needNamespaces = opts.namespaces.use();
      const touched = (ns: V1Namespace) => this.enqueueNamespace(ns.metadata?.name ?? '');
      this.namespaces.addEventHandler({ add: touched, update: (_o, n) => touched(n), delete: touched });
    }
    // An adopted card changed or deleted by someone else is put back.
    for (const scope of opts.caches.values()) {
      const onCard = (c: KubernetesObject) => {
        const kind = c.metadata?.labels?.[ADOPTED_LABEL];
        const owner = c.metadata?.ownerReferences?.find((r) => r.controller);
        if (!kind || !owner || (owner.kind !== 'Deployment' && owner.kind !== 'StatefulSet')) return;
        this.queue.add(keyOf(owner.kind, c.metadata?.namespace ?? '', owner.name), 'low');
      };
      scope.cards.on('update', onCard);
      scope.cards.on('delete', onCard);
    }
    opts.gate?.onRecover(() => {
      for (const inf of this.own()) inf.retryNow();
    });
  }

  private own(): Array<ResilientInformer<KubernetesObject>> {
    const all: Array<ResilientInformer<KubernetesObject>> = [];
    for (const byScope of this.workloads.values())
      all.push(...(byScope.values() as Iterable<ResilientInformer<KubernetesObject>>));
    // Not the Namespace informer: the shared cache starts, stops and retries it.
    return all;
  }

  unsynced(): string[] {
    return this.own()
      .filter((i) => !i.synced)
      .map((i) => i.name);
  }

  runnables(): Runnable[] {
    return controllerRunnables({
      name: 'adoption',
      startCaches: async (signal) => {
        const sources: ListSource[] = [];
        for (const { kind, plural } of KINDS)
          for (const ns of this.workloads.get(kind)!.keys())
            sources.push({
              what: `${plural} in ${ns ? `namespace ${ns}` : 'every namespace'}`,
              path: collectionPath('/apis/apps/v1', plural, ns || undefined),
              labelSelector: ADOPT_SELECTOR,
            });
        // Namespaces: the shared cache checks its own access and starts its watch.
        this.needNamespaces(this.namespaces !== undefined);
        await checkListAccess(this.opts.client, sources, { signal, log: this.log });
        await Promise.all(this.own().map((i) => i.start()));
      },
      stopCaches: async () => {
        await Promise.all(this.own().map((i) => i.stop()));
      },
      startReconciling: async (signal) => {
        const shared = [...this.opts.caches.values()].map((s) => s.cards);
        const namespaces = this.namespaces ? [this.namespaces] : [];
        await waitForCaches([...this.own(), ...namespaces, ...shared], signal);
        if (this.queue.shuttingDown) return;
        const keys = this.allKeys();
        this.log.info('caches synced; adopting workloads', { workloads: keys.length });
        for (const key of keys) this.queue.add(key, 'low');
        this.queue.startResync(this.opts.resyncMs, () => this.allKeys());
      },
      stopReconciling: () => this.queue.shutdown(),
      cancel: () => this.work.cancel(),
    });
  }

  /** Every labelled workload, and every adopted card (one whose workload lost its label). */
  private allKeys(): string[] {
    const keys = new Set<string>();
    for (const [kind, byScope] of this.workloads)
      for (const inf of byScope.values())
        for (const w of inf.list()) keys.add(keyOf(kind, w.metadata.namespace, w.metadata.name));
    for (const scope of this.opts.caches.values())
      for (const c of scope.cards.list()) {
        const owner = c.metadata?.ownerReferences?.find((r) => r.controller);
        if (c.metadata?.labels?.[ADOPTED_LABEL] && owner)
          keys.add(keyOf(owner.kind as WorkloadKind, c.metadata.namespace ?? '', owner.name));
      }
    return [...keys];
  }

  private enqueueNamespace(namespace: string): void {
    for (const key of this.allKeys()) if (key.split('/')[1] === namespace) this.queue.add(key);
  }

  private scope<T>(map: ReadonlyMap<string, T>, namespace: string): T | undefined {
    return map.get(namespace) ?? map.get('');
  }

  async reconcile(key: string, signal: AbortSignal): Promise<HandlerResult> {
    const [kind, namespace, name] = key.split('/') as [WorkloadKind, string, string];
    const workload = this.scope(this.workloads.get(kind) ?? new Map(), namespace)?.get(name, namespace);
    const cards = this.scope(this.opts.caches, namespace)?.cards;
    const card = cards?.get(name, namespace) as (KubernetesObject & { spec?: unknown }) | undefined;
    const log = this.log.child({ workload: key });
    const nsLabels = this.namespaces?.get(namespace)?.metadata?.labels;
    const allowed = namespaceAllowed(this.opts.policy, namespace, nsLabels);

    if (workload && wantsAdoption(workload) && allowed) {
      if (card && !ownedBy(card, workload.metadata.uid)) {
        log.warn('an AgentCard of the same name exists and is not owned by the workload; not adopting', {
          agentCard: `${namespace}/${name}`,
        });
        return;
      }
      const plan = desiredAdoptedCard({ ...workload, kind });
      if (!plan.ok) {
        // The card already created (if any) stays as it was: the last good state is kept.
        log.warn('cannot adopt the workload', { problem: plan.problem });
        return;
      }
      if (card && upToDate(card, plan.card)) return;
      await this.opts.client.request('PATCH', cardPath(namespace, name), {
        query: { fieldManager: ADOPTION_FIELD_MANAGER, force: true },
        body: plan.card,
        contentType: CONTENT_TYPE.apply,
        signal,
      });
      this.opts.onWrite?.('agentcard');
      log.info(card ? 'adopted AgentCard updated' : 'AgentCard created for the workload', {
        agentCard: `${namespace}/${name}`,
      });
      return;
    }
    // Not (or no longer) asking, or not allowed: an adopted card of this workload goes.
    const owner = card?.metadata?.ownerReferences?.find((r) => r.controller);
    if (!card || !card.metadata?.labels?.[ADOPTED_LABEL] || owner?.kind !== kind || owner.name !== name)
      return;
    if (workload && !wantsAdoption(workload) && !ownedBy(card, workload.metadata.uid)) return;
    try {
      await this.opts.client.request('DELETE', cardPath(namespace, name), {
        body: { preconditions: { uid: card.metadata.uid } },
        signal,
      });
      this.opts.onWrite?.('agentcard');
      log.info('adopted AgentCard deleted', {
        agentCard: `${namespace}/${name}`,
        reason: !workload ? 'the workload is gone or unlabelled' : 'the namespace does not allow adoption',
      });
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

function keyOf(kind: string, namespace: string | undefined, name: string | undefined): string {
  return `${kind}/${namespace ?? ''}/${name ?? ''}`;
}

function cardPath(namespace: string, name: string): string {
  return `${collectionPath(`/apis/${GROUP}/${VERSION}`, PLURAL, namespace)}/${encodeURIComponent(name)}`;
}

/**
 * Whether the stored card already has the desired spec, label and owner. Compared as a subset:
 * the API server adds defaults (cacheMaxAgeSeconds, the source's interval) that are not ours.
 */
function upToDate(card: KubernetesObject & { spec?: unknown }, want: AdoptedCard): boolean {
  return (
    contains(card.spec, want.spec) &&
    // Optional fields we set are compared both ways (a removed annotation removes them).
    sameOptional(card.spec, want.spec, ['serving', 'hosts']) &&
    sameOptional(card.spec, want.spec, ['source', 'path']) &&
    card.metadata?.labels?.[ADOPTED_LABEL] === want.metadata.labels[ADOPTED_LABEL] &&
    ownedBy(card, want.metadata.ownerReferences[0]!.uid)
  );
}

function contains(have: unknown, want: unknown): boolean {
  if (want === null || typeof want !== 'object') return have === want;
  if (Array.isArray(want))
    return Array.isArray(have) && have.length === want.length && want.every((w, i) => contains(have[i], w));
  if (have === null || typeof have !== 'object' || Array.isArray(have)) return false;
  const h = have as Record<string, unknown>;
  return Object.entries(want as Record<string, unknown>).every(([k, v]) => contains(h[k], v));
}

function sameOptional(have: unknown, want: unknown, path: string[]): boolean {
  const at = (o: unknown) =>
    path.reduce<unknown>(
      (v, k) => (v && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined),
      o,
    );
  return JSON.stringify(at(have) ?? null) === JSON.stringify(at(want) ?? null);
}
