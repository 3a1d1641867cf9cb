/**
 * The strict subset of HTTP/1.1 (RFC 9112) the sidecar needs, on plain TCP sockets: requests
 * without bodies (GET, HEAD, OPTIONS), keep-alive and pipelining, responses written as one
 * prepared buffer. node:http spends about as much CPU on its request and response objects as
 * the whole answer costs here (see docs/BENCHMARKS.md), and a sidecar runs in every agent Pod.
 *
 * Anything outside the subset ends the connection after an error answer, so there is no state in
 * which this server and a proxy in front of it could disagree about where a message ends:
 * - a request that announces a body (Content-Length other than 0, or any Transfer-Encoding) is
 *   answered and the connection closed, without reading the body;
 * - malformed request lines or header fields, obsolete line folding, bare CR or LF, a missing or
 *   repeated Host in HTTP/1.1, repeated Content-Length: 400 and close;
 * - request heads over the size limit: 431 and close; a head not complete within the time limit:
 *   408 and close; idle keep-alive connections are closed after the keep-alive timeout.
 */
import type { Socket } from 'node:net';

export interface RequestHead {
  method: string;
  /** The path and query (origin-form; absolute-form targets are reduced to it). */
  target: string;
  version: '1.0' | '1.1';
  /** Lowercase names; repeated fields joined with ", " (RFC 9110 section 5.3). */
  headers: Record<string, string>;
}

export type ParseResult =
  | { kind: 'request'; head: RequestHead; length: number }
  | { kind: 'incomplete' }
  | { kind: 'error'; status: 400 | 431 | 505; message: string };

// RFC 9110 section 5.6.2: token characters.
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Field values: visible characters, spaces and tabs (obs-text allowed); no CR, LF or NUL.
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const CRLF2 = Buffer.from('\r\n\r\n');
const LINGER_MS = 2_000;

/** Parses one request head at the start of `buf`. Pure. */
export function parseRequestHead(buf: Buffer, maxHeadBytes: number): ParseResult {
  // RFC 9112 section 2.2: empty lines before the request line are ignored.
  let start = 0;
  while (buf[start] === 0x0d && buf[start + 1] === 0x0a) start += 2;
  const end = buf.indexOf(CRLF2, start);
  if (end < 0) {
    return buf.length - start > maxHeadBytes
      ? { kind: 'error', status: 431, message: 'request header fields too large' }
      : { kind: 'incomplete' };
  }
  if (end - start > maxHeadBytes)
    return { kind: 'error', status: 431, message: 'request header fields too large' };
  const text = buf.toString('latin1', start, end);
  const lines = text.split('\r\n');
  const bad = (message: string): ParseResult => ({ kind: 'error', status: 400, message });

  const parts = lines[0]!.split(' ');
  if (parts.length !== 3) return bad('malformed request line');
  const [method, rawTarget, protocol] = parts as [string, string, string];
  if (!TOKEN.test(method)) return bad('malformed method');
  let version: '1.0' | '1.1';
  if (protocol === 'HTTP/1.1') version = '1.1';
  else if (protocol === 'HTTP/1.0') version = '1.0';
  else if (/^HTTP\/\d\.\d$/.test(protocol))
    return { kind: 'error', status: 505, message: 'HTTP version not supported' };
  else return bad('malformed HTTP version');
  const target = originForm(rawTarget, method);
  if (target === undefined) return bad('malformed request target');

  const headers: Record<string, string> = {};
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    // RFC 9112 section 5.2: obsolete line folding is rejected.
    if (line[0] === ' ' || line[0] === '\t') return bad('obsolete line folding');
    const colon = line.indexOf(':');
    if (colon <= 0) return bad('malformed header field');
    const name = line.slice(0, colon);
    if (!TOKEN.test(name)) return bad('malformed header field name'); // also: no space before ':'
    const value = line.slice(colon + 1).trim();
    if (!FIELD_VALUE.test(value)) return bad('malformed header field value');
    const key = name.toLowerCase();
    if (key in headers) {
      if (key === 'content-length' || key === 'host') return bad(`repeated ${key}`);
      headers[key] += ', ' + value;
    } else {
      headers[key] = value;
    }
  }
  // RFC 9112 section 3.2: an HTTP/1.1 request carries exactly one Host.
  if (version === '1.1' && headers.host === undefined) return bad('missing Host');
  const length = headers['content-length'];
  if (length !== undefined && !/^\d+$/.test(length)) return bad('malformed Content-Length');
  return { kind: 'request', head: { method, target, version, headers }, length: end + 4 };
}

/** RFC 9112 section 3.2: origin-form, absolute-form (reduced to its path) and `*` for OPTIONS. */
function originForm(target: string, method: string): string | undefined {
  if (target.startsWith('/')) return target;
  if (target === '*' && method === 'OPTIONS') return '*';
  const m = /^https?:\/\/[^/?#\s]+(\/[^#\s]*|\?[^#\s]*)?$/i.exec(target);
  if (!m) return undefined;
  const rest = m[1] ?? '/';
  return rest.startsWith('?') ? '/' + rest : rest;
}

/** True when the request announces a body (which is never read). */
export function announcesBody(headers: Record<string, string>): boolean {
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] ?? '0') !== '0';
}

/** Whether the connection stays open after this request (RFC 9112 section 9.3). */
export function keepAlive(head: RequestHead): boolean {
  const tokens = (head.headers.connection ?? '')
    .toLowerCase()
    .split(',')
    .map((t) => t.trim());
  if (tokens.includes('close')) return false;
  return head.version === '1.1' || tokens.includes('keep-alive');
}

const REASONS: Record<number, string> = {
  200: 'OK',
  204: 'No Content',
  304: 'Not Modified',
  400: 'Bad Request',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  431: 'Request Header Fields Too Large',
  503: 'Service Unavailable',
  505: 'HTTP Version Not Supported',
};

export interface Reply {
  status: number;
  /** Flat [name, value, ...]; values are the server's own (no CR or LF). */
  headers: string[];
  body?: Buffer | undefined;
}

/**
 * Serializes responses. The header lists of prepared documents and fixed answers are stable
 * objects, so their serialized form is cached per list (and per second, for the Date field).
 */
export class ResponseWriter {
  private readonly keepAliveSeconds: number;
  private second = -1;
  private dateLine = '';
  private readonly cache = new WeakMap<
    string[],
    { status: number; second: number; close: Buffer; open: Buffer }
  >();

  constructor(keepAliveSeconds: number) {
    this.keepAliveSeconds = keepAliveSeconds;
  }

  /** The complete response head (status line to the empty line). */
  head(reply: Reply, close: boolean): Buffer {
    const now = Math.floor(Date.now() / 1000);
    if (now !== this.second) {
      this.second = now;
      this.dateLine = `Date: ${new Date(now * 1000).toUTCString()}\r\n`;
    }
    const cached = this.cache.get(reply.headers);
    if (cached && cached.second === now && cached.status === reply.status)
      return close ? cached.close : cached.open;
    let text = `HTTP/1.1 ${reply.status} ${REASONS[reply.status] ?? 'Unknown'}\r\n`;
    for (let i = 0; i < reply.headers.length; i += 2)
      text += `${reply.headers[i]}: ${reply.headers[i + 1]}\r\n`;
    text += this.dateLine;
    const open = Buffer.from(
      `${text}Connection: keep-alive\r\nKeep-Alive: timeout=${this.keepAliveSeconds}\r\n\r\n`,
      'latin1',
    );
    const closed = Buffer.from(`${text}Connection: close\r\n\r\n`, 'latin1');
    this.cache.set(reply.headers, { status: reply.status, second: now, close: closed, open });
    return close ? closed : open;
  }
}

export interface ConnectionOptions {
  maxHeadBytes: number;
  /** A request head must arrive within this time of its first byte. */
  headTimeoutMs: number;
  /** An idle connection is closed after this time. */
  keepAliveMs: number;
  writer: ResponseWriter;
  /** Answers one request; synchronous, so pipelined answers keep their order. */
  respond(head: RequestHead): Reply;
}

/** Serves requests on one connection until it closes. */
export function serveConnection(socket: Socket, opts: ConnectionOptions): void {
  let pending: Buffer | undefined;
  let headStartedAt = 0;
  let closing = false;
  socket.setNoDelay(true);
  socket.setTimeout(opts.keepAliveMs, () => socket.destroy());
  socket.on('error', () => socket.destroy());

  const send = (reply: Reply, close: boolean) => {
    const head = opts.writer.head(reply, close);
    const ok = reply.body ? socket.write(Buffer.concat([head, reply.body])) : socket.write(head);
    if (close) {
      closing = true;
      pending = undefined;
      socket.end();
      // Lingering close: whatever the client still sends (an unread body) is discarded for a
      // moment, so that closing does not reset the connection before the answer is read; then
      // the connection goes, however much more arrives.
      setTimeout(() => socket.destroy(), LINGER_MS).unref();
    } else if (!ok) {
      // Pipelined requests faster than the client reads: stop reading until it catches up.
      socket.pause();
      socket.once('drain', () => {
        socket.resume();
        work();
      });
    }
  };

  const fail = (status: number, message: string) => {
    const body = Buffer.from(message + '\n');
    send(
      {
        status,
        headers: ['Content-Type', 'text/plain; charset=utf-8', 'Content-Length', String(body.length)],
        body,
      },
      true,
    );
  };

  const work = () => {
    while (pending && pending.length > 0 && !closing && !socket.isPaused()) {
      const parsed = parseRequestHead(pending, opts.maxHeadBytes);
      if (parsed.kind === 'incomplete') {
        if (headStartedAt === 0) headStartedAt = Date.now();
        else if (Date.now() - headStartedAt > opts.headTimeoutMs) fail(408, 'request timeout');
        return;
      }
      if (parsed.kind === 'error') return fail(parsed.status, parsed.message);
      headStartedAt = 0;
      pending = parsed.length < pending.length ? pending.subarray(parsed.length) : undefined;
      const reply = opts.respond(parsed.head);
      // A request body is never read: answer, then close instead of skipping over it.
      send(reply, announcesBody(parsed.head.headers) || !keepAlive(parsed.head));
    }
  };

  socket.on('data', (chunk: Buffer) => {
    if (closing) return;
    pending = pending ? Buffer.concat([pending, chunk]) : chunk;
    work();
  });
}
