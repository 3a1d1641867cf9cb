/**
 * Runs the probes of many AgentCards, each on its own jittered schedule, through shared global
 * and per-host concurrency limits. The controller tells it what to probe (`upsert`, `remove`)
 * and gets every card's full result list back through `onResults` after each round; turning
 * results into status is nextInterfacesStatus (status.ts), which the controller calls.
 *
 * Timing rules:
 * - a new key, or a changed one (interfaces, interval, timeout or revision), is probed at once;
 * - after a card's first round its next one falls anywhere in [0.5, 1.5] x interval, so cards
 *   created together do not stay in step; later rounds get +-10% jitter;
 * - a failing interface backs off: 1x, 2x, 4x, then 8x the interval (at most maxBackoffMs, and
 *   never below the interval); an Unsupported one is not asked again until the key changes.
 */
import type { Registry } from 'prom-client';
import { describeError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { CaOption, Resolver } from './connect.ts';
import { ProbeLimiter, hostKey } from './limiter.ts';
import { type ProbeMetrics, createProbeMetrics } from './metrics.ts';
import type { AddressPolicy } from './policy.ts';
import { probeInterface } from './probe.ts';
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

/** Delay until an interface's next probe (pure). `failures`: consecutive failed probes so far. */
export function nextDelayMs(
  intervalMs: number,
  failures: number,
  random: number,
  opts: { first?: boolean; maxBackoffMs?: number; jitter?: number } = {},
): number {
  if (opts.first) return intervalMs * (0.5 + random);
  const factor = failures <= 1 ? 1 : 2 ** Math.min(failures - 1, 3);
  const capped = Math.min(intervalMs * factor, Math.max(intervalMs, opts.maxBackoffMs ?? 600_000));
  const jitter = opts.jitter ?? 0.1;
  return capped * (1 - jitter + 2 * jitter * random);
}

interface Entry {
  key: string;
  card: { namespace: string; name: string };
  config: ProbeConfig;
  fingerprint: string;
  results: (ProbeResult | undefined)[];
  failures: number[];
  /** Date.now() at which each interface is next due (Infinity: never). */
  due: number[];
  timer?: NodeJS.Timeout;
  round?: Promise<void>;
  abort: AbortController;
  rounds: number;
}

function fingerprint(config: ProbeConfig): string {
  const interfaces = config.interfaces.map((i) => [
    i.url,
    i.protocolBinding,
    i.protocolVersion,
    i.tenant ?? '',
  ]);
  return JSON.stringify([interfaces, config.intervalMs, config.timeoutMs, config.revision ?? '']);
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
      results: new Array<ProbeResult | undefined>(n).fill(undefined),
      failures: new Array<number>(n).fill(0),
      due: new Array<number>(n).fill(0),
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
    if (!Number.isFinite(delayMs)) return;
    entry.timer = setTimeout(
      () => {
        entry.round = this.#round(entry).catch((err: unknown) =>
          this.#opts.logger?.error('probe round failed', { key: entry.key, error: describeError(err) }),
        );
      },
      Math.max(0, delayMs),
    );
  }

  async #round(entry: Entry): Promise<void> {
    const { config, abort } = entry;
    const start = Date.now();
    const first = entry.rounds === 0;
    const due = config.interfaces.map((_, i) => i).filter((i) => entry.due[i]! <= start + 5);
    await Promise.all(
      due.map(async (i) => {
        const target = config.interfaces[i]!;
        const result = await this.#limiter.run(hostKey(target.url), () => this.#probeOne(entry, target));
        if (abort.signal.aborted) return;
        entry.results[i] = result;
        this.#metrics?.record(entry.card, i, result);
        if (result.reason === 'Unsupported') {
          entry.due[i] = Infinity;
          return;
        }
        entry.failures[i] = result.reachable ? 0 : entry.failures[i]! + 1;
        entry.due[i] =
          Date.now() +
          nextDelayMs(config.intervalMs, entry.failures[i]!, this.#random(), {
            first,
            maxBackoffMs: this.#opts.maxBackoffMs,
          });
      }),
    );
    if (abort.signal.aborted || this.#entries.get(entry.key) !== entry) return;
    entry.rounds++;
    this.#opts.onResults(entry.key, entry.results as ProbeResult[]);
    this.#schedule(entry, Math.min(...entry.due) - Date.now());
  }

  async #probeOne(entry: Entry, target: ProbeTarget): Promise<ProbeResult> {
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
    try {
      return await probeInterface(target, {
        timeoutMs: config.timeoutMs,
        policy: this.#opts.policy,
        headers: config.headersFor?.(target.url),
        signal: abort.signal,
        resolver: this.#opts.resolver,
        ca: this.#opts.ca,
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
