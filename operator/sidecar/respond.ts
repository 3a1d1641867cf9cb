/**
 * The sidecar's HTTP semantics as a pure function of the request line, the request headers, the
 * selected audience and the current card version. The server (server.ts) only writes what this
 * returns; node:http adds the framing (Date, Connection, Keep-Alive) and never sends a body in
 * an answer to HEAD (RFC 9110 section 9.3.2).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { candidates } from './audience.ts';
import { COMMON_HEADERS, CORS_HEADERS, DOCUMENTS } from './version.ts';
import type { CardVersion, PreparedAnswer, PreparedDocument } from './version.ts';

/** Every answer is prepared once (per version, or at start) and never changed. */
export type Answer = PreparedAnswer;

export interface RequestLine {
  method: string;
  /** The request target (path and query). */
  url: string;
  headers: Readonly<IncomingHttpHeaders>;
  /** The audience's host name (audience.ts requestHost); undefined selects the default card. */
  host?: string | undefined;
}

export const ALLOW = 'GET, HEAD, OPTIONS';

const textAnswer = (status: number, text: string, extra: string[] = []) => {
  const body = Buffer.from(text + '\n');
  const headers = [
    'Content-Type',
    'text/plain; charset=utf-8',
    'Content-Length',
    String(body.length),
    'Cache-Control',
    'no-store',
    ...extra,
    ...COMMON_HEADERS,
  ];
  return { status, headers, body };
};
const NOT_FOUND = textAnswer(404, 'not found');
// RFC 9110 section 15.5.6: a 405 lists the methods the resource supports in Allow.
const NOT_ALLOWED = textAnswer(405, 'method not allowed', ['Allow', ALLOW]);
// Until a valid card has been read (readiness is false then, so traffic should not arrive).
const NOT_LOADED = textAnswer(503, 'no card loaded yet', ['Retry-After', '5']);
const OPTIONS_PLAIN = { status: 204, headers: ['Allow', ALLOW, ...COMMON_HEADERS] };
// CORS preflight (Fetch standard, "CORS protocol"): a public, credential-less resource may answer
// `*` for the allowed request headers; the answer is the same for every origin.
const PREFLIGHT = {
  status: 204,
  headers: [
    ...CORS_HEADERS,
    'Access-Control-Allow-Methods',
    ALLOW,
    'Access-Control-Allow-Headers',
    '*',
    'Access-Control-Max-Age',
    '86400',
    ...COMMON_HEADERS,
  ],
};

/** The fixed answers, labelled with their route once (so no request allocates one). */
const OTHER: Answer = { ...NOT_FOUND, route: 'other' };
const FILE_OF: ReadonlyMap<string, string> = new Map(DOCUMENTS.map((d) => [d.path, d.file]));
/**
 * `/healthz` and `/` answer 200 whatever the card's state, for load balancers whose default
 * health check asks for `/` (the readiness of the card is on the metrics port's `/readyz`).
 */
const HEALTH_ROUTES = ['/', '/healthz'];
const HEALTH: ReadonlyMap<string, Record<'ok' | 'options' | 'notAllowed', Answer>> = new Map(
  HEALTH_ROUTES.map((route) => [
    route,
    {
      ok: { ...textAnswer(200, 'ok'), route },
      options: { ...OPTIONS_PLAIN, route },
      notAllowed: { ...NOT_ALLOWED, route },
    },
  ]),
);
const FIXED: ReadonlyMap<
  string,
  Record<'notFound' | 'notAllowed' | 'notLoaded' | 'options' | 'preflight', Answer>
> = new Map(
  DOCUMENTS.map(({ path: route }) => [
    route,
    {
      notFound: { ...NOT_FOUND, route },
      notAllowed: { ...NOT_ALLOWED, route },
      notLoaded: { ...NOT_LOADED, route },
      options: { ...OPTIONS_PLAIN, route },
      preflight: { ...PREFLIGHT, route },
    },
  ]),
);

export function answer(req: RequestLine, version: CardVersion | undefined): Answer {
  const q = req.url.indexOf('?');
  const path = q < 0 ? req.url : req.url.slice(0, q);
  const fixed = FIXED.get(path);
  if (fixed === undefined) {
    const health = HEALTH.get(path);
    if (health === undefined) return OTHER;
    if (req.method === 'GET' || req.method === 'HEAD') return health.ok;
    return req.method === 'OPTIONS' ? health.options : health.notAllowed;
  }

  switch (req.method) {
    case 'GET':
    case 'HEAD': {
      if (!version) return fixed.notLoaded;
      const doc = lookup(version, path, req.host);
      if (!doc) return fixed.notFound;
      if (notModified(req.headers, doc)) return doc.answers.notModified;
      return req.method === 'GET' ? doc.answers.get : doc.answers.head;
    }
    case 'OPTIONS': {
      const preflight =
        req.headers.origin !== undefined && req.headers['access-control-request-method'] !== undefined;
      return preflight ? fixed.preflight : fixed.options;
    }
    default:
      return fixed.notAllowed;
  }
}

/** The document for `path` and the audience of `host`: exact host, then wildcard, then default. */
export function lookup(
  version: CardVersion,
  path: string,
  host: string | undefined,
): PreparedDocument | undefined {
  if (host !== undefined && version.variants.size > 0) {
    for (const name of candidates(FILE_OF.get(path)!, host)) {
      const doc = version.variants.get(name);
      if (doc !== undefined) return doc;
    }
  }
  return version.documents.get(path);
}

/**
 * Conditional GET (RFC 9110 section 13.2.2): If-None-Match wins over If-Modified-Since; the
 * latter is only evaluated when the former is absent.
 */
export function notModified(headers: Readonly<IncomingHttpHeaders>, doc: PreparedDocument): boolean {
  const inm = headers['if-none-match'];
  if (inm !== undefined) return etagListMatches(inm, doc.etag);
  const ims = headers['if-modified-since'];
  if (ims === undefined) return false;
  const since = Date.parse(ims);
  // An invalid date, or one in the future, is ignored (RFC 9110 section 13.1.3).
  if (Number.isNaN(since) || since > Date.now()) return false;
  return doc.lastModifiedSeconds * 1000 <= since;
}

/** If-None-Match uses the weak comparison (RFC 9110 section 13.1.2): `W/"x"` matches `"x"`. */
export function etagListMatches(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  for (const raw of header.split(',')) {
    let tag = raw.trim();
    if (tag.startsWith('W/')) tag = tag.slice(2);
    if (tag === etag) return true;
  }
  return false;
}
