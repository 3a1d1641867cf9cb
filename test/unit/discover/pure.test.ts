/** The pure parts of discovery: where to look, what a document is, loops, jku rules, filters, caching rules, the table. */
import { describe, expect, it } from 'vitest';
import { cacheDirectives, isFresh } from '../../../operator/discover/cache.ts';
import { matchesFilter } from '../../../operator/discover/filter.ts';
import { formatTable } from '../../../operator/discover/format.ts';
import {
  classifyDocument,
  nestingLoop,
  parseTargetUrl,
  redactUrl,
  shorten,
  startCandidates,
} from '../../../operator/discover/plan.ts';
import type { CardReport, DiscoverReport } from '../../../operator/discover/report.ts';
import { jkuDecision } from '../../../operator/discover/trust.ts';

describe('startCandidates', () => {
  it('an origin: the AI Catalog, then the agent card', () => {
    expect(startCandidates(parseTargetUrl('https://agents.example.com'))).toEqual([
      { url: 'https://agents.example.com/.well-known/ai-catalog.json', expect: 'catalog' },
      { url: 'https://agents.example.com/.well-known/agent-card.json', expect: 'card' },
    ]);
  });
  it('any other URL is fetched as it is', () => {
    expect(startCandidates(parseTargetUrl('https://a.example/cat.json#x'))).toEqual([
      { url: 'https://a.example/cat.json', expect: 'any' },
    ]);
    expect(startCandidates(parseTargetUrl('https://a.example/?q=1'))).toEqual([
      { url: 'https://a.example/?q=1', expect: 'any' },
    ]);
  });
});

describe('parseTargetUrl', () => {
  it('resolves relative entries against the catalog URL', () => {
    expect(parseTargetUrl('team.json', 'https://a.example/catalogs/main.json').href).toBe(
      'https://a.example/catalogs/team.json',
    );
  });
  it('refuses other schemes, credentials and non-URLs, without echoing secrets', () => {
    expect(() => parseTargetUrl('file:///etc/passwd')).toThrow(
      'file URLs are not fetched (only http and https)',
    );
    expect(() => parseTargetUrl('https://user:s3cret@a.example/')).toThrow(
      'URLs with credentials (user:password@) are not fetched',
    );
    expect(() => parseTargetUrl('https://user:s3cret@a.example/')).not.toThrow(/s3cret/);
    expect(() => parseTargetUrl('http://[::1')).toThrow("'http://[::1' is not a URL");
  });
});

describe('classifyDocument', () => {
  it('by media type first, then by shape', () => {
    expect(classifyDocument({ anything: 1 }, 'application/ai-catalog+json; charset=utf-8')).toBe('catalog');
    expect(classifyDocument({ anything: 1 }, 'application/a2a-agent-card+json')).toBe('card');
    expect(classifyDocument({ specVersion: '1.0', entries: [] }, 'application/json')).toBe('catalog');
    expect(classifyDocument({ name: 'x', supportedInterfaces: [] })).toBe('card');
    expect(classifyDocument({ name: 'x', url: 'https://a.example/a2a', protocolVersion: '0.3.0' })).toBe(
      'card',
    );
    expect(classifyDocument({ hello: 'world' })).toBe('unknown');
    expect(classifyDocument([1, 2])).toBe('unknown');
    expect(classifyDocument('text')).toBe('unknown');
  });
});

describe('nestingLoop', () => {
  it('names the loop from where it closes', () => {
    expect(nestingLoop(['a', 'b', 'c'], 'b')).toBe('b -> c -> b');
    expect(nestingLoop(['a'], 'a')).toBe('a -> a');
    expect(nestingLoop(['a', 'b'], 'c')).toBeUndefined();
  });
});

describe('redactUrl', () => {
  it('never shows credentials written in a URL', () => {
    expect(redactUrl('https://user:s3cret@a.example/jwks.json')).toBe('https://***@a.example/jwks.json');
    expect(redactUrl('ftp://token@a.example/')).toBe('ftp://***@a.example/');
    expect(redactUrl('https://a.example/a@b')).toBe('https://a.example/a@b');
  });
});

describe('shorten', () => {
  it('makes hostile text one bounded line', () => {
    expect(shorten('a\r\nSet-Cookie: x\u0000')).toBe('a??Set-Cookie: x?');
    expect(shorten('x'.repeat(300))).toHaveLength(203);
  });
});

describe('jkuDecision', () => {
  const source = 'https://agents.example.com/.well-known/agent-card.json';
  it('another host: never followed, and said so', () => {
    const d = jkuDecision('https://keys.evil.example/jwks.json', source, true);
    expect(d).toEqual({
      follow: false,
      reason:
        'its jku points elsewhere (https://keys.evil.example/jwks.json, host keys.evil.example, while the document came from agents.example.com); not followed',
    });
  });
  it('the same host: a hint without --trust-jku, followed with it over https only', () => {
    expect(jkuDecision('https://agents.example.com/jwks.json', source, false)).toMatchObject({
      follow: false,
      reason: expect.stringContaining('only a hint'),
    });
    expect(jkuDecision('https://agents.example.com/jwks.json', source, true)).toEqual({ follow: true });
    expect(jkuDecision('http://agents.example.com/jwks.json', source, true)).toMatchObject({
      follow: false,
      reason: expect.stringContaining('is not https'),
    });
    expect(jkuDecision('not a url', source, true)).toMatchObject({
      follow: false,
      reason: "its jku 'not a url' is not a URL",
    });
  });
});

describe('cache rules', () => {
  it('stores what has a validator or a lifetime, never no-store', () => {
    expect(cacheDirectives('public, max-age=300', '"e1"')).toEqual({
      store: true,
      maxAgeSeconds: 300,
      noCache: false,
    });
    expect(cacheDirectives(undefined, '"e1"')).toEqual({
      store: true,
      maxAgeSeconds: undefined,
      noCache: false,
    });
    expect(cacheDirectives('max-age=60', undefined)).toMatchObject({ store: true, maxAgeSeconds: 60 });
    expect(cacheDirectives('no-store, max-age=60', '"e1"').store).toBe(false);
    expect(cacheDirectives(undefined, undefined).store).toBe(false);
    expect(cacheDirectives('No-Cache', '"e1"')).toMatchObject({ store: true, noCache: true });
    expect(cacheDirectives('max-age=60, must-revalidate', '"e1"')).toEqual({
      store: true,
      maxAgeSeconds: 60,
      noCache: false,
    });
  });
  it('fresh while max-age lasts, unless no-cache', () => {
    const entry = { url: 'u', text: '{}', storedAt: 1_000_000, maxAgeSeconds: 60 };
    expect(isFresh(entry, 1_000_000 + 59_999)).toBe(true);
    expect(isFresh(entry, 1_000_000 + 60_000)).toBe(false);
    expect(isFresh({ ...entry, noCache: true }, 1_000_001)).toBe(false);
    expect(isFresh({ ...entry, maxAgeSeconds: undefined }, 1_000_001)).toBe(false);
  });
});

function card(over: Partial<CardReport> = {}): CardReport {
  return {
    source: 'https://a.example/.well-known/agent-card.json',
    via: [],
    name: 'Recipe Finder',
    version: '1.0.0',
    description: 'Finds recipes.',
    skills: [{ id: 'find-recipe', name: 'Find recipe', tags: ['cooking'] }],
    interfaces: [{ url: 'https://a.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    problems: [],
    signature: {
      status: 'verified',
      kid: 'k1',
      canonicalization: 'jcs',
      message: 'verified: kid k1',
      results: [],
    },
    ok: true,
    ...over,
  };
}

describe('matchesFilter', () => {
  it('skill by id or name, tag from skills or the catalog entry, text anywhere; case ignored', () => {
    expect(matchesFilter(card(), { skills: ['FIND-RECIPE'] })).toBe(true);
    expect(matchesFilter(card(), { skills: ['find recipe'] })).toBe(true);
    expect(matchesFilter(card(), { skills: ['translate'] })).toBe(false);
    expect(matchesFilter(card(), { tags: ['Cooking'] })).toBe(true);
    expect(matchesFilter(card({ entry: { identifier: 'urn:x', tags: ['food'] } }), { tags: ['food'] })).toBe(
      true,
    );
    expect(matchesFilter(card(), { texts: ['RECIPES'] })).toBe(true);
    expect(matchesFilter(card(), { texts: ['weather'] })).toBe(false);
  });
  it('values of one flag are alternatives; different flags must all match', () => {
    expect(matchesFilter(card(), { skills: ['translate', 'find-recipe'] })).toBe(true);
    expect(matchesFilter(card(), { skills: ['find-recipe'], tags: ['weather'] })).toBe(false);
    expect(matchesFilter(card(), {})).toBe(true);
  });
});

describe('formatTable', () => {
  const report = (over: Partial<DiscoverReport>): DiscoverReport => ({
    cards: [],
    catalogs: [],
    errors: [],
    filteredOut: 0,
    ok: true,
    stats: { requests: 0, bytes: 0, durationMs: 0 },
    ...over,
  });

  it('one row per card and per error, the reasons under each, then a summary', () => {
    const bad = card({
      name: 'Tampered',
      ok: false,
      source: 'https://b.example/card.json',
      signature: {
        status: 'invalid',
        message: 'the card was changed after it was signed (kid k1: signature does not match)',
        results: [],
      },
      problems: [{ path: 'description', message: 'empty value', severity: 'warning' }],
    });
    const text = formatTable(
      report({
        cards: [card(), bad],
        catalogs: [
          { url: 'https://c.example/cat.json', via: [], entries: { cards: 2, catalogs: 0, other: 0 } },
        ],
        errors: [
          {
            url: 'https://c.example/team.json',
            via: ['https://c.example/cat.json'],
            code: 'loop',
            message: 'nesting loop: x -> y -> x',
          },
        ],
        ok: false,
      }),
    );
    expect(text).toBe(
      [
        'STATUS  NAME           VERSION  SIGNATURE    INTERFACES  SOURCE',
        'ok      Recipe Finder  1.0.0    verified k1  1           https://a.example/.well-known/agent-card.json',
        'FAIL    Tampered       1.0.0    invalid      1           https://b.example/card.json',
        '      signature invalid: the card was changed after it was signed (kid k1: signature does not match)',
        '      1 lint warning (see --output json)',
        'ERROR   -              -        -            -           https://c.example/team.json',
        '      loop: nesting loop: x -> y -> x',
        '      via https://c.example/cat.json',
        '2 cards, 1 ok, 1 catalog, 1 error',
        '',
      ].join('\n'),
    );
  });

  it('with --probe, interfaces read as up/probed, and failures are listed', () => {
    const probed = card({
      ok: false,
      interfaces: [
        {
          url: 'https://a.example/a2a',
          protocolBinding: 'JSONRPC',
          protocolVersion: '1.0',
          probe: { reachable: true, reason: 'Reachable', message: 'ok', latencyMs: 3 },
        },
        {
          url: 'https://a.example/rest',
          protocolBinding: 'HTTP+JSON',
          protocolVersion: '1.0',
          probe: { reachable: false, reason: 'HTTPError', message: 'HTTP 500', latencyMs: 3 },
        },
      ],
    });
    const text = formatTable(report({ cards: [probed], filteredOut: 3 }));
    expect(text).toContain('1/2 up');
    expect(text).toContain('      probe HTTPError: HTTP+JSON https://a.example/rest: HTTP 500');
    expect(text).toMatch(/1 card, 0 ok, 0 catalogs, 0 errors, 3 filtered out\n$/);
  });

  it('a catalog entry display name wins over the card name (AI Catalog spec)', () => {
    const text = formatTable(
      report({ cards: [card({ entry: { identifier: 'urn:x', displayName: 'Chef' } })] }),
    );
    expect(text).toContain('ok      Chef ');
  });
});
