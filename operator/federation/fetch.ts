/**
 * The import's fetches: every document of a remote catalog (the catalog, its nested catalogs, its
 * cards) is a URL someone else wrote, so it goes through the discover fetcher
 * (operator/discover/fetch.ts) under the operator's address policy (the probes' flags), with no
 * redirects, a size cap per document and for the whole run, a deadline per request and one for
 * the run. Each document is revalidated with the ETag of its last answer (If-None-Match), so an
 * origin that answers 304 sends nothing again.
 */
import type { CacheEntry, DocumentCache } from '../discover/cache.ts';
import { Fetcher } from '../discover/fetch.ts';
import type { CaOption, Resolver } from '../probe/connect.ts';
import type { AddressPolicy } from '../probe/policy.ts';
import type { Document } from './crawl.ts';

/** The limits of one import run: far above a real catalog, bounded for a hostile one. */
export const IMPORT_LIMITS = {
  /** Largest document (a catalog or a card). */
  maxBytes: 2 * 1024 * 1024,
  /** Bytes one run may read (500 cards of 4 KB take 2 MB). */
  totalBytes: 128 * 1024 * 1024,
  /** Deadline of one request. */
  timeoutMs: 10_000,
  /** Deadline of the whole run. */
  runMs: 120_000,
  /** Connections kept per origin during a run; card fetches in flight at once. */
  concurrency: 8,
} as const;

/**
 * The last answer of each URL that carried an ETag, always revalidated. Only the URLs of the last
 * run are kept (`prune`), so a catalog that drops cards does not leave their bytes here.
 */
export class ImportCache implements DocumentCache {
  #entries = new Map<string, CacheEntry>();
  #used = new Set<string>();

  async get(url: string): Promise<CacheEntry | undefined> {
    this.#used.add(url);
    const entry = this.#entries.get(url);
    return entry ? { ...entry, noCache: true } : undefined;
  }

  async put(entry: CacheEntry): Promise<void> {
    if (entry.etag) this.#entries.set(entry.url, entry);
    else this.#entries.delete(entry.url);
  }

  /** Forgets every URL the run that just ended did not ask for. */
  prune(): void {
    for (const url of this.#entries.keys()) if (!this.#used.has(url)) this.#entries.delete(url);
    this.#used.clear();
  }

  get size(): number {
    return this.#entries.size;
  }
}

export interface ImportFetchOptions {
  policy: AddressPolicy;
  ca?: CaOption;
  resolver?: Resolver;
  cache: ImportCache;
  signal: AbortSignal;
}

/**
 * A fetcher for one run; `close` it at the end, pruning the cache after a run that read the whole
 * catalog (after a failed one, the cards it did not reach are kept for the next).
 */
export function importFetcher(opts: ImportFetchOptions): {
  get: (url: string) => Promise<Document>;
  close: (prune: boolean) => Promise<void>;
} {
  const fetcher = new Fetcher({
    policy: opts.policy,
    ...(opts.ca ? { ca: opts.ca } : {}),
    ...(opts.resolver ? { resolver: opts.resolver } : {}),
    maxBytes: IMPORT_LIMITS.maxBytes,
    totalBytes: IMPORT_LIMITS.totalBytes,
    timeoutMs: IMPORT_LIMITS.timeoutMs,
    signal: AbortSignal.any([opts.signal, AbortSignal.timeout(IMPORT_LIMITS.runMs)]),
    deadlineAt: Date.now() + IMPORT_LIMITS.runMs,
    cache: opts.cache,
    connectionsPerOrigin: IMPORT_LIMITS.concurrency,
  });
  return {
    get: async (url) => ({ text: (await fetcher.get(url)).text }),
    close: async (prune) => {
      if (prune) opts.cache.prune();
      await fetcher.close();
    },
  };
}
