/**
 * The strict subset of HTTP/1.1 (RFC 9112) the sidecar needs, on plain TCP sockets: requests
 * without bodies (GET, HEAD, OPTIONS), keep-alive and pipelining, responses written as one
 * prepared buffer, and a head repeated byte for byte on a connection is not parsed again. A bare
 * node:http server needs nearly twice the CPU per request of this one (docs/BENCHMARKS.md,
 * section Sidecar), and a sidecar runs in every agent Pod.
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

/** A parsed request head. Read-only: a connection hands the same head out for repeats of it. */
export interface RequestHead {
  readonly method: string;
  /** The path and query (origin-form; absolute-form targets are reduced to it). */
  readonly target: string;
  readonly version: '1.0' | '1.1';
  /** Lowercase names; repeated fields joined with ", " (RFC 9110 section 5.3). */
  readonly headers: Readonly<Record<string, string>>;
}

export type ParseResult =
  | { kind: 'request'; head: RequestHead; length: number }
  | { kind: 'incomplete' }
  | { kind: 'error'; status: 400 | 431 | 505; message: string };

// RFC 9110 section 5.6.2: token characters.
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Control characters a request head must not contain: anything below 0x20 but the tab, and DEL.
// CR and LF appear only as the CRLF pairs that end lines (checked separately).
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const FORBIDDEN = /[\x00-\x08\x0a-\x1f\x7f]/;
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
  const bad = (message: string): ParseResult => ({ kind: 'error', status: 400, message });

  let eol = text.indexOf('\r\n');
  if (eol < 0) eol = text.length;
  const requestLine = text.slice(0, eol);
  if (FORBIDDEN.test(requestLine)) return bad('malformed request line');
  const parts = requestLine.split(' ');
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
  for (let pos = eol + 2; pos < text.length;) {
    let next = text.indexOf('\r\n', pos);
    if (next < 0) next = text.length;
    const first = text.charCodeAt(pos);
    // RFC 9112 section 5.2: obsolete line folding is rejected.
    if (first === 0x20 || first === 0x09) return bad('obsolete line folding');
    const colon = text.indexOf(':', pos);
    if (colon <= pos || colon > next) return bad('malformed header field');
    const name = text.slice(pos, colon);
    if (!TOKEN.test(name)) return bad('malformed header field name'); // also: no space before ':'
    // The value without the optional whitespace around it (RFC 9110 section 5.5).
    let vs = colon + 1;
    let ve = next;
    while (vs < ve && (text.charCodeAt(vs) === 0x20 || text.charCodeAt(vs) === 0x09)) vs++;
    while (ve > vs && (text.charCodeAt(ve - 1) === 0x20 || text.charCodeAt(ve - 1) === 0x09)) ve--;
    const value = text.slice(vs, ve);
    // Also catches a bare CR or LF inside the line.
    if (FORBIDDEN.test(value) || value.includes('\r')) return bad('malformed header field value');
    const key = name.toLowerCase();
    const previous = headers[key];
    if (previous === undefined) {
      headers[key] = value;
    } else {
      if (key === 'content-length' || key === 'host') return bad(`repeated ${key}`);
      headers[key] = previous + ', ' + value;
    }
    pos = next + 2;
  }
  // RFC 9112 section 3.2: an HTTP/1.1 request carries exactly one Host.
  if (version === '1.1' && headers.host === undefined) return bad('missing Host');
  const length = headers['content-length'];
  if (length !== undefined && !/^\d+$/.test(length)) return bad('malformed Content-Length');
  return { kind: 'request', head: { method, target, version, headers }, length: end + 4 };
}

/** Heads up to this size are remembered by HeadParser (a browser's are well below it). */
export const REMEMBERED_HEAD_BYTES = 2048;

/**
 * parseRequestHead with a memory of the last head it accepted. A client on a keep-alive
 * connection usually sends the same head bytes again and again, and parseRequestHead is a pure
 * function of those bytes, so a byte-for-byte repeat gets the same result without being parsed
 * again. Only an exact repeat of a head that was accepted takes this path: any other byte
 * sequence, however close, goes through the full parser and all of its refusals.
 */
export class HeadParser {
  private readonly maxHeadBytes: number;
  /** The bytes of the remembered head, from the start of the buffer to its empty line. */
  private bytes: Buffer | undefined;
  private result: ParseResult | undefined;

  constructor(maxHeadBytes: number) {
    this.maxHeadBytes = maxHeadBytes;
  }

  parse(buf: Buffer): ParseResult {
    const known = this.bytes;
    // parseRequestHead reads no byte after the empty line that ends the head, so a buffer that
    // starts with the remembered bytes (pipelined requests may follow) has the same result.
    if (
      known !== undefined &&
      (buf.length === known.length
        ? buf.equals(known)
        : buf.length > known.length && known.compare(buf, 0, known.length) === 0)
    ) {
      return this.result!;
    }
    const result = parseRequestHead(buf, this.maxHeadBytes);
    if (result.kind === 'request' && result.length <= REMEMBERED_HEAD_BYTES) {
      // A copy of its own size: buf belongs to the socket, and a slice of Buffer's shared pool
      // would keep a whole pool block alive for as long as the connection lasts.
      this.bytes = Buffer.allocUnsafeSlow(result.length);
      buf.copy(this.bytes, 0, 0, result.length);
      this.result = result;
    }
    return result;
  }
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
export function announcesBody(headers: Readonly<Record<string, string>>): boolean {
  return headers['transfer-encoding'] !== undefined || (headers['content-length'] ?? '0') !== '0';
}

/** Whether the connection stays open after this request (RFC 9112 section 9.3). */
export function keepAlive(head: RequestHead): boolean {
  if (head.headers.connection === undefined) return head.version === '1.1';
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

/** An answer to write. Never changed once made: its bytes are built once and then reused. */
export interface Reply {
  readonly status: number;
  /** Flat [name, value, ...]; values are the server's own (no CR or LF). */
  readonly headers: readonly string[];
  readonly body?: Buffer | undefined;
}

/**
 * Serializes responses. The replies of prepared documents and fixed answers are stable objects,
 * so each complete response is built once per reply and second (the Date field) and then
 * written as it is.
 */
export class ResponseWriter {
  private readonly keepAliveSeconds: number;
  private second = -1;
  private dateLine = '';
  private readonly cache = new WeakMap<Reply, CacheEntry>();

  constructor(keepAliveSeconds: number) {
    this.keepAliveSeconds = keepAliveSeconds;
  }

  /** The complete response: status line, fields, the empty line and the body. */
  bytes(reply: Reply, close: boolean): Buffer {
    const now = Math.floor(Date.now() / 1000);
    const hit = this.cache.get(reply);
    if (hit !== undefined && hit.second === now) return close ? hit.close : hit.open;
    if (now !== this.second) {
      this.second = now;
      this.dateLine = `Date: ${new Date(now * 1000).toUTCString()}\r\n`;
    }
    let text = `HTTP/1.1 ${reply.status} ${REASONS[reply.status] ?? 'Unknown'}\r\n`;
    for (let i = 0; i < reply.headers.length; i += 2)
      text += `${reply.headers[i]}: ${reply.headers[i + 1]}\r\n`;
    text += this.dateLine;
    const build = (connection: string) => {
      const head = Buffer.from(`${text}${connection}\r\n`, 'latin1');
      return reply.body ? Buffer.concat([head, reply.body]) : head;
    };
    const entry: CacheEntry = {
      second: now,
      open: build(`Connection: keep-alive\r\nKeep-Alive: timeout=${this.keepAliveSeconds}\r\n`),
      close: build('Connection: close\r\n'),
    };
    this.cache.set(reply, entry);
    return close ? entry.close : entry.open;
  }
}

interface CacheEntry {
  second: number;
  open: Buffer;
  close: Buffer;
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
  const heads = new HeadParser(opts.maxHeadBytes);
  socket.setNoDelay(true);
  socket.setTimeout(opts.keepAliveMs, () => socket.destroy());
  socket.on('error', () => socket.destroy());

  const send = (reply: Reply, close: boolean) => {
    const ok = socket.write(opts.writer.bytes(reply, close));
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
      const parsed = heads.parse(pending);
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
