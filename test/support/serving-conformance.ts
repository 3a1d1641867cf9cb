/**
 * One conformance suite for every server that answers for a card: the sidecar's two serving
 * modes (Node, and the operator-configured nginx) over a kubelet-style `..data` volume, and the
 * central card server over a published ConfigMap (card-server-targets.ts), with the clients and
 * proxies that sit in front of a card endpoint: raw sockets for the edge cases, curl, Go's
 * net/http, @a2a-js/sdk's card resolver, and nginx and HAProxy as reverse proxies.
 *
 * Each test file runs it for the targets it can start (test/unit/sidecar/conformance.test.ts
 * for the sidecar modes; test/integration/card-server-conformance.test.ts for the card server,
 * which needs the API server). Where the targets differ by design (operator/sidecar/nginx.ts;
 * the card server never answers a host no card claims), the target says so and the expectation
 * follows it.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { promisify } from 'node:util';
import { DefaultAgentCardResolver } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROXIES, startProxy } from './card-servers.ts';
import type { ServingTarget, TargetServer } from './card-servers.ts';
import { goClient, runGoClient } from './go-client.ts';
import { JWKS, cardFiles, cardJson, legacyJson } from './card-files.ts';

const run = promisify(execFile);
const CARD = '/.well-known/agent-card.json';
/**
 * The Host of every request that does not name one: the sidecar answers any host with its
 * default card; the card server only the hosts a card claims, so its target claims this one.
 */
export const DEFAULT_HOST = 'agent.example';

/** Sends bytes on one connection; resolves with all it receives until it closes or goes quiet. */
function exchange(
  port: number,
  bytes: string | Buffer,
  quietMs = 400,
): Promise<{ out: string; closed: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let out = '';
    let timer: NodeJS.Timeout | undefined;
    const done = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ out, closed });
    };
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => done(false), quietMs);
    };
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      out += d;
      arm();
    });
    socket.on('close', () => done(true));
    socket.on('error', (err: NodeJS.ErrnoException) =>
      err.code === 'ECONNRESET' ? done(true) : reject(err),
    );
    socket.on('connect', arm);
    socket.write(bytes);
  });
}

/** Splits a byte stream of HTTP/1.1 responses, using Content-Length (and no body for HEAD/304). */
function responses(stream: string, methods: string[]): { status: number; head: string; body: string }[] {
  const out = [];
  let rest = stream;
  for (const method of methods) {
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) break;
    const head = rest.slice(0, end);
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    const bodyLength = method === 'HEAD' || status === 304 || status === 204 || status === 100 ? 0 : length;
    out.push({ status, head, body: rest.slice(end + 4, end + 4 + bodyLength) });
    rest = rest.slice(end + 4 + bodyLength);
  }
  if (rest.length > 0) out.push({ status: NaN, head: 'STRAY BYTES: ' + rest.slice(0, 40), body: '' });
  return out;
}

const request = (method: string, path: string, headers: Record<string, string> = {}) =>
  `${method} ${path} HTTP/1.1\r\nHost: ${headers.host ?? DEFAULT_HOST}\r\n` +
  Object.entries(headers)
    .filter(([k]) => k !== 'host')
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('') +
  '\r\n';

/**
 * One request on its own connection, with Host: DEFAULT_HOST (fetch() cannot set Host, a
 * forbidden header name, so node:http sends it).
 */
function fetchText(
  port: number,
  path: string,
  init: { method?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: Headers; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: init.method ?? 'GET',
        headers: { host: DEFAULT_HOST, ...init.headers },
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => {
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) {
            if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
          }
          resolve({ status: res.statusCode!, headers, body });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A fetch for @a2a-js/sdk's resolver that sends Host: DEFAULT_HOST (GET only, as it needs). */
const defaultHostFetch: typeof fetch = async (input) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  const res = await fetchText(Number(url.port), url.pathname + url.search);
  return new Response(res.body, { status: res.status, headers: res.headers });
};

const sha256 = (text: string | undefined) =>
  createHash('sha256')
    .update(text ?? '')
    .digest('hex');

const FILES: Record<string, string> = {
  ...cardFiles('1.0.0', '300'),
  'host.api.example.com.agent-card.json': cardJson('1.0.0', 'api-audience'),
  'host.api.example.com.agent.json': legacyJson('1.0.0').replace('weather-agent', 'api-legacy'),
  'wildcard.partners.example.com.agent-card.json': cardJson('1.0.0', 'partner-audience'),
};

export function describeServingConformance(targets: readonly ServingTarget[]): void {
  describe.each(targets.map((t) => [t.name, t] as const))('%s', (_name, target) => {
    let server: TargetServer;
    let empty: TargetServer;
    const cleanups: (() => Promise<unknown>)[] = [];
    /** What a request for a host no card claims gets: the default card's name, or 404. */
    const unclaimed = target.unclaimedHost === 'default' ? 'weather-agent' : 404;

    beforeAll(async () => {
      server = await target.start(FILES);
      // No card published yet (an empty volume; a card server before its first list), with a
      // short keep-alive.
      empty = await target.start(undefined, { keepAliveSeconds: 2 });
      cleanups.push(
        () => server.close(),
        () => empty.close(),
      );
      await goClient(); // builds the Go client once per machine
    }, 300_000);
    afterAll(async () => {
      for (const c of cleanups.splice(0).reverse()) await c();
    });

    it('serves the three documents with validators, caching, CORS and nosniff', async () => {
      const res = await fetchText(server.port, CARD);
      expect(res.status).toBe(200);
      expect(res.body).toBe(FILES['agent-card.json']);
      expect(res.headers.get('content-type')).toBe('application/json');
      expect(res.headers.get('etag')).toMatch(/^"[^"]+"$/);
      expect(Date.parse(res.headers.get('last-modified')!)).toBeGreaterThan(Date.now() - 600_000);
      expect(res.headers.get('cache-control')).toBe('public, max-age=300');
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      expect(res.headers.get('access-control-expose-headers')).toBe('ETag, Last-Modified, Cache-Control');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect((await fetchText(server.port, '/.well-known/agent.json')).body).toBe(FILES['agent.json']);
      expect((await fetchText(server.port, '/.well-known/jwks.json?x=1')).body).toBe(JWKS);
    });

    it("takes Cache-Control's max-age from the volume, and the default without the file", async () => {
      const s = await target.start({ ...FILES, 'cache-max-age-seconds': '42' });
      try {
        const res = await fetchText(s.port, CARD);
        expect(res.headers.get('cache-control')).toBe('public, max-age=42');
        const etag = res.headers.get('etag')!;
        const revalidated = await fetchText(s.port, CARD, { headers: { 'if-none-match': etag } });
        expect(revalidated.headers.get('cache-control')).toBe('public, max-age=42');
        const files = { ...FILES };
        delete files['cache-max-age-seconds'];
        await s.publish(files);
        let after = res;
        for (let i = 0; i < 50 && after.headers.get('cache-control') === 'public, max-age=42'; i++) {
          await new Promise((r) => setTimeout(r, 100));
          after = await fetchText(s.port, CARD);
        }
        expect(after.headers.get('cache-control')).toBe('public, max-age=300');
      } finally {
        await s.close();
      }
    });

    it('serves every max-age from 0 to the limit on every document, HEAD, 304 and host variant', async () => {
      const cacheControl = async (path: string, init: Parameters<typeof fetchText>[2] = {}) => {
        const res = await fetchText(s.port, path, init);
        return `${res.status} ${res.headers.get('cache-control')}`;
      };
      const s = await target.start({ ...FILES, 'cache-max-age-seconds': '86400' });
      try {
        const etag = (await fetchText(s.port, CARD)).headers.get('etag')!;
        expect([
          await cacheControl(CARD),
          await cacheControl(CARD, { method: 'HEAD' }),
          await cacheControl(CARD, { headers: { 'if-none-match': etag } }),
          await cacheControl('/.well-known/agent.json'),
          await cacheControl('/.well-known/jwks.json'),
          await cacheControl(CARD, { headers: { host: 'api.example.com' } }),
          await cacheControl(CARD, { headers: { host: 'x.partners.example.com' } }),
        ]).toEqual([
          '200 public, max-age=86400',
          '200 public, max-age=86400',
          '304 public, max-age=86400',
          '200 public, max-age=86400',
          '200 public, max-age=86400',
          '200 public, max-age=86400',
          '200 public, max-age=86400',
        ]);
        // Fewer digits, then zero, then more again: no digit of an earlier number is left over.
        for (const seconds of ['7', '0', '1000', '300']) {
          await s.publish({ ...FILES, 'cache-max-age-seconds': seconds });
          let got = '';
          for (let i = 0; i < 50 && got !== `200 public, max-age=${seconds}`; i++) {
            if (i > 0) await new Promise((r) => setTimeout(r, 100));
            got = await cacheControl(CARD);
          }
          expect(got).toBe(`200 public, max-age=${seconds}`);
          expect(await cacheControl('/.well-known/jwks.json')).toBe(`200 public, max-age=${seconds}`);
        }
      } finally {
        await s.close();
      }
    });

    it('answers conditional requests with 304 and the validators', async () => {
      const first = await fetchText(server.port, CARD);
      const etag = first.headers.get('etag')!;
      for (const inm of [etag, `W/${etag}`, `"nope", ${etag}`, '*']) {
        const res = await fetchText(server.port, CARD, { headers: { 'if-none-match': inm } });
        expect(res.status).toBe(304);
        expect(res.body).toBe('');
        expect(res.headers.get('etag')).toBe(etag);
        expect(res.headers.get('cache-control')).toBe('public, max-age=300');
      }
      const ims = await fetchText(server.port, CARD, {
        headers: { 'if-modified-since': first.headers.get('last-modified')! },
      });
      expect(ims.status).toBe(304);
      expect((await fetchText(server.port, CARD, { headers: { 'if-none-match': '"old"' } })).status).toBe(
        200,
      );
    });

    it('never answers HEAD with a body, whatever the status', async () => {
      const cases: [number, string, string][] = [
        [server.port, CARD, '200'],
        [server.port, '/nope', '404'],
        [server.port, '/', '200'],
        [empty.port, CARD, '503'],
        [empty.port, '/.well-known/jwks.json', '503'],
      ];
      for (const [port, path, status] of cases) {
        // A GET follows the HEAD on the same connection: any body byte would precede its status line.
        const { out } = await exchange(port, request('HEAD', path) + request('GET', '/healthz'));
        const [head, next] = responses(out, ['HEAD', 'GET']);
        expect(head!.head, `HEAD ${path}`).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
        expect(next, `after HEAD ${path}`).toMatchObject({ status: 200, body: 'ok\n' });
      }
      // A card without jwks.json: 404 for it, also without a body.
      const s = await target.start({ 'agent-card.json': cardJson() });
      try {
        const { out } = await exchange(
          s.port,
          request('HEAD', '/.well-known/jwks.json') + request('GET', '/healthz'),
        );
        expect(responses(out, ['HEAD', 'GET']).map((r) => r.status)).toEqual([404, 200]);
      } finally {
        await s.close();
      }
    });

    it('answers 404, 405 with Allow, OPTIONS, a CORS preflight, and 200 at / and /healthz', async () => {
      expect((await fetchText(server.port, '/nope')).status).toBe(404);
      expect((await fetchText(server.port, '/agent-card.json')).status).toBe(404);
      for (const method of ['POST', 'PUT', 'DELETE']) {
        const res = await fetchText(server.port, CARD, { method });
        expect(res.status).toBe(405);
        expect(res.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
      }
      const options = await fetchText(server.port, CARD, { method: 'OPTIONS' });
      expect(options.status).toBe(204);
      expect(options.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
      const pre = await fetchText(server.port, CARD, {
        method: 'OPTIONS',
        headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' },
      });
      expect(pre.status).toBe(204);
      expect(pre.headers.get('access-control-allow-origin')).toBe('*');
      expect(pre.headers.get('access-control-allow-methods')).toBe('GET, HEAD, OPTIONS');
      expect(pre.headers.get('access-control-max-age')).toBe('86400');
      for (const path of ['/', '/healthz']) {
        expect(await fetchText(server.port, path)).toMatchObject({ status: 200, body: 'ok\n' });
        expect(await fetchText(empty.port, path)).toMatchObject({ status: 200, body: 'ok\n' });
      }
      const notLoaded = await fetchText(empty.port, CARD);
      expect(notLoaded.status).toBe(503);
      expect(notLoaded.headers.get('retry-after')).toBe('5');
    });

    it('accepts two 5 KB cookies and refuses a 40 KB header with a 4xx', async () => {
      const cookie = `a=${'a'.repeat(5000)}; b=${'b'.repeat(5000)}`;
      const { out } = await exchange(
        server.port,
        request('GET', CARD, { cookie, 'x-other': 'c'.repeat(5000) }),
      );
      expect(responses(out, ['GET'])[0]).toMatchObject({ status: 200, body: FILES['agent-card.json'] });
      const big = await exchange(server.port, request('GET', CARD, { 'x-big': 'x'.repeat(40_000) }));
      // Node answers 431 (RFC 6585 section 5); nginx its own 400 for a too long header line.
      expect(big.out).toMatch(new RegExp(`^HTTP/1\\.1 ${target.headerTooLargeStatus} `));
      expect(big.closed).toBe(true);
    });

    it('answers pipelined requests in order, a GET with a body, and Expect: 100-continue', async () => {
      const { out } = await exchange(
        server.port,
        request('GET', CARD) +
          request('HEAD', '/.well-known/jwks.json') +
          request('GET', '/.well-known/agent.json'),
      );
      expect(responses(out, ['GET', 'HEAD', 'GET']).map((r) => [r.status, r.body])).toEqual([
        [200, FILES['agent-card.json']],
        [200, ''],
        [200, FILES['agent.json']],
      ]);
      const withBody = await exchange(
        server.port,
        `GET ${CARD} HTTP/1.1\r\nHost: ${DEFAULT_HOST}\r\nContent-Length: 5\r\n\r\nhello` +
          request('GET', '/healthz'),
      );
      const answered = responses(withBody.out, ['GET', 'GET']);
      expect(answered[0]).toMatchObject({ status: 200, body: FILES['agent-card.json'] });
      // The body is never taken for a request: the next answer, if any, is the health check.
      expect(answered.slice(1).every((r) => r.status === 200 && r.body === 'ok\n')).toBe(true);
      // The body is announced but not sent: the answer comes at once (a 100 may precede it).
      const expect100 = await exchange(
        server.port,
        `GET ${CARD} HTTP/1.1\r\nHost: ${DEFAULT_HOST}\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n`,
        1000,
      );
      const final = expect100.out.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '');
      expect(responses(final, ['GET'])[0]).toMatchObject({ status: 200, body: FILES['agent-card.json'] });
    });

    it('answers a TLS ClientHello at once with a 400 and closes', async () => {
      const hello = Buffer.concat([
        Buffer.from([0x16, 0x03, 0x01, 0x00, 0xc8, 0x01, 0x00, 0x00, 0xc4, 0x03, 0x03]),
        Buffer.alloc(189, 0x2a),
      ]);
      const started = Date.now();
      const res = await exchange(server.port, hello, 3000);
      expect(res.out).toMatch(/^HTTP\/1\.1 400 /);
      expect(res.closed).toBe(true);
      expect(Date.now() - started).toBeLessThan(2000);
    });

    it('answers path tricks with 404 (never a file outside the three paths)', async () => {
      for (const path of [
        '/.well-known/%2e%2e/.well-known/agent-card.json',
        '/.well-known/%2e/agent-card.json',
        '//.well-known/agent-card.json',
        '/.well-known//agent-card.json',
        '/.well-known/./agent-card.json',
        '/x/../.well-known/agent-card.json',
        '/.well-known/agent-card.json/',
        '/.well-known/..%2fcache-max-age-seconds',
        '/..data/agent-card.json',
        '/cache-max-age-seconds',
        '/host.api.example.com.agent-card.json',
        '/.agentcard/agent-card',
      ]) {
        const { out } = await exchange(
          server.port,
          request('GET', path) + request('GET', '/healthz', { connection: 'close' }),
        );
        const [first] = responses(out, ['GET', 'GET']);
        expect(first!.status, path).toBe(404);
        expect(first!.body, path).toBe('not found\n');
      }
    });

    it('selects the card by Host: exact, then wildcard of one label, then default (or 404)', async () => {
      const name = async (host: string, path = CARD) => {
        const { out } = await exchange(server.port, request('GET', path, { host, connection: 'close' }));
        const [r] = responses(out, ['GET']);
        return r!.status === 200 ? (JSON.parse(r!.body) as { name: string }).name : r!.status;
      };
      expect(await name('api.example.com')).toBe('api-audience');
      expect(await name('API.example.com:8443')).toBe('api-audience');
      expect(await name('api.example.com.')).toBe('api-audience');
      expect(await name('a.partners.example.com')).toBe('partner-audience');
      expect(await name(DEFAULT_HOST)).toBe('weather-agent');
      // Hosts no audience claims: the sidecar's default card; the card server's 404.
      expect(await name('a.b.partners.example.com')).toBe(unclaimed);
      expect(await name('partners.example.com')).toBe(unclaimed);
      expect(await name('api.example.com', '/.well-known/agent.json')).toBe('api-legacy');
      expect(await name('a.partners.example.com', '/.well-known/agent.json')).toBe('weather-agent');
      // Not DNS names: the default card or 404 (nginx refuses some of them itself with a 400).
      for (const host of [
        '..',
        'a..b',
        'x/../y',
        'a\\b',
        '[::1]:8095',
        'host.api.example.com',
        '*.partners.example.com',
      ]) {
        expect([400, unclaimed]).toContain(await name(host));
      }
      const etags = new Set<string>();
      for (const host of ['api.example.com', 'a.partners.example.com', DEFAULT_HOST]) {
        const res = await exchange(server.port, request('GET', CARD, { host }));
        etags.add(/\r\netag: *([^\r]+)/i.exec(res.out)![1]!);
      }
      expect(etags.size).toBe(3);
    });

    it('uses X-Forwarded-Host only when the proxy is trusted', async () => {
      const xfh = request('GET', CARD, { host: 'internal', 'x-forwarded-host': 'api.example.com, proxy' });
      const untrusted = responses((await exchange(server.port, xfh)).out, ['GET'])[0]!;
      if (unclaimed === 404) expect(untrusted.status).toBe(404);
      else expect(JSON.parse(untrusted.body)).toMatchObject({ name: 'weather-agent' });
      const trusted = await target.start(FILES, { trustForwardedHost: true });
      try {
        const res = responses((await exchange(trusted.port, xfh)).out, ['GET'])[0]!;
        expect(JSON.parse(res.body)).toMatchObject({ name: 'api-audience' });
      } finally {
        await trusted.close();
      }
    });

    it('serves a new version of the card files at once, with a new ETag', async () => {
      // fetch() cannot set Host (a forbidden header name), so the requests are written by hand.
      const get = async () => {
        const { out } = await exchange(server.port, request('GET', CARD, { host: 'api.example.com' }));
        const [res] = responses(out, ['GET']);
        return { body: res!.body, etag: /\r\netag: *([^\r]+)/i.exec(res!.head)?.[1] };
      };
      const before = await get();
      expect(JSON.parse(before.body)).toMatchObject({ name: 'api-audience', version: '1.0.0' });
      await server.publish({
        ...FILES,
        'host.api.example.com.agent-card.json': cardJson('1.0.1', 'api-audience'),
      });
      try {
        // The Node mode notices the swap through its directory watch; nginx reads the files per
        // request; the card server gets the ConfigMap from its watch.
        let after = await get();
        for (let i = 0; i < 50 && after.body === before.body; i++) {
          await new Promise((r) => setTimeout(r, 100));
          after = await get();
        }
        expect(JSON.parse(after.body)).toMatchObject({ name: 'api-audience', version: '1.0.1' });
        expect(after.etag).not.toBe(before.etag);
      } finally {
        await server.publish(FILES);
      }
    });

    it('keeps an idle connection past 5 s, and closes it cleanly at the keep-alive boundary', async () => {
      /** One request, an idle pause, then a second request on the same connection if it is still open. */
      const reuse = (port: number, idleMs: number) =>
        new Promise<{ first: string; second: string; closedWhileIdle: boolean }>((resolve, reject) => {
          const socket = connect(port, '127.0.0.1');
          let out = '';
          let first: string | undefined;
          let closed = false;
          socket.setEncoding('latin1');
          socket.on('data', (d: string) => (out += d));
          socket.on('error', reject);
          socket.on('close', () => {
            closed = true;
            if (first !== undefined)
              resolve({ first, second: out.slice(first.length), closedWhileIdle: false });
          });
          socket.write(request('GET', '/healthz'));
          setTimeout(() => {
            first = out;
            if (closed) resolve({ first, second: '', closedWhileIdle: true });
            else socket.write(request('GET', '/healthz', { connection: 'close' }));
          }, idleMs);
        });
      const [long, withinShort, pastShort] = await Promise.all([
        reuse(server.port, 6_000),
        reuse(empty.port, 1_000),
        reuse(empty.port, 3_500),
      ]);
      expect(long.first).toMatch(/^HTTP\/1\.1 200 /);
      expect(long.second).toMatch(/^HTTP\/1\.1 200 /);
      expect(withinShort.second).toMatch(/^HTTP\/1\.1 200 /);
      expect(pastShort.first).toMatch(/^HTTP\/1\.1 200 /);
      // Past its keep-alive the server closed the idle connection itself, without an answer.
      expect(pastShort.closedWhileIdle).toBe(true);
    });

    it('gives curl the card directly and through nginx and HAProxy', async () => {
      const proxies = await Promise.all(PROXIES.map((kind) => startProxy(kind, server.port)));
      try {
        for (const port of [server.port, ...proxies.map((p) => p.port)]) {
          const { stdout } = await run('curl', [
            '-sS',
            '--fail',
            '-H',
            'Host: api.example.com',
            `http://127.0.0.1:${port}${CARD}`,
          ]);
          expect(stdout).toBe(FILES['host.api.example.com.agent-card.json']);
          const head = await run('curl', [
            '-sS',
            '-I',
            '--fail',
            '-H',
            `Host: ${DEFAULT_HOST}`,
            `http://127.0.0.1:${port}${CARD}`,
          ]);
          expect(head.stdout).toMatch(/^HTTP\/1\.1 200 /);
          const missing = await run('curl', [
            '-sS',
            '-o',
            '/dev/null',
            '-w',
            '%{http_code}',
            '-I',
            '-H',
            `Host: ${DEFAULT_HOST}`,
            `http://127.0.0.1:${port}/nope`,
          ]);
          expect(missing.stdout).toBe('404');
        }
      } finally {
        await Promise.all(proxies.map((p) => p.close()));
      }
    });

    it("gives @a2a-js/sdk's card resolver the card directly and through nginx and HAProxy", async () => {
      const proxies = await Promise.all(PROXIES.map((kind) => startProxy(kind, server.port)));
      try {
        for (const port of [server.port, ...proxies.map((p) => p.port)]) {
          // The sidecar answers the resolver's own Host (127.0.0.1:port); the card server only a
          // claimed one.
          const resolver = new DefaultAgentCardResolver(
            target.unclaimedHost === 'default' ? undefined : { fetchImpl: defaultHostFetch },
          );
          const card = await resolver.resolve(`http://127.0.0.1:${port}`);
          expect(card).toMatchObject({ name: 'weather-agent', version: '1.0.0' });
        }
      } finally {
        await Promise.all(proxies.map((p) => p.close()));
      }
    });

    it("serves Go's net/http 10,000 concurrent HEAD and GET on reused connections without an error, directly and through proxies", async () => {
      const expected = sha256(FILES['agent-card.json']);
      const direct = await runGoClient({
        url: `http://127.0.0.1:${server.port}${CARD}`,
        host: DEFAULT_HOST,
        n: 10_000,
        c: 8,
        sha256: expected,
      });
      expect(direct).toMatchObject({ requests: 10_000, errors: 0, firstErrors: [] });
      // Connections were reused, not opened per request.
      expect(direct.newConns).toBeLessThan(100);
      const proxies = await Promise.all(PROXIES.map((kind) => startProxy(kind, server.port)));
      try {
        for (const proxy of proxies) {
          const res = await runGoClient({
            url: `http://127.0.0.1:${proxy.port}${CARD}`,
            host: DEFAULT_HOST,
            n: 10_000,
            c: 8,
            sha256: expected,
          });
          expect(res).toMatchObject({ requests: 10_000, errors: 0, firstErrors: [] });
        }
      } finally {
        await Promise.all(proxies.map((p) => p.close()));
      }
    }, 120_000);
  });
}
