import { describe, expect, it } from 'vitest';
import { checkAgentCard, checkJwks, checkLegacyCard } from '../../../operator/sidecar/check.ts';
import { prepareVersion } from '../../../operator/sidecar/version.ts';
import type { FileContent } from '../../../operator/sidecar/version.ts';
import { cardFiles, cardJson } from '../../support/card-files.ts';

const MTIME = Date.UTC(2026, 10, 30, 1, 2, 3, 456);

function fileSet(files: Record<string, string>): Map<string, FileContent> {
  return new Map(
    Object.entries(files).map(([name, text]) => {
      const bytes = Buffer.from(text);
      return [name, { bytes, size: bytes.length, mtimeMs: MTIME }];
    }),
  );
}

function headerMap(flat: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) out[flat[i]!.toLowerCase()] = flat[i + 1]!;
  return out;
}

describe('checkAgentCard', () => {
  const card = JSON.parse(cardJson()) as Record<string, unknown>;
  it('accepts a v1.0 card', () => {
    expect(checkAgentCard(card)).toBeUndefined();
  });
  it.each([
    ['name', "'name' must be a string"],
    ['supportedInterfaces', "'supportedInterfaces' must be a non-empty list"],
    ['capabilities', "'capabilities' must be an object"],
    ['skills', "'skills' must be a list"],
  ])('names a missing %s', (field, message) => {
    const broken = { ...card };
    delete broken[field];
    expect(checkAgentCard(broken)).toContain(message);
  });
  it('refuses an interface without a protocolBinding, a non-object and an empty name', () => {
    expect(
      checkAgentCard({ ...card, supportedInterfaces: [{ url: 'https://x', protocolVersion: '1.0' }] }),
    ).toBe('agent-card.json: supportedInterfaces[0].protocolBinding must be a non-empty string');
    expect(checkAgentCard([card])).toBe('agent-card.json is not a JSON object');
    expect(checkAgentCard({ ...card, name: ' ' })).toBe("agent-card.json: 'name' is empty");
  });
  it('checks the legacy card and the JWKS shapes', () => {
    expect(checkLegacyCard({ name: 'a', url: 'https://x' })).toBeUndefined();
    expect(checkLegacyCard({ name: 'a' })).toContain("'url'");
    expect(checkJwks({ keys: [] })).toBeUndefined();
    expect(checkJwks({ keys: [1] })).toContain('every key must be an object');
    expect(checkJwks({})).toContain("'keys' list");
  });
});

describe('prepareVersion', () => {
  it('prepares the three documents with validators, caching and CORS headers', () => {
    const result = prepareVersion(fileSet(cardFiles('2.1.0', '120')), { defaultMaxAgeSeconds: 300 });
    if (!result.ok) throw new Error(result.problem);
    const v = result.version;
    expect(v.cardVersion).toBe('2.1.0');
    expect(v.maxAgeSeconds).toBe(120);
    expect(v.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect([...v.documents.keys()].sort()).toEqual([
      '/.well-known/agent-card.json',
      '/.well-known/agent.json',
      '/.well-known/jwks.json',
    ]);
    const doc = v.documents.get('/.well-known/agent-card.json')!;
    expect(doc.body.toString()).toBe(cardJson('2.1.0'));
    const h = headerMap(doc.headers200);
    expect(h['content-type']).toBe('application/json');
    expect(h['content-length']).toBe(String(doc.body.length));
    expect(h['etag']).toBe(doc.etag);
    expect(h['cache-control']).toBe('public, max-age=120');
    expect(h['last-modified']).toBe('Mon, 30 Nov 2026 01:02:03 GMT');
    expect(h['access-control-allow-origin']).toBe('*');
    expect(h['x-content-type-options']).toBe('nosniff');
    expect(doc.lastModifiedSeconds).toBe(Math.floor(MTIME / 1000));
    const h304 = headerMap(doc.headers304);
    expect(h304['etag']).toBe(doc.etag);
    expect(h304['content-length']).toBeUndefined();
  });

  it('gives different strong ETags to different bytes and equal ones to equal bytes', () => {
    const a = prepareVersion(fileSet(cardFiles('1')), { defaultMaxAgeSeconds: 300 });
    const b = prepareVersion(fileSet(cardFiles('2')), { defaultMaxAgeSeconds: 300 });
    const a2 = prepareVersion(fileSet(cardFiles('1')), { defaultMaxAgeSeconds: 300 });
    if (!a.ok || !b.ok || !a2.ok) throw new Error('unexpected refusal');
    const etag = (r: typeof a) => (r.ok ? r.version.documents.get('/.well-known/agent-card.json')!.etag : '');
    expect(etag(a)).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(etag(a)).not.toBe(etag(b));
    expect(etag(a)).toBe(etag(a2));
  });

  it('uses the default max-age when the directory has no cache-max-age-seconds', () => {
    const files = cardFiles();
    delete (files as Record<string, string | undefined>)['cache-max-age-seconds'];
    const r = prepareVersion(fileSet(files), { defaultMaxAgeSeconds: 42 });
    expect(r.ok && r.version.maxAgeSeconds).toBe(42);
  });

  it.each([
    [{ 'agent-card.json': undefined }, 'agent-card.json is missing'],
    [{ 'agent-card.json': '{"name":' }, 'agent-card.json is not valid JSON'],
    [{ 'agent-card.json': '{"name":"x"}' }, "agent-card.json: 'description' must be a string"],
    [{ 'jwks.json': '[]' }, "jwks.json: must be an object with a 'keys' list"],
    [{ 'agent.json': 'null' }, 'agent.json is not a JSON object'],
    [{ 'cache-max-age-seconds': '-1' }, 'cache-max-age-seconds must be an integer from 0 to 86400'],
    [{ 'cache-max-age-seconds': '86401' }, 'cache-max-age-seconds must be an integer from 0 to 86400'],
  ])('refuses %j', (override, problem) => {
    const files: Record<string, string> = { ...cardFiles() };
    for (const [k, v] of Object.entries(override)) {
      if (v === undefined) delete files[k];
      else files[k] = v;
    }
    const r = prepareVersion(fileSet(files), { defaultMaxAgeSeconds: 300 });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.problem).toContain(problem);
  });

  it('refuses a file over 1 MiB by its size', () => {
    const files = fileSet(cardFiles());
    files.set('agent-card.json', { bytes: Buffer.alloc(0), size: 2 * 1024 * 1024, mtimeMs: MTIME });
    const r = prepareVersion(files, { defaultMaxAgeSeconds: 300 });
    expect(!r.ok && r.problem).toBe('agent-card.json is 2097152 bytes, over the 1 MiB limit');
  });

  it('serves a card without the optional agent.json and jwks.json', () => {
    const r = prepareVersion(fileSet({ 'agent-card.json': cardJson() }), { defaultMaxAgeSeconds: 300 });
    expect(r.ok && [...r.version.documents.keys()]).toEqual(['/.well-known/agent-card.json']);
  });

  it('prepares per-audience variants and refuses a version with a broken one, naming its file', () => {
    const files = {
      ...cardFiles('1'),
      'host.api.example.com.agent-card.json': cardJson('1', 'api'),
      'wildcard.example.com.agent.json': JSON.stringify({ name: 'legacy', url: 'https://x' }),
      'host.api.example.com.jwks.json': '{}', // not a variant file: ignored
    };
    const r = prepareVersion(fileSet(files), { defaultMaxAgeSeconds: 300 });
    if (!r.ok) throw new Error(r.problem);
    expect([...r.version.variants.keys()]).toEqual([
      'host.api.example.com.agent-card.json',
      'wildcard.example.com.agent.json',
    ]);
    const variant = r.version.variants.get('host.api.example.com.agent-card.json')!;
    expect(variant.answers.get.route).toBe('/.well-known/agent-card.json');
    expect(variant.etag).not.toBe(r.version.documents.get('/.well-known/agent-card.json')!.etag);
    const broken = prepareVersion(
      fileSet({ ...files, 'host.api.example.com.agent-card.json': '{"name":"x"}' }),
      {
        defaultMaxAgeSeconds: 300,
      },
    );
    expect(!broken.ok && broken.problem).toBe(
      "host.api.example.com.agent-card.json: 'description' must be a string",
    );
  });
});
