/**
 * The catalog documents of one AgentCatalog or ClusterAgentCatalog, without any I/O: the built
 * entries (entries.ts) and spec.include become an AI Catalog (unsigned; the controller signs it)
 * and its HTML page. A catalog too large for one ConfigMap is split into partitions, each a
 * nested catalog of its own (AI Catalog spec, "Nested Catalogs": nesting is how catalogs are
 * partitioned), listed by the root catalog.
 *
 * Partitions are chosen by a hash of the entry identifier, with a power-of-two count: an entry
 * stays in its partition while the count does not change, so one card's change rewrites one
 * partition, not all of them. Nested partition URLs are relative to the root catalog's URL
 * (`ai-catalog/p3.json` next to `/.well-known/ai-catalog.json`), so the operator does not need
 * to know the host the catalog is served at.
 *
 * `updatedAt` is carried over from the previously published entry while the entry is the same,
 * and set to `now` when it appears or changes: a steady catalog keeps its bytes.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../card/jcs.ts';
import { AI_CATALOG_MEDIA_TYPE, type AiCatalog, type CatalogEntry } from './document.ts';
import type { AgentFacts, BuiltEntry } from './entries.ts';
import { renderPage, type NestedLink } from './page.ts';
import type { CatalogHostInfo, CatalogInclude } from './resource.ts';

export const SPEC_VERSION = '1.0';
/**
 * What one ConfigMap may hold of catalog JSON plus page HTML. The API server refuses a ConfigMap
 * whose data is over 1 MiB (1,048,576 bytes); the rest is room for jwks.json and the keys.
 */
export const PARTITION_BUDGET_BYTES = 900 * 1024;
/** At most this many partitions (the catalog server mounts a fixed set of optional ConfigMaps). */
export const MAX_PARTITIONS = 64;

/** The served file names and paths of a catalog and its partitions. */
export const CATALOG_FILES = {
  catalog: 'ai-catalog.json',
  page: 'index.html',
  jwks: 'jwks.json',
  maxAge: 'cache-max-age-seconds',
  partCatalog: (i: number) => `ai-catalog.p${i}.json`,
  partPage: (i: number) => `index.p${i}.html`,
} as const;
/** Partition URLs relative to the root catalog (/.well-known/ai-catalog.json) and to its page (/). */
export const partitionCatalogRef = (i: number) => `ai-catalog/p${i}.json`;
export const partitionPageRef = (i: number) => `p${i}.html`;

export interface PreviousEntry {
  /** canonicalJson of the entry without updatedAt. */
  fingerprint: string;
  updatedAt: string;
}

export interface BuildInput {
  /** Identifier of the catalog itself (partitions append `.p<N>` to its last segment). */
  identifier: string;
  title: string;
  host?: CatalogHostInfo;
  entries: readonly BuiltEntry[];
  include: readonly CatalogInclude[];
  /** Entries of the previously published documents, by identifier. */
  previous: ReadonlyMap<string, PreviousEntry>;
  /** RFC 3339 (whole seconds) */
  now: string;
  signed: boolean;
  budgetBytes?: number;
  maxPartitions?: number;
}

export interface BuiltDocument {
  /** The unsigned catalog. */
  catalog: AiCatalog;
  page: string;
}

export type BuildResult =
  | { ok: true; root: BuiltDocument; parts: BuiltDocument[]; entries: number; nested: number }
  | { ok: false; error: string };

/** The entry without updatedAt, as canonical text (what "the entry changed" compares). */
export function entryFingerprint(entry: CatalogEntry): string {
  const { updatedAt: _u, ...rest } = entry;
  return canonicalJson(rest);
}

/** The entries of published catalog documents, in order; a document that is not a catalog gives none. */
export function* publishedEntries(documents: Iterable<string | undefined>): Generator<CatalogEntry> {
  for (const text of documents) {
    if (!text) continue;
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      continue;
    }
    const entries = (doc as { entries?: unknown })?.entries;
    if (Array.isArray(entries)) yield* entries as CatalogEntry[];
  }
}

/** Entries of published catalog documents by identifier (for updatedAt); bad documents give none. */
export function previousEntries(documents: Iterable<string | undefined>): Map<string, PreviousEntry> {
  const out = new Map<string, PreviousEntry>();
  for (const e of publishedEntries(documents)) {
    if (e && typeof e.identifier === 'string' && typeof e.updatedAt === 'string') {
      out.set(e.identifier, { fingerprint: entryFingerprint(e), updatedAt: e.updatedAt });
    }
  }
  return out;
}

function stamped(
  entry: CatalogEntry,
  previous: ReadonlyMap<string, PreviousEntry>,
  now: string,
): CatalogEntry {
  const prev = previous.get(entry.identifier);
  const updatedAt = prev && prev.fingerprint === entryFingerprint(entry) ? prev.updatedAt : now;
  return { ...entry, updatedAt };
}

function includeEntry(inc: CatalogInclude): CatalogEntry {
  return {
    identifier: inc.identifier ?? inc.url,
    type: AI_CATALOG_MEDIA_TYPE,
    url: inc.url,
    ...(inc.displayName ? { displayName: inc.displayName } : {}),
    ...(inc.description ? { description: inc.description } : {}),
  };
}

function includeLink(inc: CatalogInclude): NestedLink {
  return {
    displayName: inc.displayName ?? inc.identifier ?? inc.url,
    url: inc.url,
    ...(inc.description ? { description: inc.description } : {}),
  };
}

const bucketOf = (identifier: string, count: number): number =>
  createHash('sha256').update(identifier).digest().readUInt32BE(0) % count;

function document(
  input: BuildInput,
  entries: CatalogEntry[],
  facts: AgentFacts[],
  nested: NestedLink[],
  page: { catalogUrl: string; subtitle?: string; title: string },
): BuiltDocument {
  const catalog: AiCatalog = {
    specVersion: SPEC_VERSION,
    ...(input.host ? { host: input.host } : {}),
    entries,
  };
  return {
    catalog,
    page: renderPage({
      title: page.title,
      catalogUrl: page.catalogUrl,
      agents: facts,
      nested,
      signed: input.signed,
      subtitle: page.subtitle,
    }),
  };
}

const size = (doc: BuiltDocument) =>
  Buffer.byteLength(JSON.stringify(doc.catalog), 'utf8') + Buffer.byteLength(doc.page, 'utf8') + 1024; // + signature

export function buildCatalog(input: BuildInput): BuildResult {
  const budget = input.budgetBytes ?? PARTITION_BUDGET_BYTES;
  const maxParts = input.maxPartitions ?? MAX_PARTITIONS;
  const sorted = [...input.entries].sort((a, b) =>
    a.entry.identifier < b.entry.identifier ? -1 : a.entry.identifier > b.entry.identifier ? 1 : 0,
  );
  const entries = sorted.map((b) => stamped(b.entry, input.previous, input.now));
  const facts = sorted.map((b) => b.facts);
  const includes = input.include.map(includeEntry);
  const includeLinks = input.include.map(includeLink);

  const whole = document(input, [...entries, ...includes], facts, includeLinks, {
    title: input.title,
    catalogUrl: '/.well-known/ai-catalog.json',
  });
  const wholeSize = size(whole);
  if (wholeSize <= budget) {
    return { ok: true, root: whole, parts: [], entries: entries.length, nested: includes.length };
  }

  // Start from the smallest power of two that could hold it (each try renders every entry).
  let first = 2;
  while (first < maxParts && first * budget < wholeSize) first *= 2;
  for (let count = first; count <= maxParts; count *= 2) {
    const buckets = Array.from({ length: count }, () => ({
      entries: [] as CatalogEntry[],
      facts: [] as AgentFacts[],
    }));
    entries.forEach((entry, i) => {
      const b = buckets[bucketOf(entry.identifier, count)]!;
      b.entries.push(entry);
      b.facts.push(facts[i]!);
    });
    const parts = buckets.map((b, i) =>
      document(input, b.entries, b.facts, [], {
        title: input.title,
        catalogUrl: `/.well-known/${partitionCatalogRef(i)}`,
        subtitle: `partition ${i + 1} of ${count}`,
      }),
    );
    if (parts.some((p) => size(p) > budget)) continue;
    const partIdentifier = (i: number) => `${input.identifier}.p${i}`;
    const partEntries: CatalogEntry[] = parts.map((p, i) => ({
      identifier: partIdentifier(i),
      type: AI_CATALOG_MEDIA_TYPE,
      url: partitionCatalogRef(i),
      displayName: `${input.title} (partition ${i + 1} of ${count}, ${p.catalog.entries.length} agents)`,
    }));
    const partLinks: NestedLink[] = parts.map((p, i) => ({
      displayName: `Partition ${i + 1} of ${count}: ${p.catalog.entries.length} agents`,
      url: `/.well-known/${partitionCatalogRef(i)}`,
      pageUrl: partitionPageRef(i),
    }));
    const root = document(input, [...partEntries, ...includes], [], [...partLinks, ...includeLinks], {
      title: input.title,
      catalogUrl: '/.well-known/ai-catalog.json',
      subtitle: `${entries.length} agents in ${count} partitions`,
    });
    if (size(root) > budget) break;
    return { ok: true, root, parts, entries: entries.length, nested: includes.length + count };
  }
  return {
    ok: false,
    error: `${entries.length} entries do not fit in ${maxParts} partitions of ${Math.round(budget / 1024)} KiB; select fewer AgentCards or use entries: url`,
  };
}
