import { beforeAll, describe, expect, it } from 'vitest';
import { generateSigningJwk } from '../../../operator/card/keygen.ts';
import { importSigningKey, publicJwks, signCard } from '../../../operator/card/sign.ts';
import { serializeCard } from '../../../operator/card/serialize.ts';
import type { JWKS } from '../../../operator/card/verify.ts';
import { canonicalDigest, compareServed, jsonDifferences } from '../../../operator/served/compare.ts';
import { minimalCard } from '../../support/cards.ts';

let published: string;
let keys: JWKS;
let otherKeys: JWKS;
let resignedByOther: string;

const served = (text: string) => ({ ok: true as const, text });
const edited = (edit: (card: Record<string, unknown>) => void): string => {
  const card = JSON.parse(published) as Record<string, unknown>;
  edit(card);
  return JSON.stringify(card);
};

beforeAll(async () => {
  const key = await importSigningKey(JSON.stringify(await generateSigningJwk('ES256', 'ours')));
  const other = await importSigningKey(JSON.stringify(await generateSigningJwk('ES256', 'gateway')));
  keys = publicJwks([key]);
  otherKeys = publicJwks([other]);
  published = serializeCard(await signCard(minimalCard(), [key]));
  resignedByOther = serializeCard(await signCard(JSON.parse(published) as Record<string, unknown>, [other]));
});

describe('compareServed', () => {
  it('finds the very bytes served as signed', async () => {
    const result = await compareServed(published, keys, served(published));
    expect(result).toMatchObject({ verdict: 'ServedAsSigned', paths: [], differences: 0 });
    expect(result.detail).toContain('kid ours');
    expect(result.servedDigest).toBe(canonicalDigest(JSON.parse(published)));
  });

  it('accepts reordered keys and other whitespace: the canonical JSON is the same', async () => {
    const card = JSON.parse(published) as Record<string, unknown>;
    const reordered = Object.fromEntries(Object.entries(card).reverse());
    const text = JSON.stringify(reordered, null, 4);
    expect(text).not.toBe(published);
    expect((await compareServed(published, keys, served(text))).verdict).toBe('ServedAsSigned');
  });

  it('names the rewritten interface URL, whose signature no longer verifies', async () => {
    const text = edited((c) => {
      (c.supportedInterfaces as Array<{ url: string }>)[0]!.url = 'https://gateway.example.net/a2a';
    });
    const result = await compareServed(published, keys, served(text));
    expect(result.verdict).toBe('Rewritten');
    expect(result.paths).toEqual(['supportedInterfaces[0].url']);
    expect(result.detail).toBe('differs at supportedInterfaces[0].url; its signatures no longer verify');
  });

  it('reports stripped signatures as SignatureBroken, with the renamed member as paths', async () => {
    const text = published.replace('"signatures"', '"x-signatures"');
    const result = await compareServed(published, keys, served(text));
    expect(result.verdict).toBe('SignatureBroken');
    expect(result.paths).toEqual(['signatures', '["x-signatures"]']);
    expect(result.detail).toMatch(/^the signatures are missing/);
  });

  it('reports a removed or emptied signatures member as SignatureBroken', async () => {
    for (const text of [edited((c) => delete c.signatures), edited((c) => (c.signatures = []))]) {
      expect((await compareServed(published, keys, served(text))).verdict).toBe('SignatureBroken');
    }
  });

  it('reports a card re-signed with keys that are not the card’s as SignatureBroken', async () => {
    const result = await compareServed(published, keys, served(resignedByOther));
    expect(result.verdict).toBe('SignatureBroken');
    expect(result.paths.every((p) => p.startsWith('signatures'))).toBe(true);
    expect(result.detail).toContain('none verifies');
  });

  it('reports an extra signature next to a valid one as Rewritten: not the published digest', async () => {
    const extra = JSON.parse(resignedByOther) as { signatures: unknown[] };
    const text = edited((c) => (c.signatures = [...(c.signatures as unknown[]), ...extra.signatures]));
    const result = await compareServed(published, keys, served(text));
    expect(result).toMatchObject({ verdict: 'Rewritten', paths: ['signatures[1]'] });
  });

  it('reports the published bytes as SignatureBroken when the keys no longer verify them', async () => {
    const result = await compareServed(published, otherKeys, served(published));
    expect(result.verdict).toBe('SignatureBroken');
    expect(result.detail).toContain('no trusted key with kid "ours"');
  });

  it('treats a body that is not a JSON object as rewritten', async () => {
    for (const text of ['<html>gateway error</html>', '[1,2]', 'null']) {
      const result = await compareServed(published, keys, served(text));
      expect(result).toMatchObject({ verdict: 'Rewritten', paths: ['(the whole document)'] });
    }
  });

  it('passes the reason of a failed fetch through as Unreachable', async () => {
    const result = await compareServed(published, keys, { ok: false, reason: 'connection refused' });
    expect(result).toEqual({
      verdict: 'Unreachable',
      paths: [],
      differences: 0,
      detail: 'connection refused',
    });
  });

  it('compares an unsigned card by content only', async () => {
    const unsigned = serializeCard(minimalCard());
    expect((await compareServed(unsigned, { keys: [] }, served(unsigned))).verdict).toBe('ServedAsPublished');
    const changed = unsigned.replace('Recipe Agent', 'Other Agent');
    expect(await compareServed(unsigned, { keys: [] }, served(changed))).toMatchObject({
      verdict: 'Rewritten',
      paths: ['name'],
      detail: 'differs at name',
    });
  });

  it('bounds the listed paths and counts the rest', async () => {
    const text = edited((c) => {
      for (let i = 0; i < 12; i++) c[`x${String(i).padStart(2, '0')}`] = i;
    });
    const result = await compareServed(published, keys, served(text));
    expect(result.verdict).toBe('Rewritten');
    expect(result.paths).toHaveLength(8);
    expect(result.differences).toBe(12);
    expect(result.detail).toContain('and 4 more');
  });
});

describe('jsonDifferences', () => {
  it('reports added, removed and changed members and items by path', () => {
    const before = { a: 1, b: { c: [1, 2, 3] }, 'd e': true };
    const after = { a: 2, b: { c: [1, 2] }, f: null, 'd e': true };
    expect(jsonDifferences(before, after)).toEqual({ paths: ['a', 'b.c[2]', 'f'], total: 3 });
  });

  it('finds nothing between equal values whatever the key order', () => {
    expect(jsonDifferences({ a: 1, b: [{ x: 1, y: 2 }] }, { b: [{ y: 2, x: 1 }], a: 1 }).total).toBe(0);
  });

  it('reports a change of kind (object to array, string to number)', () => {
    expect(jsonDifferences({ a: {}, b: '1' }, { a: [], b: 1 }).paths).toEqual(['a', 'b']);
  });
});

describe('paths from a hostile server', () => {
  it('are one bounded line without control characters', async () => {
    const text = edited((c) => (c[`evil\nline\u0085${'x'.repeat(500)}`] = 1));
    const result = await compareServed(published, keys, served(text));
    expect(result.paths).toHaveLength(1);
    expect(result.paths[0]!.length).toBe(200);
    expect(result.paths[0]).not.toMatch(/[\n\u0085]/);
  });
});
