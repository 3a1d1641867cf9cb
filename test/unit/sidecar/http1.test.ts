import { connect, createServer } from 'node:net';
import type { Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  HeadParser,
  REMEMBERED_HEAD_BYTES,
  ResponseWriter,
  announcesBody,
  keepAlive,
  parseRequestHead,
  serveConnection,
} from '../../../operator/sidecar/http1.ts';
import type { RequestHead } from '../../../operator/sidecar/http1.ts';

const parse = (text: string, max = 8192) => parseRequestHead(Buffer.from(text, 'latin1'), max);

// Refused heads, each with the status and message parseRequestHead gives it.
const REFUSED: [string, number, string][] = [
  ['GET  / HTTP/1.1\r\nHost: a\r\n\r\n', 400, 'malformed request line'],
  ['GET / HTTP/1.1 x\r\nHost: a\r\n\r\n', 400, 'malformed request line'],
  ['G(T / HTTP/1.1\r\nHost: a\r\n\r\n', 400, 'malformed method'],
  ['GET / HTTP/2.0\r\nHost: a\r\n\r\n', 505, 'HTTP version not supported'],
  ['GET / HTTX/1.1\r\nHost: a\r\n\r\n', 400, 'malformed HTTP version'],
  ['GET foo HTTP/1.1\r\nHost: a\r\n\r\n', 400, 'malformed request target'],
  ['GET * HTTP/1.1\r\nHost: a\r\n\r\n', 400, 'malformed request target'],
  ['GET / HTTP/1.1\r\n\r\n', 400, 'missing Host'],
  ['GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n', 400, 'repeated host'],
  ['GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n  folded\r\n\r\n', 400, 'obsolete line folding'],
  ['GET / HTTP/1.1\r\nHost: a\r\nX : 1\r\n\r\n', 400, 'malformed header field name'],
  ['GET / HTTP/1.1\r\nHost: a\r\nno colon\r\n\r\n', 400, 'malformed header field'],
  ['GET / HTTP/1.1\r\nHost: a\r\nX: a\nb\r\n\r\n', 400, 'malformed header field value'],
  ['GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n', 400, 'malformed header field value'],
  [
    'GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n',
    400,
    'repeated content-length',
  ],
  ['GET / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n', 400, 'malformed Content-Length'],
];

describe('parseRequestHead', () => {
  it('parses a request head and says where it ends', () => {
    const text =
      'GET /.well-known/agent-card.json?x=1 HTTP/1.1\r\nHost: a\r\nIf-None-Match: "x"\r\nAccept: a\r\naccept: b\r\n\r\nGET';
    const r = parse(text);
    expect(r).toEqual({
      kind: 'request',
      length: text.length - 3,
      head: {
        method: 'GET',
        target: '/.well-known/agent-card.json?x=1',
        version: '1.1',
        headers: { host: 'a', 'if-none-match': '"x"', accept: 'a, b' },
      },
    });
  });

  it('waits for the rest of an incomplete head, up to the size limit', () => {
    expect(parse('GET / HTTP/1.1\r\nHost: a\r\n')).toEqual({ kind: 'incomplete' });
    expect(parse('GET / HTTP/1.1\r\nX: ' + 'a'.repeat(200), 100)).toMatchObject({
      kind: 'error',
      status: 431,
    });
    expect(parse(`GET / HTTP/1.1\r\nHost: a\r\nX: ${'a'.repeat(200)}\r\n\r\n`, 100)).toMatchObject({
      status: 431,
    });
  });

  it('ignores empty lines before the request line and reduces absolute-form targets', () => {
    const r = parse(
      '\r\n\r\nGET http://agent.example/.well-known/jwks.json HTTP/1.1\r\nHost: agent.example\r\n\r\n',
    );
    expect(r.kind === 'request' && r.head.target).toBe('/.well-known/jwks.json');
    const q = parse('GET http://agent.example?x HTTP/1.0\r\n\r\n');
    expect(q.kind === 'request' && q.head.target).toBe('/?x');
  });

  it.each(REFUSED)('refuses %j with %i', (text, status, message) => {
    expect(parse(text)).toEqual({ kind: 'error', status, message });
  });

  it('accepts OPTIONS * and an HTTP/1.0 request without Host', () => {
    expect(parse('OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n').kind).toBe('request');
    expect(parse('GET / HTTP/1.0\r\n\r\n').kind).toBe('request');
  });
});

describe('HeadParser', () => {
  const CARD_GET = 'GET /.well-known/agent-card.json HTTP/1.1\r\nHost: agent.example\r\nAccept: */*\r\n\r\n';
  const bytes = (text: string) => Buffer.from(text, 'latin1');

  it('gives a byte-for-byte repeat the same result without parsing it again', () => {
    const p = new HeadParser(8192);
    const first = p.parse(bytes(CARD_GET));
    expect(first).toEqual(parse(CARD_GET));
    // The very same object: the remembered result, not a second parse.
    expect(p.parse(bytes(CARD_GET))).toBe(first);
    // With a pipelined request behind it, the head and its length are the same.
    expect(p.parse(bytes(CARD_GET + 'GET / HTTP/1.1\r\n'))).toBe(first);
    // A buffer that ends before the head does is incomplete, not the remembered head.
    expect(p.parse(bytes(CARD_GET.slice(0, -1)))).toEqual({ kind: 'incomplete' });
  });

  it('never lets a near-repeat of a remembered head skip a refusal', () => {
    const valid = [
      CARD_GET,
      'GET / HTTP/1.1\r\nHost: a\r\n\r\n',
      '\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n',
      'HEAD /.well-known/jwks.json HTTP/1.0\r\n\r\n',
      'OPTIONS * HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n',
    ];
    const inputs = [...valid, ...REFUSED.map(([text]) => text)];
    // Every input after every remembered head: the same outcome as a fresh parse.
    for (const remembered of valid) {
      for (const text of inputs) {
        const p = new HeadParser(8192);
        p.parse(bytes(remembered));
        expect(p.parse(bytes(text)), `${JSON.stringify(remembered)} then ${JSON.stringify(text)}`).toEqual(
          parse(text),
        );
      }
    }
    // Every single-byte change of a remembered head, including ones that make it malformed
    // (a bare LF or CR, NUL, a space in a name, a second empty line): parsed in full.
    const base = bytes(CARD_GET);
    const p = new HeadParser(8192);
    let refused = 0;
    for (let i = 0; i < base.length; i++) {
      for (const b of [0x00, 0x0a, 0x0d, 0x20, 0x3a, 0x7f, 0x41]) {
        if (base[i] === b) continue;
        p.parse(base); // remember the valid head again
        const changed = Buffer.from(base);
        changed[i] = b;
        const fresh = parseRequestHead(changed, 8192);
        expect(p.parse(changed)).toEqual(fresh);
        if (fresh.kind === 'error') refused++;
      }
    }
    expect(refused).toBeGreaterThan(base.length); // most changes are refusals
  });

  it('does not remember refused heads or heads over the remembered size', () => {
    const p = new HeadParser(8192);
    const bad = 'GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n';
    expect(p.parse(bytes(bad))).not.toBe(p.parse(bytes(bad)));
    const big = `GET / HTTP/1.1\r\nHost: a\r\nX: ${'a'.repeat(REMEMBERED_HEAD_BYTES)}\r\n\r\n`;
    const first = p.parse(bytes(big));
    expect(first.kind).toBe('request');
    const second = p.parse(bytes(big));
    expect(second).toEqual(first);
    expect(second).not.toBe(first);
  });
});

describe('keepAlive and announcesBody', () => {
  const head = (version: '1.0' | '1.1', headers: Record<string, string>): RequestHead => ({
    method: 'GET',
    target: '/',
    version,
    headers,
  });
  it('keeps HTTP/1.1 open unless told to close, HTTP/1.0 only when asked', () => {
    expect(keepAlive(head('1.1', {}))).toBe(true);
    expect(keepAlive(head('1.1', { connection: 'Upgrade, Close' }))).toBe(false);
    expect(keepAlive(head('1.0', {}))).toBe(false);
    expect(keepAlive(head('1.0', { connection: 'keep-alive' }))).toBe(true);
  });
  it('spots announced bodies', () => {
    expect(announcesBody({})).toBe(false);
    expect(announcesBody({ 'content-length': '0' })).toBe(false);
    expect(announcesBody({ 'content-length': '10' })).toBe(true);
    expect(announcesBody({ 'transfer-encoding': 'chunked' })).toBe(true);
  });
});

describe('ResponseWriter', () => {
  it('builds the bytes of a reply once per second and keeps Connection per request', () => {
    const writer = new ResponseWriter(5);
    const reply = { status: 200, headers: ['Content-Length', '2'], body: Buffer.from('ok') };
    const open = writer.bytes(reply, false);
    expect(writer.bytes(reply, false)).toBe(open);
    const text = open.toString('latin1');
    expect(text).toMatch(
      /^HTTP\/1\.1 200 OK\r\nContent-Length: 2\r\nDate: \w{3}, \d\d \w{3} \d{4} [\d:]{8} GMT\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\nok$/,
    );
    expect(writer.bytes(reply, true).toString('latin1')).toMatch(/\r\nConnection: close\r\n\r\nok$/);
    // Another reply with the same header list is its own answer.
    const head = { status: 200, headers: reply.headers };
    expect(writer.bytes(head, false).toString('latin1')).toMatch(/\r\n\r\n$/);
  });
});

describe('serveConnection', () => {
  const servers: Server[] = [];
  afterEach(() => {
    for (const s of servers.splice(0)) s.close();
  });

  async function start(opts: { headTimeoutMs?: number; keepAliveMs?: number } = {}) {
    const writer = new ResponseWriter(5);
    const seen: string[] = [];
    const server = createServer((socket) =>
      serveConnection(socket, {
        maxHeadBytes: 1024,
        headTimeoutMs: opts.headTimeoutMs ?? 10_000,
        keepAliveMs: opts.keepAliveMs ?? 10_000,
        writer,
        respond(head) {
          seen.push(`${head.method} ${head.target}`);
          const body = Buffer.from(`you asked for ${head.target}`);
          return { status: 200, headers: ['Content-Length', String(body.length)], body };
        },
      }),
    );
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return { port: (server.address() as { port: number }).port, seen };
  }

  /** Writes the parts with pauses between them; resolves with all bytes received until close. */
  function exchange(port: number, parts: string[], opts: { pauseMs?: number; endAfterMs?: number } = {}) {
    return new Promise<{ text: string; closedByServer: boolean }>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      let closedByServer = true;
      socket.setEncoding('latin1');
      socket.on('data', (d: string) => (text += d));
      socket.on('close', () => resolve({ text, closedByServer }));
      socket.on('error', reject);
      socket.on('connect', async () => {
        for (const part of parts) {
          socket.write(part);
          await new Promise((r) => setTimeout(r, opts.pauseMs ?? 0));
        }
        setTimeout(() => {
          closedByServer = false;
          socket.destroy();
        }, opts.endAfterMs ?? 500);
      });
    });
  }

  it('answers pipelined requests in order and keeps the connection open', async () => {
    const { port, seen } = await start();
    const { text, closedByServer } = await exchange(port, [
      'GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\nHEAD /c HTTP/1.1\r\nHost: x\r\n\r\n',
    ]);
    expect(seen).toEqual(['GET /a', 'GET /b', 'HEAD /c']);
    expect(text.match(/you asked for \/[abc]/g)).toEqual([
      'you asked for /a',
      'you asked for /b',
      'you asked for /c',
    ]);
    expect(text.match(/Connection: keep-alive/g)).toHaveLength(3);
    expect(text).toMatch(/^HTTP\/1\.1 200 OK\r\nContent-Length: 16\r\nDate: .+ GMT\r\n/);
    expect(closedByServer).toBe(false);
  });

  it('refuses a malformed near-repeat of the request before it on the same connection', async () => {
    const { port, seen } = await start();
    const good = 'GET /a HTTP/1.1\r\nHost: x\r\n\r\n';
    const { text, closedByServer } = await exchange(
      port,
      [good, good, 'GET /a HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n'],
      { pauseMs: 20, endAfterMs: 2000 },
    );
    expect(seen).toEqual(['GET /a', 'GET /a']);
    expect(text.match(/HTTP\/1\.1 \d+/g)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200', 'HTTP/1.1 400']);
    expect(text).toContain('repeated host');
    expect(closedByServer).toBe(true);
  });

  it('assembles a request that arrives byte by byte', async () => {
    const { port } = await start();
    const request = 'GET /slow HTTP/1.1\r\nHost: x\r\n\r\n';
    const { text } = await exchange(port, [...request], { pauseMs: 1 });
    expect(text).toContain('you asked for /slow');
  });

  it('closes after answering an HTTP/1.0 request, a Connection: close and an announced body', async () => {
    const { port } = await start();
    for (const request of [
      'GET /a HTTP/1.0\r\n\r\n',
      'GET /a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      'POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
    ]) {
      const { text, closedByServer } = await exchange(port, [request], { endAfterMs: 2000 });
      expect(text).toContain('Connection: close');
      expect(text.match(/HTTP\/1\.1 /g)).toHaveLength(1); // the chunked body was not taken for a request
      expect(closedByServer).toBe(true);
    }
  });

  it('closes a connection that keeps sending an unread body within the lingering time', async () => {
    const { port } = await start();
    const started = Date.now();
    const result = await new Promise<{ text: string; ms: number }>((resolve, reject) => {
      // Half-open: this client keeps sending after the server has finished its side.
      const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
      let text = '';
      socket.setEncoding('latin1');
      socket.on('data', (d: string) => (text += d));
      socket.on('error', () => undefined); // a reset after the answer is fine
      socket.on('close', () => resolve({ text, ms: Date.now() - started }));
      socket.on('connect', () => {
        socket.write('POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n');
        const feed = setInterval(() => socket.write('x'.repeat(1000)), 50);
        socket.on('close', () => clearInterval(feed));
      });
      setTimeout(() => reject(new Error('connection still open after 6 s')), 6000);
    });
    expect(result.text).toMatch(/^HTTP\/1\.1 200 /);
    expect(result.ms).toBeLessThan(5000);
  });

  it('answers malformed and oversized heads with an error and closes', async () => {
    const { port, seen } = await start();
    const bad = await exchange(port, ['GET / HTTP/1.1\r\n\r\nGET /never HTTP/1.1\r\nHost: x\r\n\r\n']);
    expect(bad.text).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(bad.text).toContain('missing Host');
    expect(bad.closedByServer).toBe(true);
    const big = await exchange(port, [`GET / HTTP/1.1\r\nHost: x\r\nX: ${'a'.repeat(2000)}`]);
    expect(big.text).toMatch(/^HTTP\/1\.1 431 /);
    expect(seen).toEqual([]);
  });

  it('times out a head that arrives too slowly, and an idle connection', async () => {
    const { port } = await start({ headTimeoutMs: 100 });
    const slow = await exchange(port, ['GET / HTTP/1.1\r\n', 'Host: x\r\n', 'X: 1\r\n'], {
      pauseMs: 80,
      endAfterMs: 2000,
    });
    expect(slow.text).toMatch(/^HTTP\/1\.1 408 /);
    const idle = await start({ keepAliveMs: 100 });
    const quiet = await exchange(idle.port, ['GET / HTTP/1.1\r\nHost: x\r\n\r\n'], { endAfterMs: 2000 });
    expect(quiet.text).toContain('you asked for /');
    expect(quiet.closedByServer).toBe(true);
  });
});
