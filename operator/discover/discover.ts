/**
 * discover(): from URLs (origins, cards or catalogs) to a report on every card found, checked
 * against keys the user trusts and, with `probe`, proven reachable by a real A2A call per
 * interface. Composes the pieces: fetch.ts (SSRF policy, limits, cache), crawl.ts (catalogs,
 * nesting, loops), check.ts (validation and signatures), filter.ts and the probes.
 */
import { parseJwks } from '../card/jwks.ts';
import type { JWKS } from '../card/verify.ts';
import { parseTrustBundle, type CertificateTrust } from '../card/x5c.ts';
import { describeError } from '../errors.ts';
import type { CaOption, Resolver } from '../probe/connect.ts';
import { ProbeLimiter, hostKey } from '../probe/limiter.ts';
import type { AddressPolicy } from '../probe/policy.ts';
import { probeInterface } from '../probe/probe.ts';
import type { DocumentCache } from './cache.ts';
import { type CrawlLimits, Crawler } from './crawl.ts';
import { Fetcher, FetchError } from './fetch.ts';
import { type CardFilter, matchesFilter } from './filter.ts';
import { parseTargetUrl, redactUrl } from './plan.ts';
import { DISCOVER_RETRY } from './retry.ts';
import type { CardReport, DiscoverReport, ErrorReport } from './report.ts';
import type { Trust } from './trust.ts';

export interface DiscoverLimits extends CrawlLimits {
  /** Largest document, in bytes. */
  maxBytes: number;
  /** Bytes the whole run may read. */
  totalBytes: number;
  /** Deadline of one request. */
  timeoutMs: number;
  /** Deadline of the whole discovery (probes excepted: each has its own). */
  deadlineMs: number;
}

/** Defaults: the AI Catalog spec's recommended depth; sizes well above any real card or catalog. */
export const DEFAULT_LIMITS: DiscoverLimits = {
  maxDepth: 4,
  maxDocuments: 2000,
  concurrency: 16,
  maxBytes: 1024 * 1024,
  totalBytes: 256 * 1024 * 1024,
  timeoutMs: 10_000,
  deadlineMs: 120_000,
};

export interface DiscoverOptions {
  urls: string[];
  /** Trusted keys already read (from files). */
  jwks?: JWKS;
  /** Trusted key sets to fetch (URLs the user gave). */
  jwksUrls?: string[];
  trustJku?: boolean;
  /**
   * Trust in certificate chains (x5c): identity patterns, with the bundle's certificates already
   * read (`roots`) and/or bundles to fetch (`bundleUrls`, PEM).
   */
  certificates?: { roots: CertificateTrust['roots']; identities: readonly string[]; bundleUrls?: string[] };
  policy: AddressPolicy;
  resolver?: Resolver;
  ca?: CaOption;
  limits?: Partial<DiscoverLimits>;
  cache?: DocumentCache;
  /** Probe every interface of every listed valid card, with this per-interface deadline. */
  probe?: { timeoutMs: number };
  filter?: CardFilter;
}

export async function discover(opts: DiscoverOptions): Promise<DiscoverReport> {
  const started = performance.now();
  const limits = { ...DEFAULT_LIMITS, ...opts.limits };
  const fetcher = new Fetcher({
    policy: opts.policy,
    resolver: opts.resolver,
    ca: opts.ca,
    maxBytes: limits.maxBytes,
    totalBytes: limits.totalBytes,
    timeoutMs: limits.timeoutMs,
    signal: AbortSignal.timeout(limits.deadlineMs),
    deadlineAt: Date.now() + limits.deadlineMs,
    retry: DISCOVER_RETRY,
    cache: opts.cache,
    connectionsPerOrigin: limits.concurrency,
  });
  const errors: ErrorReport[] = [];
  try {
    const keys = [...(opts.jwks?.keys ?? [])];
    for (const url of opts.jwksUrls ?? []) {
      try {
        const fetched = await fetcher.get(parseTargetUrl(url).href);
        keys.push(...parseJwks(fetched.text, url).keys);
      } catch (err) {
        const shown = redactUrl(url);
        errors.push({ url: shown, via: [], code: 'jwks', message: `--jwks ${shown}: ${describeError(err)}` });
      }
    }
    let certificates: CertificateTrust | undefined;
    if (opts.certificates) {
      const roots = [...opts.certificates.roots];
      for (const url of opts.certificates.bundleUrls ?? []) {
        const shown = redactUrl(url);
        try {
          const fetched = await fetcher.get(parseTargetUrl(url).href);
          roots.push(...parseTrustBundle(fetched.text, 'the response'));
        } catch (err) {
          errors.push({
            url: shown,
            via: [],
            code: 'trust-bundle',
            message: `--trust-bundle ${shown}: ${describeError(err)}`,
          });
        }
      }
      certificates = { roots, identities: opts.certificates.identities };
    }
    const jkuSets = new Map<string, Promise<JWKS>>();
    const trust: Trust = {
      jwks: { keys },
      trustJku: opts.trustJku ?? false,
      ...(certificates ? { certificates } : {}),
      fetchJwks: (url) => {
        let set = jkuSets.get(url);
        if (!set) {
          set = fetcher.get(url).then(
            (fetched) => parseJwks(fetched.text, url),
            (err: unknown) => {
              throw new Error(err instanceof FetchError ? `${url}: ${err.message}` : describeError(err));
            },
          );
          jkuSets.set(url, set);
        }
        return set;
      },
    };

    const crawler = new Crawler(fetcher, trust, limits);
    await Promise.all(opts.urls.map((url) => crawler.start(url)));
    const found = crawler.result;
    const cards = opts.filter ? found.cards.filter((c) => matchesFilter(c, opts.filter!)) : found.cards;
    if (opts.probe) await probeCards(cards, opts, opts.probe.timeoutMs);
    const all = [...errors, ...found.errors];
    return {
      cards,
      catalogs: found.catalogs,
      errors: all,
      filteredOut: found.cards.length - cards.length,
      ok: all.length === 0 && cards.every((c) => c.ok),
      stats: {
        requests: fetcher.requests,
        bytes: fetcher.bytesRead,
        durationMs: Math.round(performance.now() - started),
      },
    };
  } finally {
    await fetcher.close();
  }
}

/** Probes the interfaces of every valid card (an invalid card's URLs are not worth a call). */
async function probeCards(cards: CardReport[], opts: DiscoverOptions, timeoutMs: number): Promise<void> {
  const limiter = new ProbeLimiter({ global: 8, perHost: 4 });
  await Promise.all(
    cards
      .filter((card) => !card.problems.some((p) => p.severity === 'error'))
      .flatMap((card) =>
        card.interfaces.map(async (iface) => {
          const result = await limiter.run(hostKey(iface.url), () =>
            probeInterface(iface, { timeoutMs, policy: opts.policy, resolver: opts.resolver, ca: opts.ca }),
          );
          iface.probe = {
            reachable: result.reachable,
            reason: result.reason,
            message: result.message,
            latencyMs: result.latencyMs,
          };
          if (!result.reachable && result.reason !== 'Unsupported') card.ok = false;
        }),
      ),
  );
}
