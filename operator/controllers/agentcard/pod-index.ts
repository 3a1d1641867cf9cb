/**
 * Which Pods ask for which AgentCard (through the inject annotation), for status.serving.
 *
 * The operator may watch every Pod of the cluster, so each Pod is trimmed before it is cached
 * (trimPod) and the index keeps only what status.serving reads. `update` answers which cards
 * must be reconciled again; status churn of a Pod (conditions, restarts) changes nothing that
 * status.serving says and queues nothing.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { INJECT_ANNOTATION } from '../../api/names.ts';
import { objectKey } from '../../runtime/keys.ts';
import { hasSidecar, requestedCard } from '../../serving/pods.ts';

/** Trims a Pod in place to names, the inject annotation and the phase, before it is cached. */
export function trimPod(pod: V1Pod): void {
  const m = pod.metadata ?? {};
  const inject = m.annotations?.[INJECT_ANNOTATION];
  pod.metadata = {
    name: m.name,
    namespace: m.namespace,
    resourceVersion: m.resourceVersion,
    ...(m.deletionTimestamp ? { deletionTimestamp: m.deletionTimestamp } : {}),
    ...(inject !== undefined ? { annotations: { [INJECT_ANNOTATION]: inject } } : {}),
  };
  const names = (list: Array<{ name: string }> | undefined) => (list ?? []).map((c) => ({ name: c.name }));
  pod.spec = {
    containers: names(pod.spec?.containers),
    ...(pod.spec?.initContainers ? { initContainers: names(pod.spec.initContainers) } : {}),
  };
  pod.status = pod.status?.phase ? { phase: pod.status.phase } : {};
}

/** The part of a trimmed Pod that status.serving depends on. */
function servingState(pod: V1Pod): string {
  return `${pod.status?.phase ?? ''}|${pod.metadata?.deletionTimestamp ? 'deleting' : ''}|${hasSidecar(pod)}`;
}

export class PodIndex {
  /** card key -> pod key -> trimmed Pod. */
  private readonly podsByCard = new Map<string, Map<string, V1Pod>>();
  /** pod key -> the card it asks for and its serving state when last seen. */
  private readonly cardOfPod = new Map<string, { card: string; state: string }>();

  /** Records a Pod event; returns the card keys whose status.serving may have changed. */
  update(pod: V1Pod, deleted: boolean): string[] {
    const namespace = pod.metadata?.namespace ?? '';
    const podKey = objectKey(namespace, pod.metadata?.name ?? '');
    const requested = deleted ? undefined : requestedCard(pod, namespace);
    const card = requested ? objectKey(namespace, requested) : undefined;
    const previous = this.cardOfPod.get(podKey);
    const affected: string[] = [];
    if (previous && previous.card !== card) {
      this.podsByCard.get(previous.card)?.delete(podKey);
      affected.push(previous.card);
    }
    if (!card) {
      this.cardOfPod.delete(podKey);
      return affected;
    }
    let pods = this.podsByCard.get(card);
    if (!pods) this.podsByCard.set(card, (pods = new Map()));
    pods.set(podKey, pod);
    const state = servingState(pod);
    this.cardOfPod.set(podKey, { card, state });
    if (previous?.card !== card || previous.state !== state) affected.push(card);
    return affected;
  }

  /** The trimmed Pods that ask for a card. */
  podsFor(cardKey: string): V1Pod[] {
    return [...(this.podsByCard.get(cardKey)?.values() ?? [])];
  }
}
