/**
 * Fetching an agent's own card (spec.source). The URL is the user's, so it is fetched like any
 * hostile URL: through the discover fetcher (operator/discover/fetch.ts), which connects through
 * the probes' connection code under the probes' address policy and namespace rule (the address
 * actually connected to is judged, after DNS), follows no redirect, caps the body and bounds
 * the whole request with a deadline. Each fetch revalidates with the ETag of the last answer
 * (If-None-Match), whatever Cache-Control says: the re-fetch interval is spec.source.interval.
 *
 * The classification of a result (reasons, messages) is pure: classifyFetchError.
 */
import { createHash } from 'node:crypto';
import type { SourceAvailableReason } from '../api/reasons.ts';
import { FetchError, Fetcher, parseJsonBody } from '../discover/fetch.ts';
import type { FetchErrorCode } from '../discover/report.ts';
import type { CacheEntry, DocumentCache } from '../discover/cache.ts';
import type { AddressPolicy } from '../probe/policy.ts';
import type { CaOption, Resolver } from '../probe/connect.ts';
import type { OwnerCheck } from '../probe/ownership.ts';
import { SOURCE_PATHS, type Source } from '../card/resource.ts';
import { toV1, type ConvertedCard } from './convert.ts';

/** Largest card accepted: far above any real card, and below what one ConfigMap can hold. */
export const MAX_SOURCE_BYTES = 512 * 1024;
/** Deadline of one fetch: connect, headers and the whole body (a card that trickles is cut). */
export const SOURCE_TIMEOUT_MS = 10_000;

/**
 * Reasons of SourceAvailable=False, one per way a fetch fails: each one of SourceAvailable's
 * reasons (operator/api/reasons.ts, the list the CRD description is made from), checked here by
 * the compiler.
 */
export const SOURCE_REASONS = {
  blocked: 'SourceBlocked',
  timeout: 'SourceTimeout',
  redirect: 'SourceRedirected',
  tooLarge: 'SourceTooLarge',
  notFound: 'SourceNotFound',
  http: 'SourceHTTPError',
  dns: 'SourceDNSFailed',
  connect: 'SourceUnreachable',
  tls: 'SourceTLSError',
  notJson: 'SourceNotJSON',
  invalid: 'SourceCardInvalid',
  signature: 'SourceSignatureInvalid',
  port: 'SourceServicePortNotFound',
} as const satisfies Record<string, SourceAvailableReason>;

/** Why a fetch of the source failed; `SourceFetchDisabled` when this operator does not fetch. */
export type SourceFailureReason =
  (typeof SOURCE_REASONS)[keyof typeof SOURCE_REASONS] | 'SourceFetchDisabled';

export type SourceFailure = { ok: false; url: string; reason: SourceFailureReason; message: string };
export type SourceFetched = {
  ok: true;
  url: string;
  digest: string;
  /** The served JSON (with its signatures, for verification). */
  served: Record<string, unknown>;
  converted: ConvertedCard;
};
export type SourceResult = SourceFetched | SourceFailure;

/** The reason of each fetch error code: every code has one (a new code does not compile without). */
const REASON_OF_CODE: Record<FetchErrorCode, SourceFailureReason> = {
  blocked: SOURCE_REASONS.blocked,
  timeout: SOURCE_REASONS.timeout,
  deadline: SOURCE_REASONS.timeout,
  redirect: SOURCE_REASONS.redirect,
  'too-large': SOURCE_REASONS.tooLarge,
  budget: SOURCE_REASONS.tooLarge,
  'not-found': SOURCE_REASONS.notFound,
  http: SOURCE_REASONS.http,
  dns: SOURCE_REASONS.dns,
  connect: SOURCE_REASONS.connect,
  tls: SOURCE_REASONS.tls,
  'not-json': SOURCE_REASONS.notJson,
  'too-deep': SOURCE_REASONS.invalid,
};

/** The reason and message of a failed fetch (pure). Never includes the body. */
export function classifyFetchError(
  code: FetchErrorCode,
  message: string,
): { reason: SourceFailureReason; message: string } {
  // A code from elsewhere (a value outside the type at run time) is an HTTP error, not a crash.
  const reason = Object.hasOwn(REASON_OF_CODE, code) ? REASON_OF_CODE[code] : SOURCE_REASONS.http;
  // The discover fetcher's wording names discovery; here it is the operator's fetch.
  return {
    reason,
    message: message.replace(' (discovery follows no redirects)', ' (redirects are never followed)'),
  };
}

/** "sha256:<hex>" of the bytes as served. */
export const sourceDigest = (text: string): string =>
  `sha256:${createHash('sha256').update(text).digest('hex')}`;

/**
 * The URLs to try, in order (pure): a written path is the only one; the default path falls back
 * to the legacy agent.json (A2A 0.2's well-known name) when the first answers 404.
 */
export function sourceUrls(source: Source, namespace: string, port?: number): string[] {
  if (source.url !== undefined) {
    const url = new URL(source.url);
    if (url.pathname !== '/' || url.search) return [url.href];
    return SOURCE_PATHS.map((p) => new URL(p, url).href);
  }
  const service = source.service!;
  const scheme = service.scheme ?? 'http';
  const origin = `${scheme}://${service.name}.${namespace}.svc:${port ?? service.port}`;
  return (source.path !== undefined ? [source.path] : [...SOURCE_PATHS]).map((p) => `${origin}${p}`);
}

/** A cache of one URL's last answer, always revalidated (the interval decides when to ask). */
export class RevalidatingCache implements DocumentCache {
  #entries = new Map<string, CacheEntry>();
  async get(url: string): Promise<CacheEntry | undefined> {
    const entry = this.#entries.get(url);
    return entry ? { ...entry, noCache: true } : undefined;
  }
  async put(entry: CacheEntry): Promise<void> {
    // Only the answers that carry an ETag are useful: without one there is nothing to revalidate.
    if (entry.etag) this.#entries.set(entry.url, entry);
  }
}

export interface SourceFetchOptions {
  policy: AddressPolicy;
  owner?: OwnerCheck;
  resolver?: Resolver;
  ca?: CaOption;
  signal?: AbortSignal;
  cache?: DocumentCache;
  timeoutMs?: number;
  maxBytes?: number;
}

/** Fetches the card from the first URL that does not answer 404. Never rejects. */
export async function fetchSourceCard(
  urls: readonly string[],
  opts: SourceFetchOptions,
): Promise<SourceResult> {
  const maxBytes = opts.maxBytes ?? MAX_SOURCE_BYTES;
  const fetcher = new Fetcher({
    policy: opts.policy,
    ...(opts.owner ? { owner: opts.owner } : {}),
    ...(opts.resolver ? { resolver: opts.resolver } : {}),
    ...(opts.ca ? { ca: opts.ca } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
    ...(opts.cache ? { cache: opts.cache } : {}),
    maxBytes,
    timeoutMs: opts.timeoutMs ?? SOURCE_TIMEOUT_MS,
    totalBytes: maxBytes * urls.length,
    connectionsPerOrigin: 1,
  });
  let failure: SourceFailure | undefined;
  try {
    for (const url of urls) {
      try {
        const fetched = await fetcher.get(url);
        const json = parseJsonBody(fetched);
        if (!json || typeof json !== 'object' || Array.isArray(json)) {
          return {
            ok: false,
            url,
            reason: SOURCE_REASONS.notJson,
            message: 'the body is JSON but not an object',
          };
        }
        const served = json as Record<string, unknown>;
        return { ok: true, url, digest: sourceDigest(fetched.text), served, converted: toV1(served) };
      } catch (err) {
        if (!(err instanceof FetchError)) throw err;
        failure = { ok: false, url, ...classifyFetchError(err.code, err.message) };
        if (err.code !== 'not-found') return failure;
      }
    }
    return failure!;
  } finally {
    await fetcher.close();
  }
}
