/**
 * The Delivered side of the controller: the served-card check (operator/served/) of the
 * audiences that set verifyServed, run on the probe interval, and the condition a reconcile
 * writes from its latest round. A round whose verdicts would not change the condition does not
 * queue a reconcile, and the condition's message holds nothing that changes between rounds with
 * the same verdicts: in the steady state the check costs no API write.
 *
 * - No audience sets verifyServed: no Delivered condition.
 * - Probes off for the whole operator (--no-probes): Unknown, reason ChecksDisabled.
 * - Before the first round of the current hosts: the live condition stands (after a restart), or
 *   Unknown, reason CheckPending.
 */
import type { Registry } from 'prom-client';
import type { AgentCardSpec } from '../../card/resource.ts';
import { parseDuration } from '../../card/resource.ts';
import type { JWKS } from '../../card/verify.ts';
import type { Logger } from '../../log.ts';
import type { CaOption, Resolver } from '../../probe/connect.ts';
import type { OwnerCheck } from '../../probe/ownership.ts';
import type { AddressPolicy } from '../../probe/policy.ts';
import {
  DELIVERED_CONDITION,
  deliveredCondition,
  disabledDelivered,
  pendingDelivered,
  type DeliveredCondition,
} from '../../served/condition.ts';
import { ServedMetrics } from '../../served/metrics.ts';
import { ServedScheduler } from '../../served/scheduler.ts';
import { servedTargets } from '../../served/targets.ts';
import { splitKey } from '../../runtime/keys.ts';
import { DATA_KEYS } from '../../api/names.ts';
import { hostKeyPrefix } from './audiences/publish.ts';
import { getCondition, setCondition } from './conditions.ts';
import { statusChanged, type ControllerStatus } from './status.ts';

export interface ServedHooks {
  /** The Delivered condition of a reconcile; undefined: no audience asks for the check. */
  condition(
    key: string,
    spec: AgentCardSpec | undefined,
    generation: number,
    live: ControllerStatus,
  ): DeliveredCondition | undefined;
  /** After each reconcile of an accepted spec: check these hosts against these keys (jwks.json). */
  track(key: string, spec: AgentCardSpec, jwks: string): void;
  forget(key: string): void;
  stop(): Promise<void>;
}

const asked = (spec: AgentCardSpec | undefined) => !!spec?.audiences?.some((a) => a.verifyServed === true);

/** The condition as the live status has it. */
function liveDelivered(live: ControllerStatus): DeliveredCondition | undefined {
  const c = getCondition(live.conditions ?? [], DELIVERED_CONDITION);
  return c
    ? ({
        type: DELIVERED_CONDITION,
        status: c.status,
        reason: c.reason,
        message: c.message,
        observedGeneration: c.observedGeneration ?? 0,
      } as DeliveredCondition)
    : undefined;
}

const sameCondition = (a: DeliveredCondition | undefined, b: DeliveredCondition) =>
  !!a && a.status === b.status && a.reason === b.reason && a.message === b.message;

/** The check off for the whole operator (--no-probes). */
export function noServedChecks(): ServedHooks {
  return {
    condition: (_key, spec, generation, live) =>
      asked(spec) ? disabledDelivered(generation) : spec ? undefined : liveDelivered(live),
    track: () => {},
    forget: () => {},
    stop: async () => {},
  };
}

export interface ServedWiringOptions {
  /** The probes' address policy (the same object: the same refusals and advice). */
  policy: AddressPolicy;
  ownerFor?: (namespace: string) => OwnerCheck;
  resolver?: Resolver;
  ca?: CaOption;
  registry: Registry;
  log: Logger;
  /** The controller-owned status and generation of a card as the controller sees it now. */
  liveStatus: (key: string) => { status: ControllerStatus; generation: number } | undefined;
  /** The published ConfigMap's data of a card (the cache keeps the signed cards verbatim). */
  publishedData: (key: string) => Record<string, string> | undefined;
  requeue: (key: string) => void;
  /** Source of randomness for the schedule's jitter (tests pin it). */
  random?: () => number;
}

export function servedWiring(opts: ServedWiringOptions): ServedHooks {
  const latest = new Map<string, { urls: string; condition: DeliveredCondition }>();
  const metrics = new ServedMetrics(opts.registry);
  const card = (key: string) => {
    const [namespace, name] = splitKey(key);
    return { namespace, name };
  };
  const specs = new Map<string, AgentCardSpec>();
  const scheduler = new ServedScheduler({
    fetch: {
      policy: opts.policy,
      ...(opts.resolver ? { resolver: opts.resolver } : {}),
      ...(opts.ca ? { ca: opts.ca } : {}),
    },
    ...(opts.ownerFor ? { ownerFor: opts.ownerFor } : {}),
    ...(opts.random ? { random: opts.random } : {}),
    logger: opts.log,
    onRound: (key, verdicts) => {
      const spec = specs.get(key);
      if (!spec) return;
      metrics.set(
        card(key),
        verdicts.map((v) => ({ audience: v.audience, host: v.host, verdict: v.comparison.verdict })),
      );
      const live = opts.liveStatus(key);
      const condition = deliveredCondition(verdicts, servedTargets(spec).skipped, live?.generation ?? 0);
      latest.set(key, { urls: urlsOf(spec), condition });
      // Only a verdict that changes the condition is worth a reconcile (and then a status write).
      if (live && !sameCondition(liveDelivered(live.status), condition)) opts.requeue(key);
    },
  });
  const urlsOf = (spec: AgentCardSpec) => JSON.stringify(servedTargets(spec).targets.map((t) => t.url));
  const forget = (key: string) => {
    scheduler.remove(key);
    latest.delete(key);
    specs.delete(key);
    metrics.forget(card(key));
  };
  return {
    condition: (key, spec, generation, live) => {
      const current = liveDelivered(live);
      if (!spec) return current; // not accepted: what was said stands
      if (!asked(spec)) return undefined;
      const targets = servedTargets(spec);
      if (targets.targets.length === 0) return deliveredCondition([], targets.skipped, generation);
      const round = latest.get(key);
      if (round && round.urls === urlsOf(spec)) return { ...round.condition, observedGeneration: generation };
      if (current && current.reason !== 'CheckPending' && current.reason !== 'ChecksDisabled')
        return { ...current, observedGeneration: generation };
      return pendingDelivered(generation);
    },
    track: (key, spec, jwks) => {
      const { targets } = servedTargets(spec);
      if (!asked(spec) || targets.length === 0) {
        forget(key);
        return;
      }
      const keys = JSON.parse(jwks) as JWKS;
      specs.set(key, spec);
      scheduler.upsert(key, {
        targets,
        intervalMs: parseDuration(spec.probe?.interval ?? '60s'),
        timeoutMs: parseDuration(spec.probe?.timeout ?? '5s'),
        keys,
        published: (host) => opts.publishedData(key)?.[`${hostKeyPrefix(host)}${DATA_KEYS.card}`],
      });
    },
    forget,
    stop: () => scheduler.stop(),
  };
}

/**
 * The plan with the Delivered condition set, or removed when no audience asks for the check
 * (pure); `statusChanged` is recomputed against the live status.
 */
export function withDeliveredCondition<P extends { status: ControllerStatus; statusChanged: boolean }>(
  plan: P,
  live: { status?: unknown },
  condition: DeliveredCondition | undefined,
  now: Date,
): P {
  const conditions = plan.status.conditions ?? [];
  const next = condition
    ? setCondition(conditions, condition, now)
    : conditions.filter((c) => c.type !== DELIVERED_CONDITION);
  const status = { ...plan.status, conditions: next };
  return { ...plan, status, statusChanged: statusChanged(live.status, status) };
}
