// The pure catalog building: label selectors, one AgentCard as an entry, partitioning, updatedAt
// carried over, and the HTML page's escaping.
import { describe, expect, it } from 'vitest';
import {
  buildCatalog,
  CATALOG_FILES,
  previousEntries,
  entryFingerprint,
} from '../../../operator/catalog/build.ts';
import { validateCatalog } from '../../../operator/catalog/document.ts';
import { buildEntry, cardLocation, type CardView } from '../../../operator/catalog/entries.ts';
import { escapeHtml, renderPage, safeHref } from '../../../operator/catalog/page.ts';
import { PAGE_CSP, PAGE_STYLE, PAGE_STYLE_HASH } from '../../../operator/catalog/page-style.ts';
import { matchesSelector } from '../../../operator/catalog/selector.ts';
import { createHash } from 'node:crypto';
import { minimalCard } from '../../support/cards.ts';

function view(name: string, extra: Partial<CardView> = {}): CardView {
  return {
    namespace: 'team-a',
    name,
    labels: {},
    annotations: {},
    card: { ...minimalCard(), name: `Agent ${name}` },
    ready: 'True',
    signed: true,
    reachableInterfaces: '1/1',
    interfacesReachable: 'True',
    ...extra,
  };
}
const opts = { publisher: 'example.com', mode: 'url' as const, requireReady: true };

describe('label selectors', () => {
  it('follow metav1.LabelSelector semantics', () => {
    const labels = { tier: 'public', team: 'a' };
    expect(matchesSelector(undefined, labels)).toBe(true);
    expect(matchesSelector({}, undefined)).toBe(true);
    expect(matchesSelector({ matchLabels: { tier: 'public' } }, labels)).toBe(true);
    expect(matchesSelector({ matchLabels: { tier: 'internal' } }, labels)).toBe(false);
    expect(
      matchesSelector({ matchExpressions: [{ key: 'team', operator: 'In', values: ['a', 'b'] }] }, labels),
    ).toBe(true);
    expect(
      matchesSelector({ matchExpressions: [{ key: 'team', operator: 'NotIn', values: ['a'] }] }, labels),
    ).toBe(false);
    // NotIn matches an object without the label at all.
    expect(
      matchesSelector({ matchExpressions: [{ key: 'x', operator: 'NotIn', values: ['a'] }] }, labels),
    ).toBe(true);
    expect(matchesSelector({ matchExpressions: [{ key: 'x', operator: 'Exists' }] }, labels)).toBe(false);
    expect(matchesSelector({ matchExpressions: [{ key: 'x', operator: 'DoesNotExist' }] }, labels)).toBe(
      true,
    );
  });
});

describe('an AgentCard as a catalog entry', () => {
  it('points at the origin of the first interface, with a urn:air identifier, tags and version', () => {
    const r = buildEntry(view('recipes'), opts);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.built.entry).toEqual({
      identifier: 'urn:air:example.com:team-a:recipes',
      type: 'application/a2a-agent-card+json',
      url: 'https://recipes.example.com/.well-known/agent-card.json',
      tags: ['cooking'],
      version: '1.0.0',
    });
    expect(r.built.facts).toMatchObject({
      name: 'Agent recipes',
      signed: true,
      reachable: true,
      skills: ['Find recipe'],
    });
  });

  it('leaves out a card that is not Ready (unless requireReady is false), and says why', () => {
    const r = buildEntry(view('slow', { ready: 'False', readyMessage: 'Published: nothing yet' }), opts);
    expect(r).toEqual({ ok: false, skip: 'team-a/slow: not Ready (Published: nothing yet)' });
    expect(buildEntry(view('slow', { ready: 'False' }), { ...opts, requireReady: false }).ok).toBe(true);
  });

  it('leaves out a card an Enforce policy fails, whatever requireReady says', () => {
    const withheld = view('big', { policyWithheld: 'fails 1 rule: ClusterAgentPolicy p, rule small' });
    expect(buildEntry(withheld, { ...opts, requireReady: false })).toEqual({
      ok: false,
      skip: 'team-a/big: withheld by policy (fails 1 rule: ClusterAgentPolicy p, rule small)',
    });
  });

  it("uses the card-url annotation, a named audience's first exact host, and refuses what is not a URL", () => {
    expect(
      cardLocation(
        view('a', {
          annotations: { 'agentcard.dev/card-url': 'https://gw.example.com/a/.well-known/agent-card.json' },
        }),
        undefined,
      ),
    ).toEqual({
      url: 'https://gw.example.com/a/.well-known/agent-card.json',
    });
    expect(
      cardLocation(
        view('a', { annotations: { 'agentcard.dev/card-url': 'javascript:alert(1)' } }),
        undefined,
      ),
    ).toHaveProperty('error');
    const audiences = [{ name: 'public', hosts: ['*.example.com', 'agents.example.com'] }];
    expect(cardLocation(view('a', { audiences }), 'public')).toEqual({
      url: 'https://agents.example.com/.well-known/agent-card.json',
    });
    expect(cardLocation(view('a', { audiences }), 'internal')).toEqual({
      error: 'no audience "internal" in spec.audiences',
    });
    // A gRPC interface written host:port (A2A after 1.0.1) gives an https origin.
    const grpc = view('g', {
      card: {
        ...minimalCard(),
        supportedInterfaces: [
          { url: 'grpc.example.com:443', protocolBinding: 'GRPC', protocolVersion: '1.0' },
        ],
      },
    });
    expect(cardLocation(grpc, undefined)).toEqual({
      url: 'https://grpc.example.com/.well-known/agent-card.json',
    });
  });

  it('inline entries carry the published card as data', () => {
    const published = JSON.stringify({ name: 'x', signatures: [{ protected: 'a', signature: 'b' }] });
    const r = buildEntry(view('i', { publishedCard: published }), { ...opts, mode: 'inline' });
    expect(r.ok && r.built.entry.data).toEqual(JSON.parse(published));
    expect(r.ok && r.built.entry.url).toBeUndefined();
    expect(buildEntry(view('i'), { ...opts, mode: 'inline' })).toEqual({
      ok: false,
      skip: 'team-a/i: no published card for the audience yet',
    });
  });
});

describe('building the catalog', () => {
  const built = (n: number, ns = 'team-a') =>
    Array.from({ length: n }, (_, i) => {
      const r = buildEntry(view(`agent-${String(i).padStart(5, '0')}`, { namespace: ns }), opts);
      if (!r.ok) throw new Error(r.skip);
      return r.built;
    });
  const base = {
    identifier: 'urn:air:example.com:team-a:all',
    title: 'Team A',
    include: [],
    previous: new Map(),
    now: '2026-01-01T00:00:00Z',
    signed: false,
  };

  it('is a valid AI Catalog with sorted entries, stamped updatedAt and include[] as nested entries', () => {
    const r = buildCatalog({
      ...base,
      entries: built(3).reverse(),
      include: [
        { url: 'https://other.example.net/.well-known/ai-catalog.json', displayName: 'Other cluster' },
      ],
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.parts).toEqual([]);
    expect(validateCatalog(r.root.catalog).problems).toEqual([]);
    expect(r.root.catalog.entries.map((e) => e.identifier)).toEqual([
      'urn:air:example.com:team-a:agent-00000',
      'urn:air:example.com:team-a:agent-00001',
      'urn:air:example.com:team-a:agent-00002',
      'https://other.example.net/.well-known/ai-catalog.json',
    ]);
    expect(r.root.catalog.entries[3]).toMatchObject({
      type: 'application/ai-catalog+json',
      displayName: 'Other cluster',
    });
    expect(r.root.catalog.entries[0]!.updatedAt).toBe('2026-01-01T00:00:00Z');
    expect(r.entries).toBe(3);
    expect(r.nested).toBe(1);
  });

  it('keeps updatedAt of an unchanged entry and moves it for a changed one', () => {
    const first = buildCatalog({ ...base, entries: built(2) });
    if (!first.ok) throw new Error(first.error);
    const previous = previousEntries([JSON.stringify(first.root.catalog)]);
    const changed = built(2);
    changed[1]!.entry.version = '2.0.0';
    const second = buildCatalog({ ...base, entries: changed, previous, now: '2026-02-02T00:00:00Z' });
    if (!second.ok) throw new Error(second.error);
    expect(second.root.catalog.entries.map((e) => e.updatedAt)).toEqual([
      '2026-01-01T00:00:00Z',
      '2026-02-02T00:00:00Z',
    ]);
    expect(entryFingerprint(second.root.catalog.entries[0]!)).toBe(
      entryFingerprint(first.root.catalog.entries[0]!),
    );
  });

  it('partitions a catalog over the budget into nested catalogs, each under it, one change touching one partition', () => {
    const entries = built(2000);
    const r = buildCatalog({ ...base, entries, budgetBytes: 200 * 1024 });
    if (!r.ok) throw new Error(r.error);
    expect(r.parts.length).toBeGreaterThan(1);
    expect(Number.isInteger(Math.log2(r.parts.length))).toBe(true);
    const sizes = r.parts.map((p) => JSON.stringify(p.catalog).length + p.page.length);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(200 * 1024);
    expect(r.parts.reduce((n, p) => n + p.catalog.entries.length, 0)).toBe(2000);
    expect(r.root.catalog.entries).toHaveLength(r.parts.length);
    expect(r.root.catalog.entries[0]).toMatchObject({
      type: 'application/ai-catalog+json',
      url: 'ai-catalog/p0.json',
    });
    for (const p of r.parts) expect(validateCatalog(p.catalog).problems).toEqual([]);

    // One entry changes: exactly one partition's documents differ.
    const changed = built(2000);
    changed[777]!.entry.version = '9.9.9';
    const again = buildCatalog({ ...base, entries: changed, budgetBytes: 200 * 1024 });
    if (!again.ok) throw new Error(again.error);
    const differing = again.parts.filter(
      (p, i) => JSON.stringify(p.catalog) !== JSON.stringify(r.parts[i]!.catalog),
    );
    expect(differing).toHaveLength(1);
    expect(JSON.stringify(again.root.catalog)).toBe(JSON.stringify(r.root.catalog));
  });

  it('refuses, with a message, what does not fit in the partitions allowed', () => {
    const r = buildCatalog({ ...base, entries: built(500), budgetBytes: 20 * 1024, maxPartitions: 4 });
    expect(r).toEqual({
      ok: false,
      error: expect.stringMatching(/^500 entries do not fit in 4 partitions of 20 KiB/),
    });
  });

  it('names its files and partition files', () => {
    expect([
      CATALOG_FILES.catalog,
      CATALOG_FILES.page,
      CATALOG_FILES.partCatalog(3),
      CATALOG_FILES.partPage(3),
    ]).toEqual(['ai-catalog.json', 'index.html', 'ai-catalog.p3.json', 'index.p3.html']);
  });
});

describe('the HTML page', () => {
  it('escapes every user string and never links anything but http(s) or relative paths', () => {
    const html = renderPage({
      title: '<script>alert(1)</script>',
      catalogUrl: '/.well-known/ai-catalog.json',
      signed: true,
      agents: [
        {
          name: 'A "quoted" <b>agent</b>',
          description: "it's & more",
          version: '1.0',
          skills: ['<img src=x onerror=alert(1)>'],
          tags: ['t&t'],
          signed: false,
          reachable: false,
          reachableInterfaces: '0/1',
          cardUrl: 'javascript:alert(1)',
          namespace: 'ns',
        },
      ],
      nested: [{ displayName: 'x', url: 'https://ok.example.com/"><script>' }],
    });
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<img');
    expect(html).not.toContain('javascript:');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('A &quot;quoted&quot; &lt;b&gt;agent&lt;/b&gt;');
    expect(html).toContain('it&#39;s &amp; more');
    expect(escapeHtml(`<>&"'`)).toBe('&lt;&gt;&amp;&quot;&#39;');
    expect(safeHref('data:text/html,x')).toBeUndefined();
    expect(safeHref('//evil.example')).toBeUndefined();
    expect(safeHref('p1.html')).toBe('p1.html');
  });

  it('carries exactly one inline style, whose hash the CSP names, and nothing else to load', () => {
    const html = renderPage({
      title: 't',
      catalogUrl: '/.well-known/ai-catalog.json',
      signed: false,
      agents: [],
      nested: [],
    });
    expect(html.match(/<style>/g)).toHaveLength(1);
    expect(html).toContain(`<style>${PAGE_STYLE}</style>`);
    expect(PAGE_STYLE_HASH).toBe(`'sha256-${createHash('sha256').update(PAGE_STYLE).digest('base64')}'`);
    expect(PAGE_CSP).toContain(`default-src 'none'; style-src ${PAGE_STYLE_HASH}`);
    expect(html).not.toMatch(/<script|<img|<link|src=|style="/);
  });
});
