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
import { ADOPTED_LABEL, GROUP, PLURAL, VERSION } from '../../api/names.ts';
import { collectionPath } from '../../kube/api.ts';
import type { KubeClient } from '../../kube/client.ts';
import type { Logger } from '../../log.ts';
import { ControllerBuilder, type BuiltController, type Runtime } from '../../runtime/builder.ts';
import type { Cache, SharedInformer } from '../../runtime/cache.ts';
import type { Runnable } from '../../runtime/manager.ts';
import type { HandlerResult, WorkQueue } from '../../runtime/workqueue.ts';
import { Writer } from '../../runtime/writes.ts';
import { adoptableWorkloads, AGENT_CARDS, NAMESPACES, type CachedAgentCard } from '../cache/collections.ts';
import { CONTROLLER_NAMES } from '../metrics.ts';
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

const KINDS: readonly WorkloadKind[] = ['Deployment', 'StatefulSet'];

export interface AdoptionControllerOptions {
  client: KubeClient;
  log: Logger;
  /** The manager's cache (runtime/cache.ts) and what every controller shares. */
  cache: Cache;
  runtime: Runtime;
  policy: AdoptionPolicy;
  resyncMs: number;
  onWrite?: (resource: string) => void;
}

type WorkloadObject = Workload & KubernetesObject;

export class AdoptionController {
  readonly queue: WorkQueue;
  private readonly opts: AdoptionControllerOptions;
  private readonly log: Logger;
  private readonly workloads = new Map<WorkloadKind, SharedInformer<WorkloadObject>>();
  private readonly cards: SharedInformer<CachedAgentCard>;
  /** Read for the policy's namespace label only. */
  private readonly namespaces?: SharedInformer<V1Namespace>;
  private readonly writer: Writer<CachedAgentCard>;
  private readonly built: BuiltController;

  constructor(opts: AdoptionControllerOptions) {
    this.opts = opts;
    this.log = opts.log.child({ controller: 'adoption' });
    this.writer = new Writer({ client: opts.client, onWrite: () => opts.onWrite?.('agentcard') });
    const { cache } = opts;
    this.cards = cache.informer(AGENT_CARDS);
    const builder = new ControllerBuilder(
      { ...opts.runtime, log: this.log },
      {
        name: CONTROLLER_NAMES.adoption,
        concurrency: 2,
        resyncMs: opts.resyncMs,
        failure: 'adoption failed; retrying',
        fields: (key) => ({ workload: key }),
      },
    )
      // An adopted card changed or deleted by someone else is put back.
      .owns(this.cards, {
        kinds: KINDS,
        key: (owner, card, { type }) => {
          if (type === 'add' || !card.metadata?.labels?.[ADOPTED_LABEL]) return undefined;
          const kind = card.metadata.ownerReferences!.find((r) => r.controller)!.kind;
          return { key: keyOf(kind, card.metadata.namespace, owner), priority: 'low' };
        },
      });
    for (const kind of KINDS) {
      const informer = cache.informer(adoptableWorkloads(kind)) as unknown as SharedInformer<WorkloadObject>;
      this.workloads.set(kind, informer);
      // Added, changed, or the label removed or the workload deleted (the card goes).
      builder.watches(informer, (w) => [keyOf(kind, w.metadata.namespace, w.metadata.name)]);
    }
    if (opts.policy.namespaceLabel) {
      const namespaces = cache.informer(NAMESPACES);
      this.namespaces = namespaces;
      builder.watches(namespaces, (ns) => this.keysIn(ns.metadata?.name ?? ''));
    }
    this.built = builder.complete(this);
    this.queue = this.built.queue;
  }

  unsynced(): string[] {
    return this.built.unsynced();
  }

  runnables(): Runnable[] {
    return this.built.runnables();
  }

  /** Every labelled workload, and every adopted card (one whose workload lost its label). */
  *keys(): Iterable<{ key: string }> {
    for (const key of this.allKeys()) yield { key };
  }

  started(lanes: { high: number; low: number }): void {
    this.log.info('caches synced; adopting workloads', { workloads: lanes.high + lanes.low });
  }

  private allKeys(): string[] {
    const keys = new Set<string>();
    for (const [kind, informer] of this.workloads)
      for (const w of informer.list()) keys.add(keyOf(kind, w.metadata.namespace, w.metadata.name));
    for (const c of this.cards.list()) {
      const owner = c.metadata?.ownerReferences?.find((r) => r.controller);
      if (c.metadata?.labels?.[ADOPTED_LABEL] && owner)
        keys.add(keyOf(owner.kind as WorkloadKind, c.metadata.namespace ?? '', owner.name));
    }
    return [...keys];
  }

  private keysIn(namespace: string): string[] {
    return this.allKeys().filter((key) => key.split('/')[1] === namespace);
  }

  async reconcile(key: string, signal: AbortSignal): Promise<HandlerResult> {
    const [kind, namespace, name] = key.split('/') as [WorkloadKind, string, string];
    const workload = this.workloads.get(kind)?.get(name, namespace);
    const card = this.cards.get(name, namespace) as (KubernetesObject & { spec?: unknown }) | undefined;
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
      await this.writer.applyOwned(
        'agentcard',
        cardPath(namespace, name),
        plan.card as unknown as Record<string, unknown>,
        ADOPTION_FIELD_MANAGER,
        signal,
      );
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
    if (await this.writer.deleteOwned('agentcard', cardPath(namespace, name), card.metadata.uid!, signal))
      log.info('adopted AgentCard deleted', {
        agentCard: `${namespace}/${name}`,
        reason: !workload ? 'the workload is gone or unlabelled' : 'the namespace does not allow adoption',
      });
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
