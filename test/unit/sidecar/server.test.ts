import { connect } from 'node:net';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../operator/log.ts';
import { startSidecar } from '../../../operator/sidecar/server.ts';
import type { Sidecar, SidecarOptions } from '../../../operator/sidecar/server.ts';
import { cardFiles, cardJson, kubeletWrite, tempDir } from '../../support/card-files.ts';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function start(files?: Record<string, string>, extra: Partial<SidecarOptions> = {}) {
  const dir = await tempDir();
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  if (files) await kubeletWrite(dir, files);
  const logs: Record<string, unknown>[] = [];
  const sidecar: Sidecar = await startSidecar({
    dir,
    port: 0,
    metricsPort: 0,
    host: '127.0.0.1',
    defaultMaxAgeSeconds: 300,
    logger: createLogger({}, { write: (line) => logs.push(JSON.parse(line) as Record<string, unknown>) }),
    pollMs: 60_000,
    ...extra,
  });
  cleanups.push(() => sidecar.close());
  await sidecar.reload();
  const base = `http://127.0.0.1:${sidecar.port}`;
  const admin = `http://127.0.0.1:${sidecar.metricsPort}`;
  return { dir, sidecar, logs, base, admin };
}

async function get(url: string, opts: Parameters<typeof request>[1] = {}) {
  const res = await request(url, opts);
  const body = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body };
}

/** Sends raw bytes and returns everything the server writes before it closes the socket. */
function raw(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let out = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (out += d));
    socket.on('close', () => resolve(out));
    socket.on('error', reject);
    socket.setTimeout(5000, () => socket.destroy(new Error('no close within 5 s')));
    socket.write(bytes);
  });
}

describe('sidecar server', () => {
  it('serves the three documents with caching, validators, CORS and nosniff', async () => {
    const { base } = await start(cardFiles('1.2.3', '600'));
    const res = await get(`${base}/.well-known/agent-card.json`);
    expect(res.status).toBe(200);
    expect(res.body).toBe(cardJson('1.2.3'));
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.headers['cache-control']).toBe('public, max-age=600');
    expect(res.headers['etag']).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(Date.parse(res.headers['last-modified'] as string)).toBeGreaterThan(Date.now() - 60_000);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    const legacy = await get(`${base}/.well-known/agent.json`);
    expect(JSON.parse(legacy.body)).toMatchObject({
      protocolVersion: '0.3.0',
      url: 'https://weather.example.com/a2a',
    });
    const jwks = await get(`${base}/.well-known/jwks.json`);
    expect(JSON.parse(jwks.body)).toMatchObject({ keys: [{ kid: 'k1' }] });
    expect(jwks.headers['etag']).not.toBe(res.headers['etag']);
  });

  it('revalidates with If-None-Match and If-Modified-Since, and answers HEAD without a body', async () => {
    const { base } = await start(cardFiles());
    const first = await get(`${base}/.well-known/agent-card.json`);
    const etag = first.headers['etag'] as string;
    const lastModified = first.headers['last-modified'] as string;
    const inm = await get(`${base}/.well-known/agent-card.json`, { headers: { 'if-none-match': etag } });
    expect(inm.status).toBe(304);
    expect(inm.body).toBe('');
    expect(inm.headers['etag']).toBe(etag);
    const ims = await get(`${base}/.well-known/agent-card.json`, {
      headers: { 'if-modified-since': lastModified },
    });
    expect(ims.status).toBe(304);
    const stale = await get(`${base}/.well-known/agent-card.json`, { headers: { 'if-none-match': '"old"' } });
    expect(stale.status).toBe(200);
    const head = await get(`${base}/.well-known/agent-card.json`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    expect(head.headers['content-length']).toBe(String(Buffer.byteLength(first.body)));
  });

  it('answers a CORS preflight, 200 at / and /healthz, 404 for other paths and 405 with Allow for other methods', async () => {
    const { base } = await start(cardFiles());
    const pre = await get(`${base}/.well-known/agent-card.json`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers['access-control-allow-origin']).toBe('*');
    expect(pre.headers['access-control-allow-methods']).toBe('GET, HEAD, OPTIONS');
    // Load balancers' default health checks ask for / (and some for /healthz).
    expect(await get(`${base}/`)).toMatchObject({ status: 200, body: 'ok\n' });
    expect((await get(`${base}/healthz?probe=1`)).status).toBe(200);
    expect((await get(`${base}/healthz`, { method: 'DELETE' })).status).toBe(405);
    expect((await get(`${base}/.well-known/agent-card.json/x`)).status).toBe(404);
    const del = await get(`${base}/.well-known/jwks.json`, { method: 'DELETE' });
    expect(del.status).toBe(405);
    expect(del.headers['allow']).toBe('GET, HEAD, OPTIONS');
  });

  it('does not read request bodies: answers and closes the connection', async () => {
    const { sidecar } = await start(cardFiles());
    // The body is announced but never sent: a server that waited for it would hang.
    const out = await raw(
      sidecar.port,
      'POST /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n',
    );
    expect(out).toMatch(/^HTTP\/1\.1 405 /);
    expect(out.toLowerCase()).toContain('connection: close');
  });

  it('accepts large cookies and bounds the request header size with a 431', async () => {
    const { sidecar, base, admin } = await start(cardFiles());
    // Two 5 KB cookies, as a browser on a busy domain sends them.
    const cookies = { cookie: [`a=${'a'.repeat(5000)}`, `b=${'b'.repeat(5000)}`] };
    expect((await get(`${base}/.well-known/agent-card.json`, { headers: cookies })).status).toBe(200);
    const out = await raw(
      sidecar.port,
      `GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`,
    );
    expect(out).toMatch(/^HTTP\/1\.1 431 /);
    // The refusal is counted like any other answer.
    expect((await get(`${admin}/metrics`)).body).toContain(
      'agentcard_sidecar_requests_total{path="other",code="431"} 1',
    );
  });

  it('takes the header limit from its options', async () => {
    const { base } = await start(cardFiles(), { maxHeaderSize: 4096 });
    const res = await get(`${base}/.well-known/agent-card.json`, { headers: { cookie: 'a'.repeat(5000) } });
    expect(res.status).toBe(431);
  });

  it('answers a TLS ClientHello and garbage at once with a 400 and counts them', async () => {
    const { sidecar, admin } = await start(cardFiles());
    // The first bytes of a TLS 1.2/1.3 ClientHello record (RFC 8446 section 5.1).
    const hello = '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03' + '\x00'.repeat(32);
    const started = Date.now();
    expect(await raw(sidecar.port, hello)).toMatch(/^HTTP\/1\.1 400 /);
    expect(await raw(sidecar.port, 'HELLO\r\n\r\n')).toMatch(/^HTTP\/1\.1 400 /);
    expect(Date.now() - started).toBeLessThan(2000);
    expect((await get(`${admin}/metrics`)).body).toContain(
      'agentcard_sidecar_requests_total{path="other",code="400"} 2',
    );
  });

  it('never answers HEAD with a body, whatever the status', async () => {
    const { sidecar, dir } = await start();
    const head = (path: string) =>
      raw(sidecar.port, `HEAD ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
    // 503 before a card is loaded, 404 elsewhere and for a missing jwks.json, 200 for the card.
    const before = await head('/.well-known/agent-card.json');
    expect(before).toMatch(/^HTTP\/1\.1 503 /);
    expect(before.endsWith('\r\n\r\n')).toBe(true);
    await kubeletWrite(dir, { 'agent-card.json': cardJson() });
    await sidecar.reload();
    for (const [path, status] of [
      ['/nope', 404],
      ['/.well-known/jwks.json', 404],
      ['/.well-known/agent-card.json', 200],
      ['/', 200],
    ] as const) {
      const out = await head(path);
      expect(out).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
      expect(out.endsWith('\r\n\r\n')).toBe(true);
    }
  });

  it('never refuses a new client for the number of idle connections', async () => {
    const { sidecar, base } = await start(cardFiles(), { idleConnectionsSoftLimit: 2 });
    // Two clients that made a request and keep their connections open, idle.
    const held = [connect(sidecar.port, '127.0.0.1'), connect(sidecar.port, '127.0.0.1')];
    cleanups.push(() => held.forEach((s) => s.destroy()));
    await Promise.all(
      held.map(
        (s) =>
          new Promise((r) => {
            s.once('data', r);
            s.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
          }),
      ),
    );
    const closed = held.map((s) => new Promise((r) => s.once('close', r)));
    // A third client is served at once; the idle connections are the ones closed.
    const out = await raw(
      sidecar.port,
      'GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    );
    expect(out).toMatch(/^HTTP\/1\.1 200 /);
    await Promise.all(closed);
    expect((await get(`${base}/.well-known/agent-card.json`)).status).toBe(200);
  });

  it('keeps idle connections for the configured keep-alive and says so', async () => {
    const { base } = await start(cardFiles());
    const res = await get(`${base}/.well-known/agent-card.json`);
    expect(res.headers['keep-alive']).toBe('timeout=620');
  });

  it('selects the card by Host: exact host, then wildcard, then the default', async () => {
    const files = {
      ...cardFiles('1'),
      'host.api.example.com.agent-card.json': cardJson('1', 'exact-host'),
      'host.api.example.com.agent.json': JSON.stringify({ name: 'exact-legacy', url: 'https://x' }),
      'wildcard.example.com.agent-card.json': cardJson('1', 'wildcard'),
    };
    const { base, sidecar } = await start(files);
    const name = async (host: string, path = '/.well-known/agent-card.json', extra = {}) =>
      (JSON.parse((await get(`${base}${path}`, { headers: { host, ...extra } })).body) as { name: string })
        .name;
    expect(await name('api.example.com')).toBe('exact-host');
    expect(await name('API.Example.com.:8080')).toBe('exact-host');
    expect(await name('other.example.com')).toBe('wildcard');
    // A wildcard matches exactly one more label.
    expect(await name('a.b.example.com')).toBe('weather-agent');
    expect(await name('example.com')).toBe('weather-agent');
    expect(await name('api.example.com', '/.well-known/agent.json')).toBe('exact-legacy');
    // No wildcard agent.json: the default one.
    expect(await name('other.example.com', '/.well-known/agent.json')).toBe('weather-agent');
    // Names that are not DNS names select the default, never another file.
    for (const host of ['..', 'a/../b', 'x y', '[::1]:80', 'host.api.example.com']) {
      expect(await name(host)).toBe('weather-agent');
    }
    // X-Forwarded-Host is ignored unless the proxy is trusted.
    expect(await name('localhost', undefined, { 'x-forwarded-host': 'api.example.com' })).toBe(
      'weather-agent',
    );
    const etags = await Promise.all(
      ['api.example.com', 'other.example.com', 'localhost'].map(
        async (host) =>
          (await get(`${base}/.well-known/agent-card.json`, { headers: { host } })).headers['etag'],
      ),
    );
    expect(new Set(etags).size).toBe(3);
    await sidecar.close();
    const trusted = await start(files, { trustForwardedHost: true });
    const res = await get(`${trusted.base}/.well-known/agent-card.json`, {
      headers: { host: 'localhost', 'x-forwarded-host': 'api.example.com, proxy.internal' },
    });
    expect(JSON.parse(res.body)).toMatchObject({ name: 'exact-host' });
  });

  it('is not ready and answers 503 until a valid card is present, then serves it', async () => {
    const { base, admin, dir, sidecar } = await start();
    expect((await get(`${admin}/healthz`)).status).toBe(200);
    expect((await get(`${admin}/readyz`)).status).toBe(503);
    expect((await get(`${base}/.well-known/agent-card.json`)).status).toBe(503);
    // An empty directory (a ConfigMap not published yet) is waited for, not counted as a failure.
    expect((await get(`${admin}/metrics`)).body).toMatch(/^agentcard_sidecar_reload_failures_total 0$/m);
    await writeFile(join(dir, 'agent-card.json'), cardJson('9'));
    await sidecar.reload();
    expect((await get(`${admin}/readyz`)).status).toBe(200);
    expect(JSON.parse((await get(`${base}/.well-known/agent-card.json`)).body)).toMatchObject({
      version: '9',
    });
  });

  it('keeps the last good card when new files are invalid, and counts and logs the refusal', async () => {
    const { base, admin, dir, sidecar, logs } = await start(cardFiles('1'));
    const before = await get(`${base}/.well-known/agent-card.json`);
    await kubeletWrite(dir, { ...cardFiles('2'), 'agent-card.json': '{"name": "truncated' });
    await sidecar.reload();
    const after = await get(`${base}/.well-known/agent-card.json`);
    expect(after.body).toBe(before.body);
    expect(after.headers['etag']).toBe(before.headers['etag']);
    // All three documents stay on the old version, not only the broken one.
    expect(JSON.parse((await get(`${base}/.well-known/agent.json`)).body)).toMatchObject({ version: '1' });
    const metrics = (await get(`${admin}/metrics`)).body;
    expect(metrics).toMatch(/^agentcard_sidecar_reload_failures_total 1$/m);
    expect(
      logs.find((l) => l.msg === 'refused new card files; still serving the previous card'),
    ).toMatchObject({
      problem: expect.stringContaining('agent-card.json is not valid JSON'),
    });
  });

  it('swaps all documents together and reports requests and the card digest in /metrics', async () => {
    const { base, admin, dir, sidecar } = await start(cardFiles('1'));
    await get(`${base}/.well-known/agent-card.json`);
    await get(`${base}/nope`);
    await kubeletWrite(dir, cardFiles('2', '60'));
    await sidecar.reload();
    const card = await get(`${base}/.well-known/agent-card.json`);
    expect(JSON.parse(card.body)).toMatchObject({ version: '2' });
    expect(card.headers['cache-control']).toBe('public, max-age=60');
    expect(JSON.parse((await get(`${base}/.well-known/agent.json`)).body)).toMatchObject({ version: '2' });
    const metrics = (await get(`${admin}/metrics`)).body;
    expect(metrics).toContain(
      'agentcard_sidecar_requests_total{path="/.well-known/agent-card.json",code="200"} 2',
    );
    expect(metrics).toContain('agentcard_sidecar_requests_total{path="other",code="404"} 1');
    expect(metrics).toContain(
      `agentcard_sidecar_card_info{digest="${sidecar.current()!.digest}",version="2"} 1`,
    );
    expect(metrics).toMatch(/^agentcard_sidecar_reloads_total 2$/m);
  });
});
