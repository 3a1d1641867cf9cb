/**
 * Where an import keeps what it verified: the store contract between the import controller (the
 * only writer) and whoever lists imported entries (the catalogs controller, from the shared
 * ConfigMap cache). Pure: entries in, ConfigMaps out, and back.
 *
 * The contract:
 * - ConfigMaps in the CatalogImport's namespace, named importConfigMapName(import, shard)
 *   (`<import>-imported-<n>`), labelled `app.kubernetes.io/managed-by: agentcard-operator` and
 *   `agentcard.dev/catalog-import: importLabelValue(import)`, controlled by the CatalogImport
 *   (ownerReference): deleting the import deletes them.
 * - One data key per entry, `<hash of identifier and version>.json`, whose value is the JSON of an
 *   ImportedEntry: the catalog entry as the origin listed it, the card's bytes exactly as fetched
 *   (never re-serialized, so the origin's signature stays valid for any client), their digest,
 *   the verified signer, the origin.
 * - An entry goes to shard `hash mod shards`; the number of shards is the smallest power of two
 *   that keeps every shard under SHARD_TARGET_BYTES (500 cards of 4 KB take 4 shards), so an
 *   entry added or changed rewrites one ConfigMap, not all.
 * - Only verified entries are stored (stale ones included while spec.maxStaleness allows): a
 *   reader lists what it reads, and needs no verification of its own.
 * - The same entries give the same bytes (keys sorted), so an unchanged import writes nothing.
 */
import { createHash } from 'node:crypto';
import {
  API_VERSION,
  IMPORT_KIND,
  IMPORT_LABEL,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  importConfigMapName,
  importLabelValue,
} from '../api/names.ts';
import type { CatalogEntry } from '../catalog/document.ts';
import type { ConfigMapObject } from '../runtime/configmaps.ts';
import { byteLength } from '../runtime/configmaps.ts';
import { sortedJson } from '../runtime/sorted-json.ts';

export { IMPORT_LABEL } from '../api/names.ts';

/**
 * The extension member a catalog sets on an entry it lists from an import (AI Catalog spec,
 * "Extensions": a reverse-DNS key). Its value is importedMarker(). An importer does not import
 * an entry that carries it: federation is one hop (see isReimport), which is what keeps an import
 * cycle (A imports B, B imports A) from growing or flapping.
 */
export const IMPORTED_EXTENSION = 'dev.agentcard.imported';

/** One verified entry of a remote catalog, as stored. */
export interface ImportedEntry {
  /** The catalog entry as the origin lists it (its url as written, its trustManifest), unchanged. */
  entry: CatalogEntry;
  /**
   * The card: the bytes fetched from the entry's url exactly as served, or, for an entry with
   * inline `data`, that data as JSON (its signature is over the RFC 8785 form, so it verifies).
   */
  card: string;
  /** `sha256:<hex>` of `card` (UTF-8). */
  digest: string;
  /** The absolute URL the card was fetched from (the entry's url resolved); absent for inline data. */
  cardUrl?: string;
  /** Who signed the card, as verified: the certificate's identity (a SPIFFE ID), else `kid <kid>`. */
  signer: string;
  /** The catalog document that listed the entry (the remote catalog, or a nested one). */
  catalogUrl: string;
  /** The origin's display name (spec.origin, the remote host.displayName, or the URL's host). */
  origin: string;
  /** The entry's Trust Manifest, when it has one that verified against the import's trust. */
  manifestIdentity?: string;
}

/** An entry as read back, with the import that stored it. */
export interface StoredImportedEntry extends ImportedEntry {
  import: { namespace: string; name: string };
}

/** What identifies an entry within a catalog: identifier and version (AI Catalog spec "Multi-Version Entries"). */
export function entryKey(entry: { identifier: string; version?: string }): string {
  return JSON.stringify([entry.identifier, entry.version ?? null]);
}

const hashOf = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** The data key of an entry: a hash, since identifiers hold characters a data key may not. */
export function entryDataKey(entry: { identifier: string; version?: string }): string {
  return `${hashOf(entryKey(entry)).slice(0, 40)}.json`;
}

/** The stored text of an entry: sorted keys, so the same entry always gives the same bytes. */
export function serializeEntry(entry: ImportedEntry): string {
  // Only the members of ImportedEntry: an entry read back (with its `import`) stores the same.
  const { entry: e, card, digest, cardUrl, signer, catalogUrl, origin, manifestIdentity } = entry;
  return sortedJson({ entry: e, card, digest, cardUrl, signer, catalogUrl, origin, manifestIdentity });
}

/** A shard is filled up to this much; the API server refuses a ConfigMap over 1 MiB. */
export const SHARD_TARGET_BYTES = 512 * 1024;
/** No shard may exceed this (a skewed hash): the shards are doubled until none does. */
export const SHARD_MAX_BYTES = 900 * 1024;
/** The most shards an import has (512 KiB each: far above any catalog). */
export const MAX_SHARDS = 1024;

/** The largest stored entry accepted: one that would not fit a shard alone is refused TooLarge. */
export const MAX_ENTRY_BYTES = SHARD_MAX_BYTES - 1024;

/**
 * The entries' data, split into shards (pure): `shards[n]` is the data of ConfigMap n. Throws
 * when the entries cannot fit MAX_SHARDS shards (the engine refuses larger entries before).
 */
export function shardEntries(entries: readonly ImportedEntry[]): Array<Record<string, string>> {
  const items = entries
    .map((e) => {
      const key = entryDataKey(e.entry);
      const value = serializeEntry(e);
      return {
        key,
        value,
        bucket: parseInt(key.slice(0, 8), 16),
        bytes: byteLength(key) + byteLength(value),
      };
    })
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const total = items.reduce((sum, i) => sum + i.bytes, 0);
  let count = 1;
  while (count * SHARD_TARGET_BYTES < total && count < MAX_SHARDS) count *= 2;
  for (;;) {
    const shards = Array.from({ length: count }, () => ({ data: {} as Record<string, string>, bytes: 0 }));
    for (const item of items) {
      const shard = shards[item.bucket % count]!;
      shard.data[item.key] = item.value;
      shard.bytes += item.bytes;
    }
    if (shards.every((s) => s.bytes <= SHARD_MAX_BYTES)) return shards.map((s) => s.data);
    if (count >= MAX_SHARDS) throw new Error(`the imported entries do not fit ${MAX_SHARDS} ConfigMaps`);
    count *= 2;
  }
}

export interface ImportOwner {
  namespace: string;
  name: string;
  uid: string;
}

/** The ConfigMaps that hold these entries for this import (pure; the same entries, the same objects). */
export function importConfigMaps(owner: ImportOwner, entries: readonly ImportedEntry[]): ConfigMapObject[] {
  return shardEntries(entries).map((data, shard) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: importConfigMapName(owner.name, shard),
      namespace: owner.namespace,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [IMPORT_LABEL]: importLabelValue(owner.name) },
      ownerReferences: [
        { apiVersion: API_VERSION, kind: IMPORT_KIND, name: owner.name, uid: owner.uid, controller: true },
      ],
    },
    data,
  }));
}

/** The parts of a ConfigMap the reader looks at (a cached V1ConfigMap fits). */
export interface StoredConfigMap {
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    ownerReferences?: Array<{ kind?: string; name?: string; controller?: boolean }>;
    deletionTimestamp?: unknown;
  };
  data?: Record<string, string>;
}

/** The import that controls a store ConfigMap, or undefined when it is not one. */
export function storeOwner(cm: StoredConfigMap): { namespace: string; name: string } | undefined {
  if (cm.metadata?.labels?.[IMPORT_LABEL] === undefined) return undefined;
  const owner = cm.metadata.ownerReferences?.find((r) => r.controller && r.kind === IMPORT_KIND);
  if (!owner?.name) return undefined;
  return { namespace: cm.metadata.namespace ?? '', name: owner.name };
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  !!v && typeof v === 'object' && !Array.isArray(v);

/** One stored value read back; undefined when it is not an entry this module wrote. */
export function parseStoredEntry(text: string): ImportedEntry | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(value) || !isObject(value.entry)) return undefined;
  const { entry, card, digest, signer, catalogUrl, origin } = value;
  if (typeof entry.identifier !== 'string' || typeof entry.type !== 'string') return undefined;
  for (const v of [card, digest, signer, catalogUrl, origin]) if (typeof v !== 'string') return undefined;
  return value as unknown as ImportedEntry;
}

/**
 * Every entry stored in these ConfigMaps (pure): those labelled and controlled by a
 * CatalogImport, not being deleted; values that do not parse are skipped; an entry is listed once
 * per import. Sorted by import, then identifier and version, so the same ConfigMaps always give
 * the same list.
 */
export function readImportedEntries(configMaps: Iterable<StoredConfigMap>): StoredImportedEntry[] {
  const out: Array<StoredImportedEntry & { sort: string }> = [];
  for (const cm of configMaps) {
    const owner = storeOwner(cm);
    if (!owner || cm.metadata?.deletionTimestamp) continue;
    for (const text of Object.values(cm.data ?? {})) {
      const entry = parseStoredEntry(text);
      if (entry)
        out.push({
          ...entry,
          import: owner,
          sort: JSON.stringify([
            owner.namespace,
            owner.name,
            entry.entry.identifier,
            entry.entry.version ?? '',
          ]),
        });
    }
  }
  out.sort((a, b) => (a.sort < b.sort ? -1 : a.sort > b.sort ? 1 : 0));
  // While the shards are being resized an entry can be in two of them for a moment: listed once.
  return out
    .filter((e, i) => i === 0 || out[i - 1]!.sort !== e.sort)
    .map(({ sort: _sort, ...entry }) => entry);
}

/**
 * The extension a catalog adds to an entry it lists from an import (under IMPORTED_EXTENSION):
 * where the entry comes from and who signed it, as verified here.
 */
export function importedMarker(entry: ImportedEntry): Record<string, string> {
  return {
    origin: entry.origin,
    catalog: entry.catalogUrl,
    signer: entry.signer,
    digest: entry.digest,
    ...(entry.cardUrl ? { cardUrl: entry.cardUrl } : {}),
  };
}

/**
 * Whether a remote entry was itself imported by the remote cluster (it carries the marker). The
 * cycle rule: such entries are not imported again. Each cluster imports only what its origins
 * publish as their own, so in A ⇄ B neither ever lists the other's copy of its own agents: no
 * entry comes back to where it started, nothing grows, and an agent removed at its origin is gone
 * everywhere within one interval of each direct importer. To see a cluster's agents, import that
 * cluster (docs/federation.md, hub and spoke).
 */
export function isReimport(entry: { extensions?: Record<string, unknown> }): boolean {
  return entry.extensions !== undefined && Object.hasOwn(entry.extensions, IMPORTED_EXTENSION);
}
