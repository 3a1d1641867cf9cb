/**
 * The InterfacesReachable side of the controller: which probes run (operator/probe's
 * ProbeScheduler, fed from each accepted spec) and what a reconcile writes from their results
 * (operator/probe's nextInterfacesStatus, which decides when a write is worth it: a verdict,
 * reason or certificate change, or lastProbeTime older than 10 minutes).
 *
 * - Probes off for the whole operator (--no-probes) or for a card (spec.probe.enabled=false):
 *   InterfacesReachable=Unknown, reason ProbesDisabled, no status.interfaces.
 * - Before the first round of the current interfaces: Unknown, reason ProbesPending.
 * - A spec that is not accepted keeps probing the last accepted interfaces and leaves the
 *   reported state as it was.
 * A round whose results would not change the status does not even queue a reconcile.
 */
import { createHash } from 'node:crypto';
import type { Registry } from 'prom-client';
import { parseDuration, type AgentCardSpec } from '../../card/resource.ts';
import type { Logger } from '../../log.ts';
import {
  createAddressPolicy,
  credentialHeaders,
  INTERFACES_REACHABLE,
  nextInterfacesStatus,
  ProbeScheduler,
  type ProbeResult,
  type ResolvedCredential,
} from '../../probe/index.ts';
import type { OwnerCheck } from '../../probe/ownership.ts';
import type { ServicePortCheck } from '../../probe/service-port.ts';
import { probeTargets, unprobedAudiences } from './audiences/probe-targets.ts';
import type { InterfacesVerdict } from './plan.ts';
import type { SecretView } from '../../signing/keys.ts';
import type { ControllerStatus } from './status.ts';

/** What the controller needs from the probe side. */
export interface ProbeHooks {
  /** The InterfacesReachable verdict for a reconcile (spec undefined: not accepted). */
  verdict(
    key: string,
    spec: AgentCardSpec | undefined,
    generation: number,
    live: ControllerStatus,
  ): InterfacesVerdict;
  /** After each reconcile of an accepted spec: probe these interfaces (with these Secrets). */
  track(key: string, spec: AgentCardSpec, secrets: ReadonlyMap<string, SecretView | undefined>): void;
  /** The AgentCard is gone. */
  forget(key: string): void;
  stop(): Promise<void>;
}

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

/** The verdict as it stands in the live status (undefined if there is none). */
function liveVerdict(live: ControllerStatus): InterfacesVerdict | undefined {
  const c = live.conditions?.find((x) => x.type === INTERFACES_REACHABLE);
  if (!c) return undefined;
  return {
    condition: {
      status: c.status,
      reason: c.reason,
      message: c.message,
      observedGeneration: c.observedGeneration ?? 0,
    },
    ...(live.interfaces ? { interfaces: live.interfaces } : {}),
    ...(live.reachableInterfaces !== undefined ? { reachableInterfaces: live.reachableInterfaces } : {}),
  };
}

/**
 * Whether `targets` are the interfaces the spec has probed (every audience's, see
 * audiences/probe-targets.ts), in order (probe results or status entries).
 */
const sameTargets = (
  targets: ReadonlyArray<{ url: string; protocolBinding: string; protocolVersion: string }>,
  spec: AgentCardSpec,
) => {
  const wanted = probeTargets(spec);
  return (
    targets.length === wanted.length &&
    targets.every((r, i) => {
      const want = wanted[i]!;
      return (
        r.url === want.url &&
        r.protocolBinding === want.protocolBinding &&
        r.protocolVersion === want.protocolVersion
      );
    })
  );
};

/** Whether the status entries name the audiences that declare each interface today. */
const sameAudiences = (
  entries: ReadonlyArray<{ audiences?: string[] | undefined }> | undefined,
  spec: AgentCardSpec,
) => {
  const wanted = declaringAudiences(spec);
  return (entries ?? []).every((e, i) => (e.audiences ?? []).join() === (wanted[i] ?? []).join());
};

/**
 * status.interfaces[].audiences of each probed interface: only for a card with audiences (for
 * any other card every entry would say "default", and an upgrade would rewrite every status).
 */
function declaringAudiences(spec: AgentCardSpec): Array<string[] | undefined> {
  const targets = probeTargets(spec);
  return spec.audiences?.length ? targets.map((t) => t.audiences) : targets.map(() => undefined);
}

const NOT_PROBED = 'not probed (probe: Disabled)';

/** The note an InterfacesReachable message ends with when audiences are not probed. */
function unprobedNote(spec: AgentCardSpec): string {
  const names = unprobedAudiences(spec);
  if (names.length === 0) return '';
  return `; audience${names.length > 1 ? 's' : ''} ${names.join(', ')} ${NOT_PROBED}`;
}

export interface VerdictInput {
  spec: AgentCardSpec | undefined;
  generation: number;
  live: ControllerStatus;
  /** The latest round of this card's probes, if any. */
  results: readonly ProbeResult[] | undefined;
  now: Date;
  /** Age of an unchanged interface's lastProbeTime that is worth a write (Infinity: never). */
  refreshAfterMs?: number;
}

/** The InterfacesReachable verdict of a reconcile, when probes run (pure). */
export function interfacesVerdict(input: VerdictInput): InterfacesVerdict & { writeNeeded: boolean } {
  const { spec, generation, live, results } = input;
  const current = liveVerdict(live);
  if (!spec) return { ...(current ?? pendingVerdict(generation)), writeNeeded: false };
  if (spec.probe?.enabled === false) {
    return {
      ...disabledVerdict(generation, 'spec.probe.enabled is false: interfaces are not checked'),
      writeNeeded: true,
    };
  }
  if (!results || !sameTargets(results, spec)) {
    // No round yet (e.g. just after a restart): what the status says about the same interfaces
    // still stands until the first round; other interfaces are pending.
    const sameAsLive =
      current !== undefined &&
      current.condition.reason !== 'ProbesDisabled' &&
      current.condition.reason !== 'ProbesPending' &&
      sameTargets(live.interfaces ?? [], spec);
    if (sameAsLive)
      return {
        ...current,
        condition: { ...current.condition, observedGeneration: generation },
        writeNeeded: !sameAudiences(live.interfaces, spec),
      };
    return { ...pendingVerdict(generation), writeNeeded: true };
  }
  const previousCondition = live.conditions?.find((c) => c.type === INTERFACES_REACHABLE);
  const out = nextInterfacesStatus({
    previous: live.interfaces as Parameters<typeof nextInterfacesStatus>[0]['previous'],
    previousCondition,
    results,
    now: input.now,
    generation,
    ...(input.refreshAfterMs !== undefined ? { refreshAfterMs: input.refreshAfterMs } : {}),
  });
  const note = unprobedNote(spec);
  const audiencesChanged = !sameAudiences(live.interfaces, spec);
  // The message says which audiences are not probed; a change of that alone is worth a write.
  const noteChanged =
    current !== undefined &&
    (note ? !current.condition.message.endsWith(note) : current.condition.message.includes(NOT_PROBED));
  if (!out.writeNeeded && !audiencesChanged && !noteChanged && current)
    return { ...current, writeNeeded: false };
  const { status, reason, message } = out.condition;
  const declaring = declaringAudiences(spec);
  return {
    condition: { status, reason, message: message + note, observedGeneration: generation },
    interfaces: out.interfaces.map((entry, i) => {
      const audiences = declaring[i];
      return audiences ? { ...entry, audiences } : entry;
    }),
    reachableInterfaces: out.reachableInterfaces,
    writeNeeded: true,
  };
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

/**
 * A refused loopback interface URL, in the operator: the URL is the agent's own loopback (an
 * adopted SDK card names the address the agent listens on), which from the operator is its own
 * Pod. docs/troubleshooting.md ("Blocked") says the same.
 */
export const PROBE_LOOPBACK_ADVICE =
  "from the operator, loopback is the operator's own Pod, never the agent: the URL names the agent's own loopback; replace it with an address others can reach (spec.card.supportedInterfaces, in the overlay for an adopted card)";

export interface ProbeWiringOptions {
  allowCidrs: string[];
  /** The namespace rule: the addresses a card's own namespace owns (namespace-addresses.ts). */
  ownerFor?: (namespace: string) => OwnerCheck;
  /** The Service port check of a card's namespace (operator/probe/service-port.ts). */
  servicePortFor?: (namespace: string) => ServicePortCheck;
  /** Extra trusted CA certificates (PEM) for TLS interfaces, on top of the system's. */
  ca?: string[];
  /** Ranges never probed, in addition to the built-in ones (e.g. cluster ranges in public space). */
  denyCidrs?: string[];
  /** How old an unchanged interface's lastProbeTime may get before it is rewritten (Infinity: never). */
  statusRefreshMs?: number;
  concurrency: number;
  registry: Registry;
  log: Logger;
  /** The controller-owned status and generation of a card as the controller sees it now. */
  liveStatus: (key: string) => { status: ControllerStatus; generation: number } | undefined;
  /** Queues a reconcile of the card. */
  requeue: (key: string) => void;
}

/** Credentials of spec.probe.credentials with their Secret values (entries that cannot be read are left out). */
function resolveCredentials(
  spec: AgentCardSpec,
  secrets: ReadonlyMap<string, SecretView | undefined>,
): ResolvedCredential[] {
  const out: ResolvedCredential[] = [];
  for (const c of spec.probe?.credentials ?? []) {
    const encoded = secrets.get(c.secretRef.name)?.data[c.secretRef.key];
    if (encoded === undefined) continue;
    out.push({
      url: c.url,
      type: c.type,
      ...(c.headerName ? { headerName: c.headerName } : {}),
      value: Buffer.from(encoded, 'base64').toString('utf8'),
    });
  }
  return out;
}

/** The probe engine behind the ProbeHooks. */
export function probeWiring(opts: ProbeWiringOptions): ProbeHooks {
  const latest = new Map<string, ProbeResult[]>();
  const refresh = opts.statusRefreshMs !== undefined ? { refreshAfterMs: opts.statusRefreshMs } : {};
  const scheduler = new ProbeScheduler({
    policy: createAddressPolicy({
      allowCidrs: opts.allowCidrs,
      denyCidrs: opts.denyCidrs ?? [],
      allowSetting: 'Helm value probes.allowCidrs, flag --probe-allow-cidr',
      loopbackAdvice: PROBE_LOOPBACK_ADVICE,
    }),
    ...(opts.ownerFor ? { ownerFor: opts.ownerFor } : {}),
    ...(opts.servicePortFor ? { servicePortFor: opts.servicePortFor } : {}),
    ...(opts.ca ? { ca: opts.ca } : {}),
    globalConcurrency: opts.concurrency,
    registry: opts.registry,
    logger: opts.log,
    onResults: (key, results) => {
      latest.set(key, results);
      const live = opts.liveStatus(key);
      if (!live) return;
      // Only a round that changes something is worth a reconcile (and then a status write).
      const check = nextInterfacesStatus({
        previous: live.status.interfaces as Parameters<typeof nextInterfacesStatus>[0]['previous'],
        previousCondition: live.status.conditions?.find((c) => c.type === INTERFACES_REACHABLE),
        results,
        now: new Date(),
        generation: live.generation,
        ...refresh,
      });
      if (check.writeNeeded) opts.requeue(key);
    },
  });
  return {
    verdict: (key, spec, generation, live) => {
      const { writeNeeded: _w, ...verdict } = interfacesVerdict({
        spec,
        generation,
        live,
        results: latest.get(key),
        now: new Date(),
        ...refresh,
      });
      return verdict;
    },
    track: (key, spec, secrets) => {
      if (spec.probe?.enabled === false) {
        scheduler.remove(key);
        latest.delete(key);
        return;
      }
      const credentials = resolveCredentials(spec, secrets);
      scheduler.upsert(key, {
        interfaces: probeTargets(spec).map(({ audiences: _a, ...target }) => target),
        intervalMs: parseDuration(spec.probe?.interval ?? '60s'),
        timeoutMs: parseDuration(spec.probe?.timeout ?? '5s'),
        headersFor: (url) => credentialHeaders(url, credentials),
        // A rotated credential probes again at once; its digest, never its value, is compared.
        revision: createHash('sha256')
          .update(JSON.stringify(credentials.map((c) => [c.url, c.type, c.headerName ?? '', c.value])))
          .digest('hex'),
      });
    },
    forget: (key) => {
      scheduler.remove(key);
      latest.delete(key);
    },
    stop: () => scheduler.stop(),
  };
}
