import { describe, expect, it } from 'vitest';
import { answer, etagListMatches } from '../../../operator/sidecar/respond.ts';
import type { RequestLine } from '../../../operator/sidecar/respond.ts';
import { prepareVersion } from '../../../operator/sidecar/version.ts';
import type { CardVersion } from '../../../operator/sidecar/version.ts';
import { cardFiles } from '../../support/card-files.ts';

const MTIME = Date.UTC(2025, 10, 30, 1, 2, 3);
const CARD = '/.well-known/agent-card.json';

function version(): CardVersion {
  const files = new Map(
    Object.entries(cardFiles()).map(([k, v]) => [
      k,
      { bytes: Buffer.from(v), size: v.length, mtimeMs: MTIME },
    ]),
  );
  const r = prepareVersion(files, { defaultMaxAgeSeconds: 300 });
  if (!r.ok) throw new Error(r.problem);
  return r.version;
}
const v = version();
const etag = v.documents.get(CARD)!.etag;

function ask(method: string, url: string, headers: RequestLine['headers'] = {}) {
  const a = answer({ method, url, headers }, v);
  const h: Record<string, string> = {};
  for (let i = 0; i < a.headers.length; i += 2) h[a.headers[i]!.toLowerCase()] = a.headers[i + 1]!;
  return { ...a, h };
}

describe('answer', () => {
  it('serves each document on GET, ignoring a query string', () => {
    for (const path of [
      '/.well-known/agent-card.json',
      '/.well-known/agent.json',
      '/.well-known/jwks.json',
    ]) {
      const a = ask('GET', path + '?x=1');
      expect(a.status).toBe(200);
      expect(a.body).toBe(v.documents.get(path)!.body);
      expect(a.route).toBe(path);
    }
  });

  it('answers HEAD with the GET headers and no body', () => {
    const a = ask('HEAD', CARD);
    expect(a.status).toBe(200);
    expect(a.body).toBeUndefined();
    expect(a.h['content-length']).toBe(String(v.documents.get(CARD)!.body.length));
  });

  it('answers 304 for a matching If-None-Match (weak comparison, lists and *)', () => {
    expect(ask('GET', CARD, { 'if-none-match': etag }).status).toBe(304);
    expect(ask('GET', CARD, { 'if-none-match': `"other", W/${etag}` }).status).toBe(304);
    expect(ask('HEAD', CARD, { 'if-none-match': '*' }).status).toBe(304);
    expect(ask('GET', CARD, { 'if-none-match': '"other"' }).status).toBe(200);
    const a = ask('GET', CARD, { 'if-none-match': etag });
    expect(a.body).toBeUndefined();
    expect(a.h['etag']).toBe(etag);
    expect(a.h['cache-control']).toBe('public, max-age=120');
  });

  it('evaluates If-Modified-Since only without If-None-Match', () => {
    const at = new Date(MTIME).toUTCString();
    const before = new Date(MTIME - 1000).toUTCString();
    expect(ask('GET', CARD, { 'if-modified-since': at }).status).toBe(304);
    expect(ask('GET', CARD, { 'if-modified-since': before }).status).toBe(200);
    expect(ask('GET', CARD, { 'if-modified-since': 'not a date' }).status).toBe(200);
    expect(
      ask('GET', CARD, { 'if-modified-since': new Date(Date.now() + 86_400_000).toUTCString() }).status,
    ).toBe(200);
    // If-None-Match takes precedence (RFC 9110 section 13.2.2).
    expect(ask('GET', CARD, { 'if-none-match': '"other"', 'if-modified-since': at }).status).toBe(200);
  });

  it('answers a CORS preflight and a plain OPTIONS', () => {
    const pre = ask('OPTIONS', CARD, {
      origin: 'https://app.example',
      'access-control-request-method': 'GET',
    });
    expect(pre.status).toBe(204);
    expect(pre.h['access-control-allow-origin']).toBe('*');
    expect(pre.h['access-control-allow-methods']).toBe('GET, HEAD, OPTIONS');
    expect(pre.h['access-control-allow-headers']).toBe('*');
    expect(pre.h['access-control-max-age']).toBe('86400');
    const plain = ask('OPTIONS', CARD);
    expect(plain.status).toBe(204);
    expect(plain.h['allow']).toBe('GET, HEAD, OPTIONS');
  });

  it('answers 404 for other paths and 405 with Allow for other methods', () => {
    const nf = ask('GET', '/.well-known/other.json');
    expect(nf.status).toBe(404);
    expect(nf.route).toBe('other');
    expect(nf.h['x-content-type-options']).toBe('nosniff');
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const a = ask(method, CARD);
      expect(a.status).toBe(405);
      expect(a.h['allow']).toBe('GET, HEAD, OPTIONS');
    }
  });

  it('answers 503 before a card is loaded', () => {
    const a = answer({ method: 'GET', url: CARD, headers: {} }, undefined);
    expect(a.status).toBe(503);
  });

  it('answers every request with an answer prepared before it, not a new object', () => {
    for (const [method, url, headers] of [
      ['GET', CARD, {}],
      ['HEAD', CARD, {}],
      ['GET', CARD, { 'if-none-match': etag }],
      ['GET', '/nope', {}],
      ['DELETE', CARD, {}],
      ['OPTIONS', CARD, {}],
      ['OPTIONS', CARD, { origin: 'https://a.example', 'access-control-request-method': 'GET' }],
    ] as const) {
      expect(answer({ method, url, headers }, v)).toBe(answer({ method, url, headers }, v));
    }
    expect(answer({ method: 'GET', url: CARD, headers: {} }, undefined)).toBe(
      answer({ method: 'GET', url: CARD, headers: {} }, undefined),
    );
    expect(answer({ method: 'GET', url: CARD, headers: {} }, v)).not.toBe(
      answer({ method: 'HEAD', url: CARD, headers: {} }, v),
    );
  });

  it('answers with the prepared header lists themselves, never copies or changes them', () => {
    const before = [...v.documents.get(CARD)!.headers200];
    expect(answer({ method: 'GET', url: CARD, headers: {} }, v).headers).toBe(
      v.documents.get(CARD)!.headers200,
    );
    expect(v.documents.get(CARD)!.headers200).toEqual(before);
  });
});

describe('etagListMatches', () => {
  it('compares entity tags exactly, after dropping the weak prefix', () => {
    expect(etagListMatches('"a"', '"a"')).toBe(true);
    expect(etagListMatches(' W/"a" ', '"a"')).toBe(true);
    expect(etagListMatches('"ab"', '"a"')).toBe(false);
    expect(etagListMatches('a', '"a"')).toBe(false);
  });
});
