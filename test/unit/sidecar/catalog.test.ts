// The well-known server as the catalog server: a catalog ConfigMap's files (ai-catalog.json, its
// page, partitions, jwks.json) served with the same HTTP behaviour as cards, over real loopback HTTP.
import { rm } from 'node:fs/promises';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../operator/log.ts';
import { PAGE_CSP } from '../../../operator/catalog/page-style.ts';
import { renderPage } from '../../../operator/catalog/page.ts';
import { startSidecar } from '../../../operator/sidecar/server.ts';
import { JWKS, cardFiles, kubeletWrite, tempDir } from '../../support/card-files.ts';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const catalog = (n: number) =>
  JSON.stringify({
    specVersion: '1.0',
    entries: Array.from({ length: n }, (_, i) => ({
      identifier: `urn:air:example.com:ns:a${i}`,
      type: 'application/a2a-agent-card+json',
      url: `https://a${i}.example.com/.well-known/agent-card.json`,
    })),
  });
const page = renderPage({
  title: 'Agents',
  catalogUrl: '/.well-known/ai-catalog.json',
  agents: [],
  nested: [],
  signed: false,
});

async function start(files: Record<string, string>) {
  const dir = await tempDir();
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  await kubeletWrite(dir, files);
  const sidecar = await startSidecar({
    dir,
    port: 0,
    metricsPort: 0,
    host: '127.0.0.1',
    defaultMaxAgeSeconds: 300,
    logger: createLogger({}, { write: () => {} }),
    pollMs: 60_000,
  });
  cleanups.push(() => sidecar.close());
  await sidecar.reload();
  return {
    dir,
    base: `http://127.0.0.1:${sidecar.port}`,
    admin: `http://127.0.0.1:${sidecar.metricsPort}`,
    sidecar,
  };
}

async function get(url: string, opts: Parameters<typeof request>[1] = {}) {
  const res = await request(url, opts);
  return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
}

describe('the catalog server', () => {
  it('serves ai-catalog.json as application/ai-catalog+json with ETag, 304, Cache-Control, CORS and HEAD', async () => {
    const text = catalog(2);
    const { base, admin } = await start({
      'ai-catalog.json': text,
      'index.html': page,
      'jwks.json': JWKS,
      'cache-max-age-seconds': '60',
    });
    const res = await get(`${base}/.well-known/ai-catalog.json`);
    expect(res.status).toBe(200);
    expect(res.body).toBe(text);
    expect(res.headers['content-type']).toBe('application/ai-catalog+json');
    expect(res.headers['cache-control']).toBe('public, max-age=60');
    expect(res.headers['access-control-allow-origin']).toBe('*');
    const etag = res.headers.etag as string;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const again = await get(`${base}/.well-known/ai-catalog.json`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
    const head = await get(`${base}/.well-known/ai-catalog.json`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers['content-length']).toBe(String(Buffer.byteLength(text)));
    expect(head.body).toBe('');
    expect((await get(`${base}/.well-known/jwks.json`)).status).toBe(200);
    // No card in a catalog ConfigMap: the card path is not found, and the server is ready.
    expect((await get(`${base}/.well-known/agent-card.json`)).status).toBe(404);
    expect((await get(`${admin}/readyz`)).status).toBe(200);
  });

  it('serves the page at / as HTML under a CSP that allows only its own style', async () => {
    const { base } = await start({ 'ai-catalog.json': catalog(1), 'index.html': page });
    const res = await get(`${base}/`);
    expect(res.status).toBe(200);
    expect(res.body).toBe(page);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['content-security-policy']).toBe(PAGE_CSP);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    const revalidated = await get(`${base}/`, { headers: { 'if-none-match': res.headers.etag as string } });
    expect(revalidated.status).toBe(304);
    expect(revalidated.headers['content-security-policy']).toBe(PAGE_CSP);
  });

  it('serves partitions at /.well-known/ai-catalog/p<N>.json and /p<N>.html, and 404 for others', async () => {
    const p0 = catalog(3);
    const { base } = await start({
      'ai-catalog.json': catalog(0),
      'index.html': page,
      'ai-catalog.p0.json': p0,
      'index.p0.html': page,
    });
    const part = await get(`${base}/.well-known/ai-catalog/p0.json`);
    expect(part.status).toBe(200);
    expect(part.body).toBe(p0);
    expect(part.headers['content-type']).toBe('application/ai-catalog+json');
    expect((await get(`${base}/p0.html`)).headers['content-type']).toBe('text/html; charset=utf-8');
    expect((await get(`${base}/.well-known/ai-catalog/p1.json`)).status).toBe(404);
    expect((await get(`${base}/.well-known/ai-catalog/../jwks.json`)).status).toBe(404);
  });

  it('refuses a broken catalog and keeps serving the last good one', async () => {
    const good = catalog(1);
    const { base, dir, sidecar } = await start({ 'ai-catalog.json': good, 'index.html': page });
    await kubeletWrite(dir, { 'ai-catalog.json': '{"specVersion":"1.0","entries":', 'index.html': page });
    await sidecar.reload();
    expect((await get(`${base}/.well-known/ai-catalog.json`)).body).toBe(good);
    await kubeletWrite(dir, { 'ai-catalog.json': good, 'index.html': 'not html' });
    await sidecar.reload();
    expect((await get(`${base}/`)).body).toBe(page);
  });

  it('still answers / with the health text for a card ConfigMap (no page)', async () => {
    const { base } = await start(cardFiles('1.0.0'));
    const res = await get(`${base}/`);
    expect(res.status).toBe(200);
    expect(res.body).toBe('ok\n');
    expect((await get(`${base}/.well-known/ai-catalog.json`)).status).toBe(404);
  });
});
