/**
 * Fetching a card from a public host as a client would, for the served-card check. The host is
 * the user's, so it is fetched like any hostile URL, with the same fetcher and limits as adopted cards
 * (operator/source/fetch.ts): the discover fetcher, which connects through the probes'
 * connection code under the probes' address policy and namespace rule (the address actually
 * connected to is judged, after DNS), follows no redirect, caps the body and bounds the request
 * with a deadline. Nothing is cached: each check asks again. Never rejects; a failure's reason
 * names the failure, never a body or a header.
 */
import { FetchError, Fetcher } from '../discover/fetch.ts';
import type { CaOption, Resolver } from '../probe/connect.ts';
import type { OwnerCheck } from '../probe/ownership.ts';
import type { AddressPolicy } from '../probe/policy.ts';
import type { JWKS } from '../card/verify.ts';
import { compareServed, type ServedComparison, type ServedFetch } from './compare.ts';

/** Largest card accepted, as for an adopted card: far above any real card. */
export const MAX_SERVED_BYTES = 512 * 1024;
/** Default deadline of one fetch: connect, headers and the whole body. */
export const SERVED_TIMEOUT_MS = 10_000;

export interface ServedFetchOptions {
  policy: AddressPolicy;
  owner?: OwnerCheck;
  resolver?: Resolver;
  ca?: CaOption;
  signal?: AbortSignal;
  timeoutMs?: number;
  maxBytes?: number;
}

/** GETs one card URL; the body text, or why there is none. */
export async function fetchServedCard(url: string, opts: ServedFetchOptions): Promise<ServedFetch> {
  const maxBytes = opts.maxBytes ?? MAX_SERVED_BYTES;
  const fetcher = new Fetcher({
    policy: opts.policy,
    ...(opts.owner ? { owner: opts.owner } : {}),
    ...(opts.resolver ? { resolver: opts.resolver } : {}),
    ...(opts.ca ? { ca: opts.ca } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
    maxBytes,
    timeoutMs: opts.timeoutMs ?? SERVED_TIMEOUT_MS,
    totalBytes: maxBytes,
    connectionsPerOrigin: 1,
  });
  try {
    const fetched = await fetcher.get(url);
    return { ok: true, text: fetched.text };
  } catch (err) {
    if (!(err instanceof FetchError)) throw err;
    // The discover fetcher's wording names discovery; here it is the operator's check.
    return {
      ok: false,
      reason: err.message.replace(' (discovery follows no redirects)', ' (redirects are never followed)'),
    };
  } finally {
    await fetcher.close();
  }
}

/** Fetches `url` and compares what came with the published card (compare.ts). */
export async function checkServedCard(
  url: string,
  published: { card: string; keys: JWKS },
  opts: ServedFetchOptions,
): Promise<ServedComparison> {
  return compareServed(published.card, published.keys, await fetchServedCard(url, opts));
}
