/**
 * What the probes check when a card has audiences: every distinct interface across the audiences
 * that are probed, each with the names of every audience whose card declares it (for
 * status.interfaces[].audiences). An interface only a `probe: Disabled` audience declares is not
 * probed: public hosts are often unreachable from inside the cluster (no hairpin NAT).
 */
import { audienceInterfaces, DEFAULT_AUDIENCE } from '../../../card/audience.ts';
import type { AgentCardSpec } from '../../../card/resource.ts';
import type { ProbeTarget } from '../../../probe/index.ts';

export interface AudienceProbeTarget extends ProbeTarget {
  /** The audiences declaring it, in spec order ("default" is spec.card). */
  audiences: string[];
}

const identity = (i: ProbeTarget) =>
  JSON.stringify([i.url, i.protocolBinding, i.protocolVersion, i.tenant ?? '']);

/** The interfaces to probe, spec.card's first, then each new one in audience order. */
export function probeTargets(spec: AgentCardSpec): AudienceProbeTarget[] {
  const declared = new Map<string, { target: ProbeTarget; audiences: string[]; probed: boolean }>();
  const add = (name: string, probed: boolean, interfaces: readonly ProbeTarget[]) => {
    for (const i of interfaces) {
      const key = identity(i);
      let entry = declared.get(key);
      if (!entry) {
        entry = {
          target: {
            url: i.url,
            protocolBinding: i.protocolBinding,
            protocolVersion: i.protocolVersion,
            ...(i.tenant ? { tenant: i.tenant } : {}),
          },
          audiences: [],
          probed: false,
        };
        declared.set(key, entry);
      }
      if (!entry.audiences.includes(name)) entry.audiences.push(name);
      entry.probed ||= probed;
    }
  };
  add(DEFAULT_AUDIENCE, true, spec.card.supportedInterfaces);
  for (const a of spec.audiences ?? []) {
    add(a.name, a.probe !== 'Disabled', audienceInterfaces(spec.card.supportedInterfaces, a));
  }
  return [...declared.values()].filter((e) => e.probed).map((e) => ({ ...e.target, audiences: e.audiences }));
}

/** The audiences that are not probed (spec.audiences[].probe: Disabled), in spec order. */
export function unprobedAudiences(spec: AgentCardSpec): string[] {
  return (spec.audiences ?? []).filter((a) => a.probe === 'Disabled').map((a) => a.name);
}
