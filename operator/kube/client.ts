/**
 * The operator's Kubernetes REST client: JSON over undici, authenticated by client-node's
 * KubeConfig (the headers, TLS material and proxy of the current context, with one connection
 * pool per TLS setting: client-node.ts).
 *
 * The operator does not use client-node's generated API classes: loading them costs about 35 MiB
 * of resident memory (24 MB of JavaScript), and each call goes through web fetch and an object
 * serializer that cost more CPU than the reconcile itself at 1,000 AgentCards
 * (docs/BENCHMARKS.md, "Controller scale"). The handful of calls it makes are in api.ts.
 */
import { request, type Dispatcher } from 'undici';
import { KubeAuthenticator, type KubeAuth, type KubeConfig } from './client-node.ts';

/** Content types of the write verbs (https://kubernetes.io/docs/reference/using-api/api-concepts/). */
export const CONTENT_TYPE = {
  json: 'application/json',
  /** Server-side apply; a JSON document is a YAML document. */
  apply: 'application/apply-patch+yaml',
  jsonPatch: 'application/json-patch+json',
} as const;

type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOptions {
  query?: Query;
  /** Sent as JSON. */
  body?: unknown;
  contentType?: string;
  /** Overrides the Accept header (e.g. METADATA_ONLY.list). */
  accept?: string;
  signal?: AbortSignal;
}

/**
 * Accept headers asking for metadata only (PartialObjectMetadata) instead of whole objects, as
 * client-go's metadata client does. A list and a watch need different ones: a watch offered the
 * list form as well answers 200 and then sends nothing.
 * https://kubernetes.io/docs/reference/using-api/api-concepts/#receiving-resources-as-tables
 */
export const METADATA_ONLY = {
  list: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1',
  watch: 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1',
} as const;

/** An answer of the API server other than 2xx; `body` is its Status object when it sent one. */
export class ApiError extends Error {
  readonly statusCode: number;
  readonly body: { message?: string; reason?: string; code?: number } | undefined;
  constructor(statusCode: number, body: ApiError['body']) {
    super(`HTTP ${statusCode}${body?.message ? `: ${body.message}` : ''}`);
    this.name = 'ApiError';
    this.statusCode = statusCode;
    this.body = body;
  }
}

/** One line of a watch stream (https://kubernetes.io/docs/reference/using-api/api-concepts/#watch-bookmarks). */
export interface WatchEvent<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: T;
}

const USER_AGENT = 'agentcard-operator';
const AUTH_REUSE_MS = 1_000;
const REQUEST_TIMEOUT_MS = 60_000;

function parseStatus(text: string): ApiError['body'] {
  try {
    const parsed = JSON.parse(text) as unknown;
    return parsed && typeof parsed === 'object' ? (parsed as ApiError['body']) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * JSON.parse, with an error that does not quote the text: an answer may hold a Secret, and parse
 * errors end up in logs.
 */
export function parseAnswer(text: string, method: string, path: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`the API server's answer to ${method} ${path} is not JSON`);
  }
}

export interface KubeClientOptions {
  /**
   * Told the outcome of every request: called with no argument when the API server answered
   * (any status), with the error otherwise or for a non-2xx answer. health.ts's ApiHealth
   * turns this into a circuit breaker.
   */
  observe?: (err?: unknown) => void;
}

export class KubeClient {
  readonly kubeConfig: KubeConfig;
  private readonly server: string;
  private readonly authenticator: KubeAuthenticator;
  private readonly observe: (err?: unknown) => void;
  private cachedAuth: { at: number; resolved: Promise<KubeAuth> } | undefined;

  constructor(kubeConfig: KubeConfig, opts: KubeClientOptions = {}) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('the Kubernetes configuration has no current cluster');
    this.kubeConfig = kubeConfig;
    this.authenticator = new KubeAuthenticator(kubeConfig);
    this.observe = opts.observe ?? (() => {});
    this.server = cluster.server.replace(/\/+$/, '');
  }

  /** The URL of `path` (which starts with /api or /apis) with `query`. */
  url(path: string, query?: Query): string {
    let url = this.server + path;
    let sep = '?';
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value === undefined) continue;
      url += `${sep}${encodeURIComponent(key)}=${encodeURIComponent(String(value))}`;
      sep = '&';
    }
    return url;
  }

  /**
   * The authentication of the current context, reused for up to a second: resolving it reads the
   * CA and token files and hashes the TLS material on every call (about 5% of the operator's CPU
   * at 1,000 AgentCards), while tokens and certificates change on a scale of minutes.
   */
  private async auth(): Promise<KubeAuth> {
    const now = Date.now();
    if (!this.cachedAuth || now - this.cachedAuth.at > AUTH_REUSE_MS) {
      const resolved = this.resolveAuth();
      this.cachedAuth = { at: now, resolved };
      // A failure is not reused: the next request asks again.
      resolved.catch(() => {
        if (this.cachedAuth?.resolved === resolved) this.cachedAuth = undefined;
      });
    }
    const { headers, dispatcher } = await this.cachedAuth.resolved;
    return { headers: { ...headers }, dispatcher };
  }

  private async resolveAuth(): Promise<KubeAuth> {
    const { headers, dispatcher } = await this.authenticator.authenticate();
    return { headers: { 'user-agent': USER_AGENT, accept: CONTENT_TYPE.json, ...headers }, dispatcher };
  }

  /** One request; resolves with the parsed JSON answer, rejects with ApiError on a non-2xx. */
  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const { headers, dispatcher } = await this.auth();
    if (opts.accept) headers.accept = opts.accept;
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] = opts.contentType ?? CONTENT_TYPE.json;
    }
    let text: string;
    let statusCode: number;
    try {
      const res = await request(this.url(path, opts.query), {
        method: method as Dispatcher.HttpMethod,
        headers,
        body,
        dispatcher,
        signal: opts.signal,
        // A stuck request must not hold a reconcile (or the informer's list) for undici's default 5 min.
        headersTimeout: REQUEST_TIMEOUT_MS,
        bodyTimeout: REQUEST_TIMEOUT_MS,
      });
      statusCode = res.statusCode;
      text = await res.body.text();
    } catch (err) {
      this.observe(err);
      throw err;
    }
    if (statusCode < 200 || statusCode >= 300) {
      const err = new ApiError(statusCode, parseStatus(text));
      this.observe(err);
      throw err;
    }
    this.observe();
    return (text ? parseAnswer(text, method, path) : undefined) as T;
  }

  /**
   * GET /readyz: whether the API server says it can serve (200). Not told to `observe`: the
   * caller (recovery-probe.ts) decides what an answer means for the breaker.
   * https://kubernetes.io/docs/reference/using-api/health-checks/
   */
  async readyz(signal: AbortSignal): Promise<boolean> {
    const { headers, dispatcher } = await this.auth();
    headers.accept = 'text/plain';
    const res = await request(this.url('/readyz'), { method: 'GET', headers, dispatcher, signal });
    await res.body.dump();
    return res.statusCode === 200;
  }

  /**
   * Streams a watch: calls `onEvent` for every line until the server ends the stream (resolves),
   * or the request fails or `signal` aborts (rejects). `timeoutSeconds` is the server-side limit;
   * the client gives up after a minute more without a byte.
   */
  async watch<T>(
    path: string,
    query: Query & { timeoutSeconds: number },
    onEvent: (event: WatchEvent<T>) => void,
    signal: AbortSignal,
    accept?: string,
  ): Promise<void> {
    const { headers, dispatcher } = await this.auth();
    if (accept) headers.accept = accept;
    let res: Dispatcher.ResponseData;
    try {
      res = await request(this.url(path, { ...query, watch: 1 }), {
        method: 'GET',
        headers,
        dispatcher,
        signal,
        bodyTimeout: (query.timeoutSeconds + 60) * 1000,
      });
    } catch (err) {
      this.observe(err);
      throw err;
    }
    if (res.statusCode !== 200) {
      const err = new ApiError(res.statusCode, parseStatus(await res.body.text()));
      this.observe(err);
      throw err;
    }
    this.observe();
    res.body.setEncoding('utf8');
    let pending = '';
    try {
      for await (const chunk of res.body as AsyncIterable<string>) {
        pending += chunk;
        let start = 0;
        let end: number;
        while ((end = pending.indexOf('\n', start)) >= 0) {
          const line = pending.slice(start, end);
          start = end + 1;
          if (line.trim()) onEvent(parseAnswer(line, 'WATCH', path) as WatchEvent<T>);
        }
        pending = pending.slice(start);
      }
    } catch (err) {
      // A stream that breaks (the API server went away) is an outage; our own abort is not.
      if (!signal.aborted) this.observe(err);
      throw err;
    }
  }
}
