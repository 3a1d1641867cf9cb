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
 *
 * A build may start from the memo of the previous one (BuildMemo): unchanged entries keep their
 * rendered pieces, and the partition layout is decided from the pieces' sizes without rendering,
 * so only the partitions whose entries changed are rendered again. It gives the same documents as
 * a build without a memo.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../card/jcs.ts';
import { AI_CATALOG_MEDIA_TYPE, type AiCatalog, type CatalogEntry } from './document.ts';
import type { BuiltEntry } from './entries.ts';
import { agentItem, pageFrameBytes, renderPageItems, type NestedLink } from './page.ts';
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

/** The previously published entries by identifier (previousEntries, or memoPrevious). */
export type PreviousLookup = Pick<ReadonlyMap<string, PreviousEntry>, 'get'>;

export interface BuildInput {
  /** Identifier of the catalog itself (partitions append `.p<N>` to its last segment). */
  identifier: string;
  title: string;
  host?: CatalogHostInfo;
  entries: readonly BuiltEntry[];
  include: readonly CatalogInclude[];
  /** Entries of the previously published documents, by identifier. */
  previous: PreviousLookup;
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
  | {
      ok: true;
      root: BuiltDocument;
      parts: BuiltDocument[];
      entries: number;
      nested: number;
      /** For the next build (an incremental one), once these documents are published. */
      memo: BuildMemo;
    }
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

/**
 * What a build keeps of one entry, reused by the next build while the entry stays the same: the
 * entry as published (updatedAt stamped), its item of the page, their sizes and its bucket hash.
 */
interface EntryPiece {
  /** The built entry it was made from (the same object next time: nothing to compare). */
  source: BuiltEntry;
  /** entryFingerprint of the entry. */
  fingerprint: string;
  entry: CatalogEntry;
  item: string;
  /** UTF-8 bytes of JSON.stringify(entry), and of item. */
  jsonBytes: number;
  itemBytes: number;
  hash: number;
}

/**
 * What one build hands to the next (an incremental build): its entries' pieces and its
 * partitions. A memo is only valid for the published state it produced; the caller drops it
 * when the published documents are not those (plan.ts), and buildCatalog ignores it when the
 * catalog's other inputs (identifier, title, host, include, signed, limits) changed.
 */
export interface BuildMemo {
  readonly context: string;
  readonly pieces: ReadonlyMap<string, EntryPiece>;
  /** Partition i of the last build: its members, in order, and its document. */
  readonly parts: ReadonlyArray<{ count: number; members: readonly EntryPiece[]; doc: BuiltDocument }>;
}

/** The previously published entries as a memo knows them (what previousEntries would read). */
export function memoPrevious(memo: BuildMemo): PreviousLookup {
  return {
    get: (identifier) => {
      const piece = memo.pieces.get(identifier);
      return piece && { fingerprint: piece.fingerprint, updatedAt: piece.entry.updatedAt! };
    },
  };
}

const hashOf = (identifier: string): number =>
  createHash('sha256').update(identifier).digest().readUInt32BE(0);

function pieceOf(
  built: BuiltEntry,
  old: EntryPiece | undefined,
  previous: PreviousLookup,
  now: string,
): EntryPiece {
  if (old?.source === built) return old;
  const fingerprint = entryFingerprint(built.entry);
  const item = agentItem(built.facts);
  if (old && old.fingerprint === fingerprint && old.item === item) {
    old.source = built;
    return old;
  }
  const prev = previous.get(built.entry.identifier);
  const updatedAt = prev && prev.fingerprint === fingerprint ? prev.updatedAt : now;
  const entry = { ...built.entry, updatedAt };
  return {
    source: built,
    fingerprint,
    entry,
    item,
    jsonBytes: Buffer.byteLength(JSON.stringify(entry), 'utf8'),
    itemBytes: Buffer.byteLength(item, 'utf8'),
    hash: old?.hash ?? hashOf(built.entry.identifier),
  };
}

interface DocumentShape {
  pieces: readonly EntryPiece[];
  /** Entries after the agents (partitions, spec.include). */
  extra: readonly CatalogEntry[];
  nested: readonly NestedLink[];
  page: { catalogUrl: string; subtitle?: string; title: string };
}

const frameOf = (input: BuildInput, shape: DocumentShape) => ({
  ...shape.page,
  agentCount: shape.pieces.length,
  nested: shape.nested,
  signed: input.signed,
});

const catalogOf = (input: BuildInput, entries: CatalogEntry[]): AiCatalog => ({
  specVersion: SPEC_VERSION,
  ...(input.host ? { host: input.host } : {}),
  entries,
});

/**
 * The size a document would have, from its pieces' sizes, without rendering it: the catalog
 * JSON (JSON.stringify), the page, and 1 KiB for a signature. The same number as measuring the
 * rendered document, which is what keeps an incremental build's partitioning the same as a
 * full build's.
 */
function sizeOf(input: BuildInput, shape: DocumentShape): number {
  let bytes = Buffer.byteLength(JSON.stringify(catalogOf(input, [...shape.extra])), 'utf8');
  if (shape.extra.length && shape.pieces.length) bytes += 1; // the comma between the two lists
  for (const p of shape.pieces) bytes += p.jsonBytes + 1;
  if (shape.pieces.length) bytes -= 1; // n entries have n - 1 commas
  bytes += pageFrameBytes(frameOf(input, shape));
  for (const p of shape.pieces) bytes += p.itemBytes;
  return bytes + 1024;
}

function render(input: BuildInput, shape: DocumentShape): BuiltDocument {
  return {
    catalog: catalogOf(input, [...shape.pieces.map((p) => p.entry), ...shape.extra]),
    page: renderPageItems(
      frameOf(input, shape),
      shape.pieces.map((p) => p.item),
    ),
  };
}

const sameMembers = (a: readonly EntryPiece[], b: readonly EntryPiece[]) =>
  a.length === b.length && a.every((p, i) => p === b[i]);

/**
 * Builds the catalog. With the memo of the build that produced what is published now, only what
 * changed is rendered again: an entry whose built entry and page facts are the same keeps its
 * piece, and a partition whose members are the same pieces keeps its document (the same object,
 * which plan.ts uses to keep its published text without serializing or verifying it again).
 * The result is the same with or without a memo (test/unit/catalog/build-incremental.test.ts).
 */
export function buildCatalog(input: BuildInput, memo?: BuildMemo): BuildResult {
  const budget = input.budgetBytes ?? PARTITION_BUDGET_BYTES;
  const maxParts = input.maxPartitions ?? MAX_PARTITIONS;
  const context = JSON.stringify([
    input.identifier,
    input.title,
    input.host ?? null,
    input.include,
    input.signed,
    budget,
    maxParts,
  ]);
  const reuse = memo?.context === context ? memo : undefined;
  const sorted = [...input.entries].sort((a, b) =>
    a.entry.identifier < b.entry.identifier ? -1 : a.entry.identifier > b.entry.identifier ? 1 : 0,
  );
  const pieces = sorted.map((b) =>
    pieceOf(b, reuse?.pieces.get(b.entry.identifier), input.previous, input.now),
  );
  const nextPieces = new Map(pieces.map((p) => [p.entry.identifier, p]));
  const includes = input.include.map(includeEntry);
  const includeLinks = input.include.map(includeLink);
  const done = (
    root: BuiltDocument,
    parts: BuiltDocument[],
    partMembers: EntryPiece[][],
    nested: number,
  ): BuildResult => ({
    ok: true,
    root,
    parts,
    entries: pieces.length,
    nested,
    memo: {
      context,
      pieces: nextPieces,
      parts: parts.map((doc, i) => ({ count: parts.length, members: partMembers[i]!, doc })),
    },
  });

  const whole: DocumentShape = {
    pieces,
    extra: includes,
    nested: includeLinks,
    page: { title: input.title, catalogUrl: '/.well-known/ai-catalog.json' },
  };
  const wholeSize = sizeOf(input, whole);
  if (wholeSize <= budget) return done(render(input, whole), [], [], includes.length);

  // Start from the smallest power of two that could hold it (each try only adds up sizes).
  let first = 2;
  while (first < maxParts && first * budget < wholeSize) first *= 2;
  for (let count = first; count <= maxParts; count *= 2) {
    const buckets = Array.from({ length: count }, () => [] as EntryPiece[]);
    for (const p of pieces) buckets[p.hash % count]!.push(p);
    const shapes = buckets.map((members, i): DocumentShape => ({
      pieces: members,
      extra: [],
      nested: [],
      page: {
        title: input.title,
        catalogUrl: `/.well-known/${partitionCatalogRef(i)}`,
        subtitle: `partition ${i + 1} of ${count}`,
      },
    }));
    if (shapes.some((shape) => sizeOf(input, shape) > budget)) continue;
    const partIdentifier = (i: number) => `${input.identifier}.p${i}`;
    const partEntries: CatalogEntry[] = buckets.map((members, i) => ({
      identifier: partIdentifier(i),
      type: AI_CATALOG_MEDIA_TYPE,
      url: partitionCatalogRef(i),
      displayName: `${input.title} (partition ${i + 1} of ${count}, ${members.length} agents)`,
    }));
    const partLinks: NestedLink[] = buckets.map((members, i) => ({
      displayName: `Partition ${i + 1} of ${count}: ${members.length} agents`,
      url: `/.well-known/${partitionCatalogRef(i)}`,
      pageUrl: partitionPageRef(i),
    }));
    const rootShape: DocumentShape = {
      pieces: [],
      extra: [...partEntries, ...includes],
      nested: [...partLinks, ...includeLinks],
      page: {
        title: input.title,
        catalogUrl: '/.well-known/ai-catalog.json',
        subtitle: `${pieces.length} agents in ${count} partitions`,
      },
    };
    if (sizeOf(input, rootShape) > budget) break;
    const parts = shapes.map((shape, i) => {
      const last = reuse?.parts[i];
      return last && last.count === count && sameMembers(last.members, shape.pieces)
        ? last.doc
        : render(input, shape);
    });
    return done(render(input, rootShape), parts, buckets, includes.length + count);
  }
  return {
    ok: false,
    error: `${pieces.length} entries do not fit in ${maxParts} partitions of ${Math.round(budget / 1024)} KiB; select fewer AgentCards or use entries: url`,
  };
}
