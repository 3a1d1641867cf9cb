/**
 * Runs the probes of many AgentCards, each on its own jittered schedule, through shared global
 * and per-host concurrency limits. The controller tells it what to probe (`upsert`, `remove`)
 * and gets every card's full result list back through `onResults` after each round; turning
 * results into status is nextInterfacesStatus (status.ts), which the controller calls.
 *
 * Timing rules (one round per card per interval, so one onResults per card per interval):
 * - a new key, or a changed one (interfaces, interval, timeout or revision), is probed at once;
 * - after a card's first round its next one falls anywhere in [0.5, 1.5] x interval, so cards
 *   created together do not stay in step; later rounds get +-10% jitter;
 * - until every interface of a new or changed key has answered once, a round with a failure is
 *   followed by a shorter one: after 5 s, then 10, 20, 40 s (+-10%), as long as that is sooner
 *   than the round the interval plans. An AgentCard is usually applied with its agent's
 *   Deployment (one Helm release, one GitOps sync), so its first probe often runs before the
 *   agent's Pod is Ready; without this, it would read unreachable for up to 1.5 intervals
 *   (90 s at the default 60 s) after the agent is up. These retries do not count as failures
 *   for the backoff below, and a card that answers at once has none;
 * - a failing interface backs off by sitting out rounds: probed again after 1, 2, 4, then every
 *   8 rounds (at most maxBackoffMs apart); an Unsupported one is not asked again until the key
 *   changes. Its last result is reported in the rounds it sits out.
 *
 * Connections: a round's JSONRPC and HTTP+JSON interfaces of one origin are probed one after the
 * other on one connection opened for that round, and closed with it (RoundConnection, http.ts);
 * every other interface gets a connection of its own. No connection is kept between rounds.
 */
import { createHash } from 'node:crypto';
import type { Registry } from 'prom-client';
import { describeError } from '../errors.ts';
import { httpOrigin } from './calls.ts';
import type { Logger } from '../log.ts';
import type { CaOption, Resolver } from './connect.ts';
import { RoundConnection } from './http.ts';
import { ProbeLimiter, hostKey } from './limiter.ts';
import { type ProbeMetrics, createProbeMetrics } from './metrics.ts';
import type { OwnerCheck } from './ownership.ts';
import type { AddressPolicy } from './policy.ts';
import { checkHeaders, probeInterface } from './probe.ts';
import type { ServicePortCheck } from './service-port.ts';
import type { ProbeResult, ProbeTarget } from './types.ts';

export interface ProbeConfig {
  /** spec.card.supportedInterfaces, in order (the index is the metrics' `interface` label). */
  interfaces: ProbeTarget[];
  intervalMs: number;
  timeoutMs: number;
  /** Credential headers for an interface URL (see credentialHeaders), or undefined for none. */
  headersFor?: (url: string) => Record<string, string> | undefined;
  /** Anything else whose change should re-probe at once, e.g. the credential Secrets' resourceVersions. */
  revision?: string;
}

export interface ProbeSchedulerOptions {
  policy: AddressPolicy;
  /** The namespace rule: what a card of `namespace` may reach besides the policy's allowed ranges. */
  ownerFor?: (namespace: string) => OwnerCheck;
  /** The Service port check for the cards of `namespace` (service-port.ts). */
  servicePortFor?: (namespace: string) => ServicePortCheck;
  /** Called after every round of a key with one result per interface, in interface order. */
  onResults: (key: string, results: ProbeResult[]) => void;
  /** Metrics are registered here when given. */
  registry?: Registry;
  globalConcurrency?: number;
  perHostConcurrency?: number;
  /** Cap of the failure backoff (default 10 minutes). */
  maxBackoffMs?: number;
  resolver?: Resolver;
  ca?: CaOption;
  logger?: Logger;
  /** Source of randomness for jitter (tests pin it). */
  random?: () => number;
}

/** Delay until a card's next round (pure): spread after the first round, +-10% after that. */
export function roundDelayMs(intervalMs: number, random: number, first: boolean): number {
  return first ? intervalMs * (0.5 + random) : intervalMs * (0.9 + 0.2 * random);
}

/** First delay of the retries of a key that has not answered yet; each next one doubles. */
const SETTLING_RETRY_MS = 5_000;

/**
 * Delay of the `retry`-th (0-based) early retry of a key whose interfaces have not all answered
 * once, or undefined once the round the interval plans (`plannedMs`) comes as soon (pure).
 */
export function settlingRetryMs(retry: number, plannedMs: number, random: number): number | undefined {
  const delay = SETTLING_RETRY_MS * 2 ** retry * (0.9 + 0.2 * random);
  return delay < plannedMs ? delay : undefined;
}

/**
 * How many rounds a failing interface sits out before its next probe (pure). `failures`:
 * consecutive failed probes so far. 0, 1, 3, then 7 (i.e. probed after 1, 2, 4, 8 rounds), never
 * more than fits in maxBackoffMs.
 */
export function backoffRounds(failures: number, intervalMs: number, maxBackoffMs = 600_000): number {
  if (failures <= 1) return 0;
  const rounds = 2 ** Math.min(failures - 1, 3);
  return Math.max(1, Math.min(rounds, Math.floor(maxBackoffMs / intervalMs))) - 1;
}

/**
 * The due interfaces of a round (indexes into `origins`, each interface's `httpOrigin`) in the
 * groups they are probed in (pure): the JSONRPC and HTTP+JSON interfaces of one origin together,
 * in interface order, to share the round's connection; every other interface alone. Groups come
 * in the order of their first index.
 */
export function roundGroups(origins: readonly (string | undefined)[], due: readonly number[]): number[][] {
  const groups: number[][] = [];
  const byOrigin = new Map<string, number[]>();
  for (const i of due) {
    const origin = origins[i];
    let group = origin === undefined ? undefined : byOrigin.get(origin);
    if (!group) {
      group = [];
      groups.push(group);
      if (origin !== undefined) byOrigin.set(origin, group);
    }
    group.push(i);
  }
  return groups;
}

interface Entry {
  key: string;
  card: { namespace: string; name: string };
  config: ProbeConfig;
  fingerprint: string;
  /** Each interface's httpOrigin, for roundGroups: fixed while the fingerprint is. */
  origins: (string | undefined)[];
  results: (ProbeResult | undefined)[];
  failures: number[];
  /** Rounds each interface still sits out (Infinity: never probed again). */
  skip: number[];
  /** Whether each interface has answered since the key was added or changed. */
  answered: boolean[];
  /** Early retries so far; undefined once the key is settled (every interface answered once, or the interval's round came sooner). */
  settlingRetries?: number;
  timer?: NodeJS.Timeout;
  /** When the timer fires (ms since the epoch); undefined while no round is planned. */
  dueAt?: number;
  round?: Promise<void>;
  abort: AbortController;
  rounds: number;
}

/**
 * What makes a key's schedule start over when it changes: its interfaces and timings. Kept as a
 * SHA-256 of their JSON (44 characters), not the JSON itself (240 or more a card, only ever
 * compared; 2.4 MiB of the heap at 10,000 cards, docs/scaling.md).
 */
function fingerprint(config: ProbeConfig): string {
  const interfaces = config.interfaces.map((i) => [
    i.url,
    i.protocolBinding,
    i.protocolVersion,
    i.tenant ?? '',
  ]);
  const facts = JSON.stringify([interfaces, config.intervalMs, config.timeoutMs, config.revision ?? '']);
  return createHash('sha256').update(facts, 'utf8').digest('base64');
}

function cardOf(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return slash < 0
    ? { namespace: '', name: key }
    : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

export class ProbeScheduler {
  #opts: ProbeSchedulerOptions;
  #limiter: ProbeLimiter;
  #metrics?: ProbeMetrics;
  #entries = new Map<string, Entry>();
  #random: () => number;

  constructor(opts: ProbeSchedulerOptions) {
    this.#opts = opts;
    this.#limiter = new ProbeLimiter({
      global: opts.globalConcurrency ?? 64,
      perHost: opts.perHostConcurrency ?? 4,
    });
    if (opts.registry) this.#metrics = createProbeMetrics(opts.registry);
    this.#random = opts.random ?? Math.random;
  }

  /** Adds or updates a key (conventionally "namespace/name"). A change probes at once. */
  upsert(key: string, config: ProbeConfig): void {
    const print = fingerprint(config);
    const existing = this.#entries.get(key);
    if (existing && existing.fingerprint === print) {
      existing.config = config; // New headersFor closure; the schedule stays.
      return;
    }
    if (existing) this.#cancel(existing);
    const n = config.interfaces.length;
    const entry: Entry = {
      key,
      card: cardOf(key),
      config,
      fingerprint: print,
      origins: config.interfaces.map(httpOrigin),
      results: new Array<ProbeResult | undefined>(n).fill(undefined),
      failures: new Array<number>(n).fill(0),
      skip: new Array<number>(n).fill(0),
      answered: new Array<boolean>(n).fill(false),
      settlingRetries: 0,
      abort: new AbortController(),
      rounds: 0,
    };
    if (existing) this.#metrics?.forget(entry.card, n);
    this.#entries.set(key, entry);
    this.#schedule(entry, 0);
  }

  /** Stops probing a key and drops its metrics; results of a round in flight are discarded. */
  remove(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#cancel(entry);
    this.#entries.delete(key);
    this.#metrics?.forget(entry.card);
  }

  has(key: string): boolean {
    return this.#entries.has(key);
  }

  /** When the key's next round starts (ms since the epoch); undefined while none is planned. */
  nextRoundAt(key: string): number | undefined {
    return this.#entries.get(key)?.dueAt;
  }

  /** Stops everything and waits for probes in flight to end. */
  async stop(): Promise<void> {
    const rounds = [...this.#entries.values()].map((e) => e.round);
    for (const key of [...this.#entries.keys()]) this.remove(key);
    await Promise.allSettled(rounds);
  }

  stats(): { keys: number; interfaces: number; active: number; waiting: number } {
    let interfaces = 0;
    for (const e of this.#entries.values()) interfaces += e.config.interfaces.length;
    return {
      keys: this.#entries.size,
      interfaces,
      active: this.#limiter.active,
      waiting: this.#limiter.waiting,
    };
  }

  #cancel(entry: Entry): void {
    clearTimeout(entry.timer);
    entry.abort.abort();
  }

  #schedule(entry: Entry, delayMs: number): void {
    clearTimeout(entry.timer);
    entry.dueAt = undefined;
    if (!Number.isFinite(delayMs)) return;
    entry.dueAt = Date.now() + Math.max(0, delayMs);
    entry.timer = setTimeout(
      () => {
        entry.dueAt = undefined;
        entry.round = this.#round(entry).catch((err: unknown) =>
          this.#opts.logger?.error('probe round failed', { key: entry.key, error: describeError(err) }),
        );
      },
      Math.max(0, delayMs),
    );
  }

  async #round(entry: Entry): Promise<void> {
    const { config, abort } = entry;
    const due: number[] = [];
    entry.skip.forEach((skip, i) => (skip <= 0 ? due.push(i) : (entry.skip[i] = skip - 1)));
    await Promise.all(
      roundGroups(entry.origins, due).map((group) =>
        // A group takes one place in the limits: its probes run one after the other.
        this.#limiter.run(hostKey(config.interfaces[group[0]!]!.url), async () => {
          const shared = group.length > 1 ? new RoundConnection() : undefined;
          try {
            for (const i of group)
              this.#record(entry, i, await this.#probeOne(entry, config.interfaces[i]!, shared));
          } finally {
            shared?.close();
          }
        }),
      ),
    );
    if (abort.signal.aborted || this.#entries.get(entry.key) !== entry) return;
    const first = entry.rounds === 0;
    entry.rounds++;
    this.#opts.onResults(entry.key, [...(entry.results as ProbeResult[])]);
    // Nothing left to ask (all Unsupported, or no interfaces): no more rounds until a change.
    if (entry.skip.every((s) => s === Infinity)) return;
    const planned = roundDelayMs(config.intervalMs, this.#random(), first);
    this.#schedule(entry, this.#settlingDelay(entry, planned) ?? planned);
  }

  /** Takes in one interface's result: its metrics, its failures and the rounds it sits out. */
  #record(entry: Entry, i: number, result: ProbeResult): void {
    if (entry.abort.signal.aborted) return;
    entry.results[i] = result;
    this.#metrics?.record(entry.card, i, result);
    if (result.reason === 'Unsupported') {
      entry.skip[i] = Infinity;
      return;
    }
    if (result.reachable) entry.answered[i] = true;
    // While the key settles, a failure is counted once: its early retries are not the backoff's.
    const settling = entry.settlingRetries !== undefined;
    entry.failures[i] = result.reachable ? 0 : settling ? 1 : entry.failures[i]! + 1;
    entry.skip[i] = backoffRounds(entry.failures[i]!, entry.config.intervalMs, this.#opts.maxBackoffMs);
  }

  /** The next early retry of a key not settled yet, or undefined (and the key settled). */
  #settlingDelay(entry: Entry, plannedMs: number): number | undefined {
    if (entry.settlingRetries === undefined) return undefined;
    const waiting = entry.answered.some((answered, i) => !answered && entry.skip[i] !== Infinity);
    const delay = waiting ? settlingRetryMs(entry.settlingRetries, plannedMs, this.#random()) : undefined;
    entry.settlingRetries = delay === undefined ? undefined : entry.settlingRetries + 1;
    return delay;
  }

  async #probeOne(
    entry: Entry,
    target: ProbeTarget,
    roundConnection?: RoundConnection,
  ): Promise<ProbeResult> {
    const { config, abort } = entry;
    const base = {
      url: target.url,
      protocolBinding: target.protocolBinding,
      protocolVersion: target.protocolVersion,
    };
    if (abort.signal.aborted) {
      return {
        ...base,
        reachable: false,
        reason: 'Timeout',
        message: 'probe cancelled',
        latencyMs: 0,
        phases: {},
      };
    }
    let headers: Record<string, string> | undefined;
    try {
      headers = config.headersFor?.(target.url);
      if (headers) checkHeaders(headers);
    } catch (err) {
      // Credentials that cannot be sent leave the binding unproven, like a missing token.
      const message = `probe credentials not usable: ${describeError(err)}`;
      return { ...base, reachable: false, reason: 'Unauthenticated', message, latencyMs: 0, phases: {} };
    }
    try {
      return await probeInterface(target, {
        timeoutMs: config.timeoutMs,
        policy: this.#opts.policy,
        owner: this.#opts.ownerFor?.(entry.card.namespace),
        servicePort: this.#opts.servicePortFor?.(entry.card.namespace),
        headers,
        signal: abort.signal,
        resolver: this.#opts.resolver,
        ca: this.#opts.ca,
        roundConnection,
      });
    } catch (err) {
      return {
        ...base,
        reachable: false,
        reason: 'ConnectionFailed',
        message: `probe not sent: ${describeError(err)}`,
        latencyMs: 0,
        phases: {},
      };
    }
  }
}
