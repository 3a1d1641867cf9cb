/**
 * What a catalog reads of CatalogImports (spec.imports, docs/federation.md), from the shared
 * cache: the import objects (their labels, for the selector) and the ConfigMaps each import keeps
 * its verified entries in (the store contract of operator/federation/store.ts, labelled
 * agentcard.dev/catalog-import and in the operator's ConfigMap cache by its managed-by label).
 *
 * A store ConfigMap is parsed once per resourceVersion: a catalog rebuilt because an AgentCard
 * changed does not parse thousands of imported entries again.
 *
 * Only imports that exist are read: the entries of a deleted import are gone from every catalog
 * at its next rebuild, whether or not its ConfigMaps have been garbage-collected yet.
 */
import type { KubernetesObject, V1ConfigMap } from '@kubernetes/client-node';
import { IMPORT_LABEL, importLabelValue } from '../../api/names.ts';
import type { ImportedEntryView } from '../../catalog/imported.ts';
import { importedMarker, readImportedEntries, type StoredImportedEntry } from '../../federation/store.ts';
import type { SharedInformer } from '../../runtime/cache.ts';
import type { CatalogImportView } from './plan.ts';

/** A CatalogImport as cached (only its metadata is read here). */
export type CachedImport = KubernetesObject & { metadata: { name: string; namespace: string } };

/** One stored entry as a catalog lists it. */
export function entryView(stored: StoredImportedEntry): ImportedEntryView {
  return {
    source: `${stored.import.namespace}/${stored.import.name}`,
    entry: stored.entry,
    card: stored.card,
    ...(stored.cardUrl ? { cardUrl: stored.cardUrl } : {}),
    signer: stored.signer,
    origin: stored.origin,
    catalogUrl: stored.catalogUrl,
    marker: importedMarker(stored),
  };
}

export class ImportedEntries {
  private readonly parsed = new Map<string, { version: string; entries: ImportedEntryView[] }>();
  private readonly imports: SharedInformer<CachedImport>;
  private readonly configMaps: SharedInformer<V1ConfigMap>;

  constructor(imports: SharedInformer<CachedImport>, configMaps: SharedInformer<V1ConfigMap>) {
    this.imports = imports;
    this.configMaps = configMaps;
  }

  /** The imports in reach (one namespace, or all) with their verified entries. */
  inReach(namespace: string | undefined): CatalogImportView[] {
    if (namespace !== undefined && !this.imports.watches(namespace)) return [];
    const out: CatalogImportView[] = [];
    for (const imp of this.imports.list(namespace)) {
      const ns = imp.metadata.namespace;
      const label = importLabelValue(imp.metadata.name);
      const entries: ImportedEntryView[] = [];
      const stores = this.configMaps.watches(ns)
        ? this.configMaps.list(ns).filter((cm) => cm.metadata?.labels?.[IMPORT_LABEL] === label)
        : [];
      for (const cm of stores)
        for (const e of this.entriesOf(cm)) if (e.source === `${ns}/${imp.metadata.name}`) entries.push(e);
      out.push({ namespace: ns, name: imp.metadata.name, labels: imp.metadata.labels ?? {}, entries });
    }
    return out;
  }

  /** Forgets a deleted store ConfigMap. */
  forget(cm: V1ConfigMap): void {
    this.parsed.delete(`${cm.metadata?.namespace}/${cm.metadata?.name}`);
  }

  private entriesOf(cm: V1ConfigMap): ImportedEntryView[] {
    const key = `${cm.metadata?.namespace}/${cm.metadata?.name}`;
    const version = cm.metadata?.resourceVersion ?? '';
    const known = this.parsed.get(key);
    if (known && known.version === version && version !== '') return known.entries;
    const entries = readImportedEntries([cm]).map(entryView);
    this.parsed.set(key, { version, entries });
    return entries;
  }
}
