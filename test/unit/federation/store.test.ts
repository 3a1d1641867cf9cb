import { describe, expect, it } from 'vitest';
import { IMPORT_LABEL, MANAGED_BY_LABEL } from '../../../operator/api/names.ts';
import { configMapDataBytes } from '../../../operator/runtime/configmaps.ts';
import {
  entryDataKey,
  importConfigMaps,
  isReimport,
  IMPORTED_EXTENSION,
  readImportedEntries,
  SHARD_MAX_BYTES,
  shardEntries,
  type ImportedEntry,
} from '../../../operator/federation/store.ts';

const owner = { namespace: 'agents', name: 'cluster-a', uid: 'uid-1' };

/** An entry whose card is `size` bytes of JSON with odd spacing (never re-serialized). */
function entry(i: number, size = 3000, version?: string): ImportedEntry {
  const card = `{ "name" :"agent-${i}",  "pad": "${'x'.repeat(size)}" }`;
  return {
    entry: {
      identifier: `urn:air:a.example:agents:agent-${i}`,
      type: 'application/a2a-agent-card+json',
      url: `cards/agent-${i}.json`,
      ...(version ? { version } : {}),
    },
    card,
    digest: `sha256:${i}`,
    cardUrl: `https://a.example/cards/agent-${i}.json`,
    signer: `spiffe://a.example/ns/agents/sa/agent-${i}`,
    catalogUrl: 'https://a.example/.well-known/ai-catalog.json',
    origin: 'cluster-a',
  };
}

describe('the import store', () => {
  it('fits 500 cards of 4 KB in shards well under 1 MiB each, and reads every entry back verbatim', () => {
    const entries = Array.from({ length: 500 }, (_, i) => entry(i, 4000));
    const cms = importConfigMaps(owner, entries);
    expect(cms.length).toBeGreaterThan(1);
    for (const cm of cms) {
      expect(configMapDataBytes(cm.data)).toBeLessThanOrEqual(SHARD_MAX_BYTES);
      expect(cm.metadata.labels[IMPORT_LABEL]).toBe('cluster-a');
      expect(cm.metadata.labels[MANAGED_BY_LABEL]).toBe('agentcard-operator');
      expect(cm.metadata.ownerReferences[0]).toMatchObject({
        kind: 'CatalogImport',
        uid: 'uid-1',
        controller: true,
      });
    }
    const read = readImportedEntries(cms);
    expect(read).toHaveLength(500);
    const byId = new Map(read.map((e) => [e.entry.identifier, e]));
    for (const e of entries) {
      const got = byId.get(e.entry.identifier)!;
      expect(got.card).toBe(e.card); // the bytes as fetched, spacing and all
      expect(got.import).toEqual({ namespace: 'agents', name: 'cluster-a' });
    }
  });

  it('gives the same bytes for the same entries, in any order', () => {
    const entries = Array.from({ length: 50 }, (_, i) => entry(i));
    const a = importConfigMaps(owner, entries);
    const b = importConfigMaps(owner, [...entries].reverse());
    expect(JSON.stringify(b)).toBe(JSON.stringify(a));
  });

  it('rewrites only the shard of an entry that changed', () => {
    const entries = Array.from({ length: 400 }, (_, i) => entry(i));
    const before = shardEntries(entries);
    const changed = entries.map((e, i) => (i === 7 ? { ...e, digest: 'sha256:changed' } : e));
    const after = shardEntries(changed);
    expect(after.length).toBe(before.length);
    const differing = after.filter((d, n) => JSON.stringify(d) !== JSON.stringify(before[n]));
    expect(differing).toHaveLength(1);
    expect(Object.keys(differing[0]!)).toContain(entryDataKey(entries[7]!.entry));
  });

  it('keeps versions of one identifier apart', () => {
    const cms = importConfigMaps(owner, [entry(1, 10, '1.0'), entry(1, 10, '2.0')]);
    expect(readImportedEntries(cms).map((e) => e.entry.version)).toEqual(['1.0', '2.0']);
  });

  it('reads only labelled ConfigMaps controlled by an import, skipping values it did not write', () => {
    const [cm] = importConfigMaps(owner, [entry(1, 10)]);
    const foreign = { ...cm!, metadata: { ...cm!.metadata, labels: {} } };
    const broken = { ...cm!, data: { 'x.json': 'not json', 'y.json': '{"entry":{}}' } };
    const deleting = { ...cm!, metadata: { ...cm!.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } };
    expect(readImportedEntries([foreign, broken, deleting])).toEqual([]);
    expect(readImportedEntries([cm!])).toHaveLength(1);
  });

  it('writes one empty shard when nothing is imported', () => {
    const cms = importConfigMaps(owner, []);
    expect(cms).toHaveLength(1);
    expect(cms[0]!.data).toEqual({});
  });

  it('recognises an entry another cluster imported (the cycle rule)', () => {
    expect(isReimport({ extensions: { [IMPORTED_EXTENSION]: { origin: 'b' } } })).toBe(true);
    expect(isReimport({ extensions: { 'com.example.other': 1 } })).toBe(false);
    expect(isReimport({})).toBe(false);
  });
});

describe('readImportedEntries while shards are resized', () => {
  it('lists an entry found in two shards of one import once', () => {
    const [cm] = importConfigMaps(owner, [entry(1, 10)]);
    const copy = { ...cm!, metadata: { ...cm!.metadata, name: 'cluster-a-imported-1' } };
    expect(readImportedEntries([cm!, copy])).toHaveLength(1);
  });
});

describe('entries read back', () => {
  it('are stored again as the same bytes', () => {
    const cms = importConfigMaps(owner, [entry(1), entry(2)]);
    expect(JSON.stringify(importConfigMaps(owner, readImportedEntries(cms)))).toBe(JSON.stringify(cms));
  });
});
