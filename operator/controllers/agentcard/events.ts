/**
 * Which Kubernetes Events a reconcile emits: only on a change of state, never on a reconcile
 * that changes nothing (so resyncs and restarts do not repeat them). The messages come from the
 * conditions, which already say what to do.
 */
import { getCondition } from './conditions.ts';
import type { Condition } from '../../runtime/condition-types.ts';

export interface PlannedEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  /** The action field of events.k8s.io/v1 (what the controller was doing). */
  action: string;
  message: string;
}

export interface EventContext {
  /** status.card.digest before and after this reconcile. */
  digestBefore?: string;
  digestAfter?: string;
}

function sameState(a: Condition | undefined, b: Condition | undefined): boolean {
  return !!a && !!b && a.status === b.status && a.reason === b.reason && a.message === b.message;
}

export function plannedEvents(
  before: readonly Condition[] | undefined,
  after: readonly Condition[],
  ctx: EventContext,
): PlannedEvent[] {
  const events: PlannedEvent[] = [];
  const pair = (type: string) => [getCondition(before, type), getCondition(after, type)] as const;

  // Accepted: a rejected spec is reported once per distinct problem.
  const [accBefore, accAfter] = pair('Accepted');
  if (accAfter?.status === 'False' && !sameState(accBefore, accAfter)) {
    events.push({ type: 'Warning', reason: accAfter.reason, action: 'Validate', message: accAfter.message });
  }

  // Signed and Published. A reconcile that publishes new bytes emits one Published event that
  // also says how the card is signed (one event per change, not two); Signed is reported on its
  // own only when signing recovers without new bytes. Failures are warned once per distinct problem.
  const [sigBefore, sigAfter] = pair('Signed');
  const [pubBefore, pubAfter] = pair('Published');
  const signedChanged = !!sigAfter && !sameState(sigBefore, sigAfter);
  const published = pubAfter?.status === 'True' && !!ctx.digestAfter && ctx.digestAfter !== ctx.digestBefore;
  if (signedChanged && sigAfter.status === 'False' && sigAfter.reason !== 'SigningNotConfigured') {
    events.push({ type: 'Warning', reason: sigAfter.reason, action: 'Sign', message: sigAfter.message });
  }
  if (published) {
    const signing = sigAfter?.status === 'True' ? `; ${sigAfter.message}` : '';
    events.push({
      type: 'Normal',
      reason: 'Published',
      action: 'Publish',
      message: `${pubAfter.message}${signing}`,
    });
  } else if (signedChanged && sigAfter.status === 'True') {
    events.push({ type: 'Normal', reason: 'Signed', action: 'Sign', message: sigAfter.message });
  }
  if (pubAfter?.status === 'False' && pubAfter.reason !== 'NotPublished' && !sameState(pubBefore, pubAfter)) {
    // (NotPublished is a consequence of an Accepted or Signed problem, which has its own event.)
    events.push({ type: 'Warning', reason: pubAfter.reason, action: 'Publish', message: pubAfter.message });
  }

  // CertificatesValid: warned once when a signing certificate enters its expiry window (and
  // again if another one does); a renewal clears it quietly (the Published event says it).
  const [certBefore, certAfter] = pair('CertificatesValid');
  if (certAfter?.status === 'False' && !sameState(certBefore, certAfter)) {
    events.push({ type: 'Warning', reason: certAfter.reason, action: 'Sign', message: certAfter.message });
  }

  // InterfacesReachable: only when the status flips (the n/m message moves too often).
  const [ifBefore, ifAfter] = pair('InterfacesReachable');
  if (ifAfter && ifBefore?.status !== ifAfter.status) {
    if (ifAfter.status === 'False') {
      events.push({ type: 'Warning', reason: ifAfter.reason, action: 'Probe', message: ifAfter.message });
    } else if (ifAfter.status === 'True' && ifBefore) {
      events.push({ type: 'Normal', reason: ifAfter.reason, action: 'Probe', message: ifAfter.message });
    }
  }
  return events;
}
