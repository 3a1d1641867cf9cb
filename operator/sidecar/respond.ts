/**
 * The sidecar's HTTP semantics as a pure function of the request line, the request headers and
 * the current card version. The connection layer (http1.ts) only writes what this returns.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { COMMON_HEADERS, CORS_HEADERS, DOCUMENTS } from './version.ts';
import type { CardVersion, PreparedDocument } from './version.ts';

export interface Answer {
  status: number;
  /** Flat [name, value, ...] list for `res.writeHead`. */
  headers: string[];
  body?: Buffer;
  /** Metrics label: the well-known path, or `other` (bounded cardinality). */
  route: string;
}

export interface RequestLine {
  method: string;
  /** The request target (path and query). */
  url: string;
  headers: IncomingHttpHeaders;
}

export const ALLOW = 'GET, HEAD, OPTIONS';
const KNOWN_PATHS: ReadonlySet<string> = new Set(DOCUMENTS.map((d) => d.path));

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

export function answer(req: RequestLine, version: CardVersion | undefined): Answer {
  const q = req.url.indexOf('?');
  const path = q < 0 ? req.url : req.url.slice(0, q);
  if (!KNOWN_PATHS.has(path)) return { ...NOT_FOUND, route: 'other' };

  switch (req.method) {
    case 'GET':
    case 'HEAD': {
      if (!version) return { ...NOT_LOADED, route: path };
      const doc = version.documents.get(path);
      if (!doc) return { ...NOT_FOUND, route: path };
      if (notModified(req.headers, doc)) return { status: 304, headers: doc.headers304, route: path };
      const body = req.method === 'GET' ? doc.body : undefined;
      return { status: 200, headers: doc.headers200, body, route: path };
    }
    case 'OPTIONS': {
      const preflight =
        req.headers.origin !== undefined && req.headers['access-control-request-method'] !== undefined;
      return { ...(preflight ? PREFLIGHT : OPTIONS_PLAIN), route: path };
    }
    default:
      return { ...NOT_ALLOWED, route: path };
  }
}

/**
 * Conditional GET (RFC 9110 section 13.2.2): If-None-Match wins over If-Modified-Since; the
 * latter is only evaluated when the former is absent.
 */
export function notModified(headers: IncomingHttpHeaders, doc: PreparedDocument): boolean {
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
