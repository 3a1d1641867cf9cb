// The import engine's pure parts, with documents served by an in-memory double of the fetcher
// (the real fetcher, TLS and the API server: test/integration/catalog-import.test.ts): what
// verifies, what is refused and why, nested catalogs, cycles and diamonds, the cycle rule, and
// what is kept while the origin is down.
import { beforeAll, describe, expect, it } from 'vitest';
import { loadTrust, type LoadedTrust } from '../../../operator/catalog/trust.ts';
import { FetchError } from '../../../operator/discover/fetch.ts';
import { crawlImport, type CrawlInput, type CrawlOutcome } from '../../../operator/federation/crawl.ts';
import { mergeImport } from '../../../operator/federation/merge.ts';
import { entryKey, IMPORTED_EXTENSION } from '../../../operator/federation/store.ts';
import { minimalCard } from '../../support/cards.ts';
import { createLeaf, createRoot, signWithChain, type TestCert } from '../../support/x5c-signer.ts';

const A = 'https://a.example';
const CARD_TYPE = 'application/a2a-agent-card+json';
const CATALOG_TYPE = 'application/ai-catalog+json';

let root: TestCert;
let agentLeaf: TestCert;
let foreignLeaf: TestCert;
let trust: LoadedTrust;

beforeAll(async () => {
  root = await createRoot('cluster-a CA');
  agentLeaf = await createLeaf(root, { uris: ['spiffe://a.example/ns/agents/sa/default'] });
  foreignLeaf = await createLeaf(root, { uris: ['spiffe://evil.example/ns/x/sa/default'] });
  const loaded = loadTrust(
    {
      trustBundle: { configMap: { name: 'ca', key: 'ca.crt' } },
      identities: ['spiffe://a.example/ns/agents/*'],
    },
    { trustBundle: { text: root.pem } },
  );
  if (!loaded.ok) throw new Error(loaded.error);
  trust = loaded.trust;
});

/** A card signed by `leaf`, as text with unusual spacing (the bytes must be kept as they are). */
async function signedCard(name: string, leaf = agentLeaf): Promise<string> {
  const card = await signWithChain({ ...minimalCard(), name }, leaf, []);
  return JSON.stringify(card, null, 1);
}

const cardEntry = (name: string, url = `/cards/${name}.json`, extra: Record<string, unknown> = {}) => ({
  identifier: `urn:air:a.example:agents:${name}`,
  type: CARD_TYPE,
  url,
  ...extra,
});

const catalog = (entries: unknown[], extra: Record<string, unknown> = {}) =>
  JSON.stringify({ specVersion: '1.0', host: { displayName: 'Cluster A' }, entries, ...extra });

type Site = Map<string, string | FetchError>;

function input(site: Site, extra: Partial<CrawlInput> = {}): CrawlInput {
  return {
    url: `${A}/.well-known/ai-catalog.json`,
    maxDepth: 4,
    catalogSignature: 'IfPresent',
    trust,
    get: async (url) => {
      const doc = site.get(url);
      if (doc === undefined) throw new FetchError('not-found', url, 'HTTP 404');
      if (doc instanceof FetchError) throw doc;
      return { text: doc };
    },
    ...extra,
  };
}

const okOutcome = (o: CrawlOutcome) => {
  if (!o.ok) throw new Error(`crawl failed: ${o.reason} ${o.message}`);
  return o;
};

describe('crawlImport', () => {
  it('imports verified cards with their bytes as served, and refuses the rest with a reason', async () => {
    const good = await signedCard('good');
    const site: Site = new Map([
      [
        `${A}/.well-known/ai-catalog.json`,
        catalog([
          cardEntry('good'),
          cardEntry('foreign'),
          cardEntry('tampered'),
          cardEntry('unsigned'),
          cardEntry('missing'),
          { identifier: 'urn:air:a.example:mcp:tool', type: 'application/mcp-server+json', url: '/mcp.json' },
        ]),
      ],
      [`${A}/cards/good.json`, good],
      [`${A}/cards/foreign.json`, await signedCard('foreign', foreignLeaf)],
      [`${A}/cards/tampered.json`, (await signedCard('tampered')).replace('Finds recipes', 'Steals secrets')],
      [`${A}/cards/unsigned.json`, JSON.stringify(minimalCard())],
    ]);
    const o = okOutcome(await crawlImport(input(site)));
    expect(o.origin).toBe('Cluster A');
    expect(o.entries.map((e) => e.entry.identifier)).toEqual(['urn:air:a.example:agents:good']);
    const [imported] = o.entries;
    expect(imported!.card).toBe(good);
    expect(imported!.signer).toBe('spiffe://a.example/ns/agents/sa/default');
    expect(imported!.cardUrl).toBe(`${A}/cards/good.json`);
    const reasons = Object.fromEntries(o.refused.map((r) => [r.what.split(':').at(-1), r.reason]));
    expect(reasons).toEqual({
      foreign: 'IdentityNotAllowed',
      tampered: 'SignatureInvalid',
      unsigned: 'Unsigned',
      missing: 'Unreachable',
    });
  });

  it('follows nested catalogs once each: a diamond and a loop list each agent once', async () => {
    const site: Site = new Map([
      [
        `${A}/.well-known/ai-catalog.json`,
        catalog([
          { identifier: 'left', type: CATALOG_TYPE, url: '/left.json' },
          { identifier: 'right', type: CATALOG_TYPE, url: '/right.json' },
        ]),
      ],
      [
        `${A}/left.json`,
        catalog([{ identifier: 'shared', type: CATALOG_TYPE, url: '/shared.json' }, cardEntry('one')]),
      ],
      [
        `${A}/right.json`,
        catalog([{ identifier: 'shared', type: CATALOG_TYPE, url: '/shared.json' }, cardEntry('one')]),
      ],
      // A loop back to the remote catalog.
      [
        `${A}/shared.json`,
        catalog([
          { identifier: 'top', type: CATALOG_TYPE, url: '/.well-known/ai-catalog.json' },
          cardEntry('two'),
        ]),
      ],
      [`${A}/cards/one.json`, await signedCard('one')],
      [`${A}/cards/two.json`, await signedCard('two')],
    ]);
    const o = okOutcome(await crawlImport(input(site)));
    expect(o.entries.map((e) => e.entry.identifier).sort()).toEqual([
      'urn:air:a.example:agents:one',
      'urn:air:a.example:agents:two',
    ]);
    expect(o.catalogs).toBe(4);
    expect(o.duplicates).toBe(1);
    expect(o.refused).toEqual([]);
  });

  it('does not follow nested catalogs deeper than maxDepth', async () => {
    const site: Site = new Map([
      [
        `${A}/.well-known/ai-catalog.json`,
        catalog([{ identifier: 'n1', type: CATALOG_TYPE, url: '/n1.json' }]),
      ],
      [
        `${A}/n1.json`,
        catalog([{ identifier: 'n2', type: CATALOG_TYPE, url: '/n2.json' }, cardEntry('one')]),
      ],
      [`${A}/n2.json`, catalog([cardEntry('two')])],
      [`${A}/cards/one.json`, await signedCard('one')],
      [`${A}/cards/two.json`, await signedCard('two')],
    ]);
    const o = okOutcome(await crawlImport(input(site, { maxDepth: 1 })));
    expect(o.entries.map((e) => e.entry.identifier)).toEqual(['urn:air:a.example:agents:one']);
    expect(o.refused.map((r) => r.reason)).toEqual(['DepthExceeded']);
  });

  it('skips entries another cluster imported (the cycle rule)', async () => {
    const site: Site = new Map([
      [
        `${A}/.well-known/ai-catalog.json`,
        catalog([
          cardEntry('own'),
          cardEntry('theirs', '/cards/theirs.json', {
            extensions: { [IMPORTED_EXTENSION]: { origin: 'cluster-b' } },
          }),
        ]),
      ],
      [`${A}/cards/own.json`, await signedCard('own')],
      [`${A}/cards/theirs.json`, await signedCard('theirs')],
    ]);
    const o = okOutcome(await crawlImport(input(site)));
    expect(o.entries.map((e) => e.entry.identifier)).toEqual(['urn:air:a.example:agents:own']);
    expect(o.reimports).toBe(1);
  });

  it('fails the whole run on an unreachable, invalid or wrongly signed remote catalog', async () => {
    const url = `${A}/.well-known/ai-catalog.json`;
    const run = async (doc: string | FetchError, signature: CrawlInput['catalogSignature'] = 'IfPresent') =>
      crawlImport(input(new Map([[url, doc]]), { catalogSignature: signature }));
    expect(await run(new FetchError('connect', url, 'connection refused'))).toMatchObject({
      ok: false,
      reason: 'Unreachable',
    });
    expect(await run(new FetchError('redirect', url, 'HTTP 302'))).toMatchObject({
      ok: false,
      reason: 'Redirected',
    });
    expect(await run(new FetchError('too-large', url, 'too large'))).toMatchObject({
      ok: false,
      reason: 'TooLarge',
    });
    expect(await run('{"specVersion":"1.0"}')).toMatchObject({ ok: false, reason: 'CatalogInvalid' });
    expect(await run(catalog([]), 'Required')).toMatchObject({ ok: false, reason: 'CatalogUnsigned' });
    expect(await run(catalog([], { signature: 'eyJhbGciOiJFUzI1NiIsImtpZCI6IngifQ..AAAA' }))).toMatchObject({
      ok: false,
      reason: 'CatalogSignatureInvalid',
    });
    expect(await run(catalog([]), 'Required')).toMatchObject({ ok: false });
    expect(okOutcome(await run(catalog([]), 'Ignore')).entries).toEqual([]);
  });
});

describe('mergeImport', () => {
  const HOUR = 3_600_000;

  async function twoCards(): Promise<Site> {
    return new Map([
      [`${A}/.well-known/ai-catalog.json`, catalog([cardEntry('one'), cardEntry('two')])],
      [`${A}/cards/one.json`, await signedCard('one')],
      [`${A}/cards/two.json`, await signedCard('two')],
    ]);
  }

  it('keeps the last good entries while the origin is down, until maxStaleness after they verified', async () => {
    const site = await twoCards();
    const first = mergeImport({
      previous: [],
      lastGood: new Map(),
      fallbackGood: 0,
      outcome: await crawlImport(input(site)),
      now: 0,
      maxStalenessMs: HOUR,
    });
    expect(first.entries).toHaveLength(2);
    const down = await crawlImport(input(new Map()));
    const within = mergeImport({
      ...first,
      previous: first.entries,
      fallbackGood: 0,
      outcome: down,
      now: HOUR,
      maxStalenessMs: HOUR,
    });
    expect(within.entries).toEqual(first.entries);
    expect(within.stale).toBe(2);
    const after = mergeImport({
      ...within,
      previous: within.entries,
      fallbackGood: 0,
      outcome: down,
      now: HOUR + 1,
      maxStalenessMs: HOUR,
    });
    expect(after.entries).toEqual([]);
    expect(after.refused.map((r) => r.reason)).toEqual(['Stale', 'Stale']);
  });

  it('keeps the last good card when a new one is tampered, and drops a removed agent at once', async () => {
    const site = await twoCards();
    const first = mergeImport({
      previous: [],
      lastGood: new Map(),
      fallbackGood: 0,
      outcome: await crawlImport(input(site)),
      now: 0,
      maxStalenessMs: HOUR,
    });
    site.set(
      `${A}/cards/one.json`,
      (site.get(`${A}/cards/one.json`) as string).replace('Finds recipes', 'Finds secrets'),
    );
    site.set(`${A}/.well-known/ai-catalog.json`, catalog([cardEntry('one')]));
    const next = mergeImport({
      ...first,
      previous: first.entries,
      fallbackGood: 0,
      outcome: await crawlImport(input(site)),
      now: 1000,
      maxStalenessMs: HOUR,
    });
    expect(next.entries.map((e) => e.entry.identifier)).toEqual(['urn:air:a.example:agents:one']);
    expect(next.entries[0]).toEqual(first.entries.find((e) => e.entry.identifier.endsWith(':one')));
    expect(next.stale).toBe(1);
    expect(next.refused.map((r) => r.reason)).toEqual(['SignatureInvalid']);
  });

  it('replaces a changed card that verifies', async () => {
    const site = await twoCards();
    const first = mergeImport({
      previous: [],
      lastGood: new Map(),
      fallbackGood: 0,
      outcome: await crawlImport(input(site)),
      now: 0,
      maxStalenessMs: HOUR,
    });
    const changed = await signedCard('one v2');
    site.set(`${A}/cards/one.json`, changed);
    const next = mergeImport({
      ...first,
      previous: first.entries,
      fallbackGood: 0,
      outcome: await crawlImport(input(site)),
      now: 10,
      maxStalenessMs: HOUR,
    });
    expect(next.entries.find((e) => e.entry.identifier.endsWith(':one'))!.card).toBe(changed);
    expect(next.stale).toBe(0);
    expect(next.lastGood.get(entryKey(cardEntry('one')))).toBe(10);
  });

  it('is stable: the same remote catalog gives the same entries run after run', async () => {
    const site = await twoCards();
    const a = mergeImport({
      previous: [],
      lastGood: new Map(),
      fallbackGood: 0,
      outcome: await crawlImport(input(site)),
      now: 0,
      maxStalenessMs: HOUR,
    });
    const b = mergeImport({
      ...a,
      previous: a.entries,
      fallbackGood: 0,
      outcome: await crawlImport(input(site)),
      now: 5,
      maxStalenessMs: HOUR,
    });
    expect(JSON.stringify(b.entries)).toBe(JSON.stringify(a.entries));
  });
});
