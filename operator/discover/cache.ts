/**
 * `--cache DIR`: documents kept between runs, used the HTTP way (RFC 9111). A stored answer is
 * reused without a request while `Cache-Control: max-age` says it is fresh; after that it is
 * revalidated with `If-None-Match` (RFC 9110 section 13.1.2), and a 304 reuses it. `no-store`
 * is never stored; `no-cache` is always revalidated. The A2A TCK checks agents for exactly these
 * headers (CARD-CACHE-001..003), so honouring them is what a polite client does.
 *
 * The decisions are pure (cacheDirectives, isFresh); DirectoryCache only reads and writes files.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface CacheEntry {
  url: string;
  etag?: string;
  contentType?: string;
  /** When the answer was received or last revalidated (ms since the epoch). */
  storedAt: number;
  maxAgeSeconds?: number;
  /** `no-cache`: may be stored, but is revalidated every time. */
  noCache?: boolean;
  text: string;
}

export interface Directives {
  store: boolean;
  maxAgeSeconds?: number;
  noCache: boolean;
}

/** What Cache-Control and ETag allow: store when there is a validator or a freshness lifetime. */
export function cacheDirectives(cacheControl: string | undefined, etag: string | undefined): Directives {
  const parts = (cacheControl ?? '')
    .toLowerCase()
    .split(',')
    .map((p) => p.trim());
  const noStore = parts.includes('no-store');
  // must-revalidate needs nothing more: a stale answer is always revalidated here.
  const noCache = parts.some((p) => p === 'no-cache' || p.startsWith('no-cache='));
  const maxAge = parts.map((p) => /^max-age=(\d+)$/.exec(p)?.[1]).find((v) => v !== undefined);
  const maxAgeSeconds = maxAge === undefined ? undefined : Number(maxAge);
  const store = !noStore && (etag !== undefined || (maxAgeSeconds ?? 0) > 0);
  return { store, maxAgeSeconds, noCache };
}

/** Whether a stored answer may be used without asking the server again. */
export function isFresh(entry: CacheEntry, now: number): boolean {
  if (entry.noCache || !entry.maxAgeSeconds) return false;
  return now - entry.storedAt < entry.maxAgeSeconds * 1000;
}

export interface DocumentCache {
  get(url: string): Promise<CacheEntry | undefined>;
  put(entry: CacheEntry): Promise<void>;
}

/** One JSON file per URL, named by the URL's SHA-256; unreadable files count as absent. */
export class DirectoryCache implements DocumentCache {
  readonly dir: string;
  #ready: Promise<unknown> | undefined;

  constructor(dir: string) {
    this.dir = dir;
  }

  #file(url: string): string {
    return join(this.dir, `${createHash('sha256').update(url).digest('hex')}.json`);
  }

  async get(url: string): Promise<CacheEntry | undefined> {
    try {
      const entry = JSON.parse(await readFile(this.#file(url), 'utf8')) as CacheEntry;
      return entry.url === url && typeof entry.text === 'string' && typeof entry.storedAt === 'number'
        ? entry
        : undefined;
    } catch {
      return undefined;
    }
  }

  async put(entry: CacheEntry): Promise<void> {
    this.#ready ??= mkdir(this.dir, { recursive: true });
    await this.#ready;
    const file = this.#file(entry.url);
    // Write then rename: a reader (or a second run) never sees half a file.
    const temp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    await writeFile(temp, JSON.stringify(entry));
    await rename(temp, file);
  }
}
