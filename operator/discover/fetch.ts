/**
 * Fetching documents from URLs that other people wrote (a catalog's entries, a card's jku):
 * every connection goes through the probes' connection code (operator/probe/connect.ts), so the
 * address policy judges the address actually connected to after DNS; redirects are never
 * followed (a 3xx is an error that says where it pointed); a body is read up to a cap, and a
 * larger Content-Length is refused before reading; each request has a deadline, and the whole
 * run has one too. A small pool of connections is kept per origin for the run (keep-alive), which
 * is what makes a catalog of many cards on one host cheap. With a retry policy, a 503 or 429 that
 * says when to come back (Retry-After) is asked again then, within the policy and the run's
 * deadline (retry.ts).
 */
import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { PROBE_CODES } from '../probe/classify.ts';
import { type CaOption, ProbeFailure, type Resolver, openConnection } from '../probe/connect.ts';
import { hostForUrl } from '../probe/calls.ts';
import { readCapped } from '../probe/http.ts';
import type { AddressPolicy } from '../probe/policy.ts';
import type { OwnerCheck } from '../probe/ownership.ts';
import { type CacheEntry, type DocumentCache, cacheDirectives, isFresh } from './cache.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../catalog/document.ts';
import { shorten } from './plan.ts';
import type { FetchErrorCode } from './report.ts';
import { type RetryPolicy, retryDecision } from './retry.ts';

/** Why a fetch failed, in words a user can act on. `code` is stable (tests and JSON output). */
export class FetchError extends Error {
  override name = 'FetchError';
  readonly code: FetchErrorCode;
  readonly url: string;
  constructor(code: FetchErrorCode, url: string, message: string) {
    super(message);
    this.code = code;
    this.url = url;
  }
}

export interface FetchOptions {
  policy: AddressPolicy;
  /** The namespace rule (probe/ownership.ts), for fetches made on behalf of an AgentCard. */
  owner?: OwnerCheck;
  resolver?: Resolver;
  ca?: CaOption;
  /** Largest body accepted, in bytes. */
  maxBytes: number;
  /** Deadline of one request: connect, headers and body. */
  timeoutMs: number;
  /** Bytes all bodies of the run may add up to. */
  totalBytes: number;
  /** The run's own deadline or cancellation. */
  signal?: AbortSignal;
  /** When the run's deadline passes, by `now`: no wait for a retry may reach it. */
  deadlineAt?: number;
  /** Ask again after a 503 or 429 with Retry-After (none: such an answer is a failure at once). */
  retry?: RetryPolicy;
  cache?: DocumentCache;
  now?: () => number;
  /** Connections kept open per origin (default 8); the crawler's concurrency bounds use. */
  connectionsPerOrigin?: number;
}

export interface Fetched {
  url: string;
  status: number;
  contentType?: string;
  text: string;
  /** Bytes of the body (0 when it came from the cache without a request). */
  bytes: number;
  cache?: 'fresh' | 'revalidated';
}

export const USER_AGENT = 'agentcard-discover/1';
const ACCEPT = 'application/ai-catalog+json, application/a2a-agent-card+json, application/json;q=0.9';

const kib = (n: number) => (n >= 1024 * 1024 ? `${n / (1024 * 1024)} MiB` : `${Math.round(n / 1024)} KiB`);

/** The one-line message of a failed connection, from the probe's failure codes. */
function describeFailure(err: ProbeFailure, timeoutMs: number): { code: FetchErrorCode; message: string } {
  switch (err.code) {
    case PROBE_CODES.blocked:
      return { code: 'blocked', message: `refused by the address policy: ${err.detail ?? ''}`.trim() };
    case 'ETIMEDOUT':
    case PROBE_CODES.timeout:
    case PROBE_CODES.connectTimeout:
      return { code: 'timeout', message: `no answer within ${timeoutMs / 1000}s` };
    case 'ECONNREFUSED':
      return { code: 'connect', message: 'connection refused' };
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case PROBE_CODES.noAddress:
      return { code: 'dns', message: `cannot resolve ${err.detail ?? 'the host'}` };
    default:
      return /CERT|TLS|SSL|SELF_SIGNED|HOSTNAME/i.test(err.code)
        ? { code: 'tls', message: `TLS: ${err.code}` }
        : { code: 'connect', message: `cannot connect (${err.code})` };
  }
}

/** Drops a body that will not be read; the abort this causes is expected, not an error. */
function discard(body: Readable): void {
  body.on('error', () => {});
  body.destroy();
}

export class Fetcher {
  readonly opts: FetchOptions;
  #clients = new Map<string, Pool>();
  #spent = 0;
  /** Requests actually sent (not answered from the cache), for reports and tests. */
  requests = 0;

  constructor(opts: FetchOptions) {
    this.opts = opts;
  }

  get bytesRead(): number {
    return this.#spent;
  }

  #client(url: URL): Pool {
    const origin = url.origin;
    let client = this.#clients.get(origin);
    if (client) return client;
    const secure = url.protocol === 'https:';
    const endpoint = {
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: Number(url.port || (secure ? 443 : 80)),
    };
    client = new Pool(`${url.protocol}//${hostForUrl(endpoint.hostname)}:${endpoint.port}`, {
      connections: this.opts.connectionsPerOrigin ?? 8,
      pipelining: 1,
      keepAliveTimeout: 4_000,
      // The request's own deadline bounds everything; these are backstops.
      headersTimeout: 0,
      bodyTimeout: 0,
      maxHeaderSize: 16 * 1024,
      connect: (_o, callback) => {
        const signal = this.opts.signal
          ? AbortSignal.any([this.opts.signal, AbortSignal.timeout(this.opts.timeoutMs)])
          : AbortSignal.timeout(this.opts.timeoutMs);
        openConnection(endpoint, {
          policy: this.opts.policy,
          ...(this.opts.owner ? { owner: this.opts.owner } : {}),
          resolver: this.opts.resolver,
          connectTimeoutMs: Math.min(this.opts.timeoutMs, 5_000),
          signal,
          phases: {},
          tls: secure ? { alpn: ['http/1.1'], ca: this.opts.ca } : undefined,
        }).then(
          (connection) => callback(null, connection.socket),
          (err: Error) => callback(err, null),
        );
      },
    });
    this.#clients.set(origin, client);
    return client;
  }

  /** GETs a URL (http or https, already checked by parseTargetUrl) and returns its body text. */
  async get(href: string): Promise<Fetched> {
    const url = new URL(href);
    const now = this.opts.now ?? Date.now;
    const cached = this.opts.cache ? await this.opts.cache.get(url.href) : undefined;
    if (cached && isFresh(cached, now())) {
      return {
        url: url.href,
        status: 200,
        contentType: cached.contentType,
        text: cached.text,
        bytes: 0,
        cache: 'fresh',
      };
    }
    // Ends: #request asks for another attempt only while the retry policy allows one.
    for (let attempts = 1; ; attempts++) {
      const answer = await this.#request(url, cached, attempts);
      if (!('retryInMs' in answer)) return answer;
      await this.#wait(url, answer.retryInMs);
    }
  }

  /** Waits before asking again; the run's end ends the wait, as it ends a request. */
  async #wait(url: URL, ms: number): Promise<void> {
    try {
      await sleep(ms, undefined, this.opts.signal ? { signal: this.opts.signal } : {});
    } catch {
      throw new FetchError('deadline', url.href, "the run's deadline passed");
    }
  }

  /** One request: the document, or when the server asked to be asked again. */
  async #request(
    url: URL,
    cached: CacheEntry | undefined,
    attempts: number,
  ): Promise<Fetched | { retryInMs: number }> {
    const cache = this.opts.cache;
    const now = this.opts.now ?? Date.now;
    const deadline = AbortSignal.timeout(this.opts.timeoutMs);
    const signal = this.opts.signal ? AbortSignal.any([deadline, this.opts.signal]) : deadline;
    const fail = (code: FetchErrorCode, message: string) => new FetchError(code, url.href, message);
    this.requests++;
    try {
      const response = await this.#client(url).request({
        method: 'GET',
        path: `${url.pathname}${url.search}`,
        headers: {
          'user-agent': USER_AGENT,
          accept: ACCEPT,
          // A server that speaks several A2A versions picks the 1.0 card (A2A spec section 3.6.2).
          'a2a-version': '1.0',
          ...(cached?.etag ? { 'if-none-match': cached.etag } : {}),
        },
        signal,
      });
      const header = (name: string) => {
        const value = response.headers[name];
        return Array.isArray(value) ? value[0] : value;
      };
      const status = response.statusCode;
      if (status === 304 && cached) {
        discard(response.body);
        const directives = cacheDirectives(header('cache-control'), header('etag') ?? cached.etag);
        await cache!.put({
          ...cached,
          storedAt: now(),
          maxAgeSeconds: directives.maxAgeSeconds,
          noCache: directives.noCache,
        });
        return {
          url: url.href,
          status: 200,
          contentType: cached.contentType,
          text: cached.text,
          bytes: 0,
          cache: 'revalidated',
        };
      }
      if (status >= 300 && status < 400) {
        discard(response.body);
        const location = header('location');
        throw fail(
          'redirect',
          `HTTP ${status} redirect${location ? ` to ${shorten(location)}` : ''} not followed (discovery follows no redirects)`,
        );
      }
      if (status < 200 || status > 299) {
        discard(response.body);
        const decision = this.opts.retry
          ? retryDecision({
              status,
              retryAfter: response.headers['retry-after'],
              attempts,
              nowMs: now(),
              deadlineAt: this.opts.deadlineAt,
              policy: this.opts.retry,
            })
          : undefined;
        if (decision?.retry) return { retryInMs: decision.delayMs };
        throw fail(status === 404 ? 'not-found' : 'http', decision?.message ?? `HTTP ${status}`);
      }
      const room = Math.min(this.opts.maxBytes, this.opts.totalBytes - this.#spent);
      const claimed = Number(header('content-length'));
      if (Number.isFinite(claimed) && claimed > this.opts.maxBytes) {
        discard(response.body);
        throw fail(
          'too-large',
          `the body claims ${claimed} bytes, over the ${kib(this.opts.maxBytes)} limit`,
        );
      }
      const { text, truncated } = await readCapped(response.body, Math.max(room, 0));
      const bytes = Buffer.byteLength(text);
      this.#spent += bytes;
      if (truncated) {
        throw room < this.opts.maxBytes
          ? fail('budget', `the run's total of ${kib(this.opts.totalBytes)} read is exhausted`)
          : fail('too-large', `the body is larger than the ${kib(this.opts.maxBytes)} limit`);
      }
      const contentType = header('content-type');
      if (cache) {
        const etag = header('etag');
        const directives = cacheDirectives(header('cache-control'), etag);
        if (directives.store) {
          await cache.put({
            url: url.href,
            etag,
            contentType,
            storedAt: now(),
            maxAgeSeconds: directives.maxAgeSeconds,
            noCache: directives.noCache,
            text,
          });
        }
      }
      return { url: url.href, status, contentType, text, bytes };
    } catch (err) {
      if (err instanceof FetchError) throw err;
      if (this.opts.signal?.aborted) throw fail('deadline', "the run's deadline passed");
      if (err instanceof ProbeFailure) {
        const { code, message } = describeFailure(err, this.opts.timeoutMs);
        throw fail(code, message);
      }
      if (deadline.aborted) throw fail('timeout', `no complete answer within ${this.opts.timeoutMs / 1000}s`);
      const code = (err as { code?: unknown })?.code;
      throw fail(
        'http',
        `the request failed (${typeof code === 'string' ? code : ((err as Error)?.name ?? 'error')})`,
      );
    }
  }

  async close(): Promise<void> {
    const clients = [...this.#clients.values()];
    this.#clients.clear();
    await Promise.all(clients.map((c) => c.destroy().catch(() => {})));
  }
}

/** Parses a fetched body as JSON; the error names the URL and content type, never the body. */
export function parseJsonBody(fetched: Fetched): unknown {
  let value: unknown;
  try {
    value = JSON.parse(fetched.text);
  } catch {
    const type = fetched.contentType ? ` (content-type ${shorten(fetched.contentType, 80)})` : '';
    throw new FetchError('not-json', fetched.url, `the body is not JSON${type}`);
  }
  if (nestsDeeperThan(value, MAX_JSON_DEPTH)) {
    throw new FetchError('too-deep', fetched.url, `the JSON nests deeper than ${MAX_JSON_DEPTH} levels`);
  }
  return value;
}
