/**
 * Runs the served-card check of many AgentCards on the probes' schedule (operator/probe/
 * scheduler.ts's roundDelayMs: the first round at once, the next within [0.5, 1.5] x interval,
 * then +-10%), so a change of what clients receive shows within about one probe interval. Each
 * round asks every target of the card once, through a shared concurrency limit, and hands the
 * verdicts to `onRound`. A changed configuration (targets, interval, timeout, keys) checks at once.
 */
import { describeError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { JWKS } from '../card/verify.ts';
import { ProbeLimiter, hostKey } from '../probe/limiter.ts';
import type { OwnerCheck } from '../probe/ownership.ts';
import { roundDelayMs } from '../probe/scheduler.ts';
import { checkServedCard, type ServedFetchOptions } from './check.ts';
import type { HostVerdict } from './condition.ts';
import type { ServedComparison } from './compare.ts';
import type { ServedTarget } from './targets.ts';

export interface ServedConfig {
  targets: ServedTarget[];
  intervalMs: number;
  timeoutMs: number;
  /** The card's own keys (the published jwks.json). */
  keys: JWKS;
  /** The published card of a host (the ConfigMap's text), read at each round; none: not published yet. */
  published: (host: string) => string | undefined;
}

export interface ServedSchedulerOptions {
  fetch: Omit<ServedFetchOptions, 'signal' | 'timeoutMs' | 'owner'>;
  /** The namespace rule of a card's namespace (probe/ownership.ts), as for probes. */
  ownerFor?: (namespace: string) => OwnerCheck;
  onRound: (key: string, verdicts: HostVerdict[]) => void;
  concurrency?: number;
  logger?: Logger;
  random?: () => number;
}

interface Entry {
  config: ServedConfig;
  fingerprint: string;
  timer?: NodeJS.Timeout;
  abort: AbortController;
  rounds: number;
  round?: Promise<void>;
}

const fingerprint = (c: ServedConfig) =>
  JSON.stringify([c.targets.map((t) => t.url), c.intervalMs, c.timeoutMs, c.keys]);

export class ServedScheduler {
  #opts: ServedSchedulerOptions;
  #limiter: ProbeLimiter;
  #entries = new Map<string, Entry>();

  constructor(opts: ServedSchedulerOptions) {
    this.#opts = opts;
    this.#limiter = new ProbeLimiter({ global: opts.concurrency ?? 16, perHost: 2 });
  }

  upsert(key: string, config: ServedConfig): void {
    const print = fingerprint(config);
    const existing = this.#entries.get(key);
    if (existing && existing.fingerprint === print) {
      existing.config = config;
      return;
    }
    if (existing) this.#cancel(existing);
    const entry: Entry = { config, fingerprint: print, abort: new AbortController(), rounds: 0 };
    this.#entries.set(key, entry);
    this.#schedule(key, entry, 0);
  }

  remove(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#cancel(entry);
    this.#entries.delete(key);
  }

  has(key: string): boolean {
    return this.#entries.has(key);
  }

  async stop(): Promise<void> {
    const rounds = [...this.#entries.values()].map((e) => e.round);
    for (const key of [...this.#entries.keys()]) this.remove(key);
    await Promise.allSettled(rounds);
  }

  #cancel(entry: Entry): void {
    clearTimeout(entry.timer);
    entry.abort.abort();
  }

  #schedule(key: string, entry: Entry, delayMs: number): void {
    entry.timer = setTimeout(() => {
      entry.round = this.#round(key, entry).catch((err: unknown) =>
        this.#opts.logger?.error('served-card check failed', { key, error: describeError(err) }),
      );
    }, delayMs);
  }

  async #round(key: string, entry: Entry): Promise<void> {
    const { config, abort } = entry;
    const namespace = key.slice(0, Math.max(0, key.indexOf('/')));
    const owner = this.#opts.ownerFor?.(namespace);
    const verdicts: HostVerdict[] = [];
    await Promise.all(
      config.targets.map(async (target) => {
        const card = config.published(target.host);
        if (card === undefined) return; // not published yet: no verdict for this host
        const comparison = await this.#limiter.run(hostKey(target.url), () =>
          checkServedCard(
            target.url,
            { card, keys: config.keys },
            {
              ...this.#opts.fetch,
              ...(owner ? { owner } : {}),
              timeoutMs: config.timeoutMs,
              signal: abort.signal,
            },
          ).catch(
            // Not a failed fetch (those are verdicts) but a fault of the check itself: reported
            // for the host, and the schedule goes on.
            (err: unknown): ServedComparison => ({
              verdict: 'Unreachable',
              paths: [],
              differences: 0,
              detail: `the check failed: ${describeError(err)}`,
            }),
          ),
        );
        verdicts.push({ audience: target.audience, host: target.host, comparison });
      }),
    );
    if (abort.signal.aborted || this.#entries.get(key) !== entry) return;
    const first = entry.rounds === 0;
    entry.rounds++;
    // Every target published: a full round. Otherwise ask again soon, the card is on its way.
    if (verdicts.length === config.targets.length) this.#opts.onRound(key, verdicts);
    const random = (this.#opts.random ?? Math.random)();
    this.#schedule(
      key,
      entry,
      verdicts.length === config.targets.length
        ? roundDelayMs(config.intervalMs, random, first)
        : Math.min(config.intervalMs, 5_000),
    );
  }
}
