// Incremental catalog builds: over random sequences of changes, a build from the last build's
// memo gives the same documents as a full build from the published documents, and renders again
// only the partitions whose entries changed.
import { describe, expect, it } from 'vitest';
import {
  buildCatalog,
  previousEntries,
  type BuildInput,
  type BuildMemo,
  type BuildResult,
} from '../../../operator/catalog/build.ts';
import { canonicalJson } from '../../../operator/card/jcs.ts';
import type { BuiltEntry } from '../../../operator/catalog/entries.ts';

/** A small deterministic generator (mulberry32), so a failing sequence can be replayed by seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What a card is at one moment: its version (the entry) and whether a probe reached it (page only). */
type CardState = { version: number; reachable?: boolean; description: number };

function entryOf(i: number, s: CardState): BuiltEntry {
  return {
    entry: {
      identifier: `urn:air:example.com:team:agent-${i}`,
      type: 'application/a2a-agent-card+json',
      url: `https://agent-${i}.example.com/.well-known/agent-card.json`,
      version: `1.0.${s.version}`,
      tags: ['weather'],
    },
    facts: {
      name: `Agent ${i}`,
      description: `Forecasts <${'x'.repeat(s.description)}>`,
      version: `1.0.${s.version}`,
      skills: ['Forecast'],
      tags: ['weather'],
      signed: false,
      namespace: 'team',
      ...(s.reachable !== undefined ? { reachable: s.reachable } : {}),
    },
  };
}

/** Every published byte of a build (what the ConfigMaps hold, before signing). */
function published(result: BuildResult): string[] {
  if (!result.ok) return [result.error];
  return [result.root, ...result.parts].flatMap((d) => [canonicalJson(d.catalog), d.page]);
}

const catalogTexts = (result: BuildResult) =>
  result.ok ? [result.root, ...result.parts].map((d) => canonicalJson(d.catalog)) : [];

function inputOf(
  cards: Map<number, CardState>,
  step: number,
  previous: BuildInput['previous'],
  include: boolean,
): BuildInput {
  return {
    identifier: 'urn:air:example.com:_cluster:all',
    title: 'Agents <of> the cluster',
    entries: [...cards].map(([i, s]) => entryOf(i, s)),
    include: include ? [{ url: 'https://other.example.com/.well-known/ai-catalog.json' }] : [],
    previous,
    now: new Date(Date.UTC(2026, 11, 1, 0, 0, step)).toISOString().replace('.000Z', 'Z'),
    signed: false,
    budgetBytes: 24 * 1024,
  };
}

describe('incremental catalog builds', () => {
  it('give the same bytes as a full build over random change sequences', () => {
    for (const seed of [1, 2, 3]) {
      const rnd = random(seed);
      const cards = new Map<number, CardState>();
      for (let i = 0; i < 40 + Math.floor(rnd() * 120); i++)
        cards.set(i, { version: 0, description: i % 30 });
      let memo: BuildMemo | undefined;
      let publishedDocs: string[] = [];
      const counts = new Set<number>();
      for (let step = 0; step < 30; step++) {
        // 0 to 8 changes: new versions, probe results, new cards, removed cards, longer texts.
        const changes = Math.floor(rnd() * 9);
        for (let c = 0; c < changes; c++) {
          const i = Math.floor(rnd() * 260);
          const s = cards.get(i);
          const r = rnd();
          if (!s) cards.set(i, { version: 0, description: Math.floor(rnd() * 60) });
          else if (r < 0.15) cards.delete(i);
          else if (r < 0.5) cards.set(i, { ...s, version: s.version + 1 });
          else if (r < 0.8) cards.set(i, { ...s, reachable: rnd() < 0.5 });
          else cards.set(i, { ...s, description: Math.floor(rnd() * 200) });
        }
        const include = Math.floor(step / 8) % 2 === 1;
        const full = buildCatalog(inputOf(cards, step, previousEntries(publishedDocs), include));
        const incremental = buildCatalog(inputOf(cards, step, previousEntries(publishedDocs), include), memo);
        expect(published(incremental), `seed ${seed}, step ${step}`).toEqual(published(full));
        expect(incremental.ok).toBe(true);
        if (!incremental.ok) return;
        counts.add(incremental.parts.length);
        memo = incremental.memo;
        publishedDocs = catalogTexts(incremental);
      }
      // The sequences cross partition counts (so the memo is also used across a new count).
      expect(counts.size, `seed ${seed}`).toBeGreaterThan(1);
    }
  });

  it('renders again only the partition of the changed entry', () => {
    const cards = new Map<number, CardState>();
    for (let i = 0; i < 300; i++) cards.set(i, { version: 0, description: 10 });
    const first = buildCatalog(inputOf(cards, 0, new Map(), false));
    if (!first.ok) throw new Error(first.error);
    expect(first.parts.length).toBeGreaterThan(4);
    cards.set(17, { version: 1, description: 10 });
    const next = buildCatalog(inputOf(cards, 1, previousEntries(catalogTexts(first)), false), first.memo);
    if (!next.ok) throw new Error(next.error);
    const rendered = next.parts.filter((p, i) => p !== first.parts[i]);
    expect(rendered).toHaveLength(1);
    expect(rendered[0]!.catalog.entries.some((e) => e.version === '1.0.1')).toBe(true);
    // The other entries keep their updatedAt; the changed one gets the new time.
    const changed = rendered[0]!.catalog.entries.find((e) => e.identifier.endsWith(':agent-17'));
    expect(changed?.updatedAt).toBe('2026-12-01T00:00:01Z');
  });

  it('ignores a memo made for other catalog settings', () => {
    const cards = new Map<number, CardState>([[1, { version: 0, description: 3 }]]);
    const first = buildCatalog(inputOf(cards, 0, new Map(), false));
    if (!first.ok) throw new Error(first.error);
    const retitled = { ...inputOf(cards, 1, previousEntries(catalogTexts(first)), false), title: 'Other' };
    expect(published(buildCatalog(retitled, first.memo))).toEqual(published(buildCatalog(retitled)));
    expect(published(buildCatalog(retitled, first.memo)).join('')).toContain('Other');
  });
});
