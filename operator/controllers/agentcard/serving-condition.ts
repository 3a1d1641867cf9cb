/**
 * The `Serving` condition of an AgentCard served by the central card server: whether another
 * card claims one of its hosts (serving/central-hosts.ts keeps the index; its module comment says
 * why the condition does not gate `Ready`, and how the other card is named).
 */
import type { CentralServing } from '../../serving/central-hosts.ts';
import { splitKey } from '../../runtime/keys.ts';
import { getCondition, setCondition, type ConditionInput } from './conditions.ts';
import type { PlannedEvent } from './events.ts';
import { statusChanged, type ControllerStatus } from './status.ts';

export const SERVING_CONDITION = 'Serving';

const MAX_LISTED = 5;

/** How the other claimant is named to the card's readers (see the module comment). */
export function otherCardName(other: string, namespace: string): string {
  const [ns, name] = splitKey(other);
  return ns === namespace ? `AgentCard ${name}` : 'an AgentCard in another namespace';
}

/** The Serving condition for a card served centrally (pure). */
export function servingCondition(
  namespace: string,
  serving: CentralServing,
  generation: number,
): ConditionInput {
  if (serving.conflicts.length === 0) {
    return {
      type: SERVING_CONDITION,
      status: 'True',
      reason: 'HostsUnique',
      message: `no other AgentCard claims its ${serving.hosts} host${serving.hosts === 1 ? '' : 's'} on the card server`,
      observedGeneration: generation,
    };
  }
  const listed = serving.conflicts.slice(0, MAX_LISTED).map((c) => {
    const names = [...new Set(c.others.map((o) => otherCardName(o, namespace)))].join(', ');
    return `${c.host} (also claimed by ${names})`;
  });
  const more = serving.conflicts.length - listed.length;
  return {
    type: SERVING_CONDITION,
    status: 'False',
    reason: 'HostConflict',
    message:
      `the card server answers none of the cards claiming ${listed.join(', ')}` +
      (more > 0 ? ` and ${more} more host${more === 1 ? '' : 's'}` : '') +
      ' (404) until all but one let the host go',
    observedGeneration: generation,
  };
}

/**
 * The status and events of a planned reconcile with the Serving condition set (central), or
 * removed (sidecar). Pure; `statusChanged` is recomputed against the live status.
 */
export function withServingCondition<
  P extends { status: ControllerStatus; statusChanged: boolean; events: PlannedEvent[] },
>(
  plan: P,
  live: { status?: unknown; namespace: string; generation: number },
  serving: CentralServing | undefined,
  now: Date,
): P {
  const conditions = plan.status.conditions ?? [];
  const before = getCondition(conditions, SERVING_CONDITION);
  let next = conditions.filter((c) => c.type !== SERVING_CONDITION);
  const events = [...plan.events];
  if (serving) {
    const condition = servingCondition(live.namespace, serving, live.generation);
    next = setCondition(conditions, condition, now);
    if (
      condition.status === 'False' &&
      (before?.status !== 'False' || before.message !== condition.message)
    ) {
      events.push({ type: 'Warning', reason: 'HostConflict', action: 'Serve', message: condition.message });
    }
  }
  const status = { ...plan.status, conditions: next };
  return { ...plan, status, statusChanged: statusChanged(live.status, status), events };
}
