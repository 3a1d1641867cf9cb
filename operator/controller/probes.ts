/**
 * The InterfacesReachable side of a reconcile when no probe results exist: probes switched off
 * (operator flag --no-probes, or spec.probe.enabled=false) or not run yet.
 * TODO(probe): replace `pendingProbes` by the ProbeScheduler wiring once operator/probe lands.
 */
import type { AgentCardSpec } from '../card/resource.ts';
import type { ProbeHooks } from './controller.ts';
import type { InterfacesVerdict } from './plan.ts';

export function disabledVerdict(generation: number, why: string): InterfacesVerdict {
  return {
    condition: { status: 'Unknown', reason: 'ProbesDisabled', message: why, observedGeneration: generation },
  };
}

export function pendingVerdict(generation: number): InterfacesVerdict {
  return {
    condition: {
      status: 'Unknown',
      reason: 'ProbesPending',
      message: 'the interfaces have not been probed yet',
      observedGeneration: generation,
    },
  };
}

/** Whether the spec itself switches probing off. */
export function probingDisabledBySpec(spec: AgentCardSpec | undefined): boolean {
  return spec?.probe?.enabled === false;
}

/** Probes off for the whole operator: every card reports ProbesDisabled. */
export function noProbes(): ProbeHooks {
  return {
    verdict: (_key, _spec, generation) =>
      disabledVerdict(
        generation,
        'probes are disabled on this operator (--no-probes): interfaces are not checked',
      ),
    track: () => {},
    forget: () => {},
    stop: async () => {},
  };
}

/** No probe engine yet: ProbesPending unless the spec disables probing. */
export function pendingProbes(): ProbeHooks {
  return {
    verdict: (_key, spec, generation) =>
      probingDisabledBySpec(spec)
        ? disabledVerdict(generation, 'spec.probe.enabled is false: interfaces are not checked')
        : pendingVerdict(generation),
    track: () => {},
    forget: () => {},
    stop: async () => {},
  };
}
