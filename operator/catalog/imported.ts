/**
 * Entries another cluster published, listed by a local catalog (docs/federation.md), without any
 * I/O: a CatalogImport fetched and verified them (operator/federation), and a catalog that
 * selects the import (spec.imports) lists them next to its own AgentCards.
 *
 * An imported entry is listed as its origin published it, so what the origin signed stays
 * verifiable by every client of this catalog:
 * - `url` (resolved against the catalog it was found in) or `data` unchanged: a client fetches,
 *   or reads, the card its origin signed. A2A card signatures cover the RFC 8785 form of the
 *   card (A2A spec section 8.4), so inline `data` verifies wherever it is listed;
 * - the origin's Trust Manifest is left out: it is signed by the origin's catalog key, which a
 *   client of this catalog has no reason to trust, and a manifest that does not verify fails the
 *   entry (AI Catalog spec "Verifying Artifact Integrity"). This catalog's own signature vouches
 *   for the listing; the card's signature for the card;
 * - the origin is an extension member (AI Catalog spec "Extensions": keyed by a reverse-DNS
 *   name, ignored by consumers that do not know it), written from what the import verified, never
 *   from what the origin claims: `"dev.agentcard.imported": {"origin", "catalog", "signer",
 *   "digest", "cardUrl"}`. An importer does not import an entry that carries it (federation is
 *   one hop, operator/federation/store.ts), which keeps an A-imports-B-imports-A cycle stable;
 * - `updatedAt` is this catalog's (build.ts stamps it when the entry changes).
 *
 * One identifier, one entry (AI Catalog spec "Multi-Version Entries"): a local AgentCard wins
 * over an imported entry of the same identifier (what this cluster runs is what it knows best),
 * and of two imports listing it, the one first by namespace/name. Both are reported as shadowed.
 */
import { A2A_AGENT_CARD_MEDIA_TYPE, isAgentCardEntry, type CatalogEntry } from './document.ts';
import type { AgentFacts, BuiltEntry, EntryOrigin } from './entries.ts';

/**
 * The extension member that marks an entry listed from another cluster; its value is the store's
 * importedMarker() (operator/federation/store.ts checks the same name to refuse re-imports).
 */
export const IMPORTED_EXTENSION = 'dev.agentcard.imported';

export type { EntryOrigin };

/** One verified entry of a CatalogImport, as the catalog controller hands it over. */
export interface ImportedEntryView {
  /** The CatalogImport that verified it: `namespace/name`. */
  source: string;
  /** The entry as its origin published it. */
  entry: CatalogEntry;
  /** The card bytes the import verified (for the page: name, skills; never re-published). */
  card: string;
  /** The absolute URL the card was fetched from; absent for inline data. */
  cardUrl?: string;
  /** Who signed the card, as the import verified it. */
  signer: string;
  /** The origin's display name (the import's name for its cluster). */
  origin: string;
  /** The catalog document that listed the entry. */
  catalogUrl: string;
  /** The value of the IMPORTED_EXTENSION member. */
  marker: Readonly<Record<string, string>>;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The origin an entry's IMPORTED_EXTENSION member states, when it has a well-formed one. */
export function entryOrigin(entry: Pick<CatalogEntry, 'extensions'>): EntryOrigin | undefined {
  const value = entry.extensions?.[IMPORTED_EXTENSION];
  if (!isObject(value) || typeof value.catalog !== 'string' || typeof value.signer !== 'string')
    return undefined;
  return {
    ...(typeof value.origin === 'string' && value.origin ? { cluster: value.origin } : {}),
    catalog: value.catalog,
    signer: value.signer,
  };
}

/** An http(s) URL, resolved against the catalog the entry was found in; undefined when it is not one. */
function absoluteUrl(url: string, base: string): string | undefined {
  try {
    const resolved = new URL(url, base);
    return resolved.protocol === 'https:' || resolved.protocol === 'http:' ? resolved.href : undefined;
  } catch {
    return undefined;
  }
}

/** The entry and page facts of one imported entry, or why it is not listed. */
export function importedEntry(
  view: ImportedEntryView,
): { ok: true; built: BuiltEntry } | { ok: false; skip: string } {
  const where = `${view.source}: ${view.entry.identifier}`;
  if (!isAgentCardEntry(view.entry)) return { ok: false, skip: `${where}: not an A2A agent card entry` };
  let card: unknown;
  try {
    card = JSON.parse(view.card);
  } catch {
    return { ok: false, skip: `${where}: the imported card is not JSON` };
  }
  if (!isObject(card)) return { ok: false, skip: `${where}: the imported card is not an object` };
  const { updatedAt: _updatedAt, trustManifest: _manifest, url, data, extensions, ...rest } = view.entry;
  const entry: CatalogEntry = { ...rest, type: A2A_AGENT_CARD_MEDIA_TYPE };
  let cardUrl: string | undefined;
  if (data !== undefined) entry.data = data;
  else {
    cardUrl = absoluteUrl(view.cardUrl ?? url ?? '', view.catalogUrl);
    if (!cardUrl) return { ok: false, skip: `${where}: its url is not an http(s) URL` };
    entry.url = cardUrl;
  }
  const origin: EntryOrigin = {
    ...(view.origin ? { cluster: view.origin } : {}),
    catalog: view.catalogUrl,
    signer: view.signer,
  };
  // The origin's own members stay (an origin's entry carrying the marker is never imported).
  entry.extensions = { ...extensions, [IMPORTED_EXTENSION]: { ...view.marker } };
  const skills = Array.isArray(card.skills) ? card.skills.filter(isObject) : [];
  const tags = [
    ...new Set(
      skills.flatMap((s) => (Array.isArray(s.tags) ? s.tags.filter((t) => typeof t === 'string') : [])),
    ),
  ];
  const facts: AgentFacts = {
    name: str(card.name) || view.entry.displayName || view.entry.identifier,
    description: str(card.description),
    version: str(card.version),
    skills: skills.map((s) => str(s.name) || str(s.id)).filter(Boolean),
    tags,
    signed: true,
    signedBy: view.signer,
    ...(cardUrl ? { cardUrl } : {}),
    namespace: view.origin || view.catalogUrl,
    origin,
  };
  return { ok: true, built: { entry, facts } };
}

/**
 * The local entries and the imported ones, one per identifier (local first, then imports by
 * source), with each left-out imported entry named.
 */
export function mergeImported(
  local: readonly BuiltEntry[],
  imported: readonly ImportedEntryView[],
): { built: BuiltEntry[]; skipped: string[]; listed: number } {
  const taken = new Set(local.map((b) => b.entry.identifier));
  const built = [...local];
  const skipped: string[] = [];
  let listed = 0;
  const ordered = [...imported].sort((a, b) => (a.source < b.source ? -1 : a.source > b.source ? 1 : 0));
  for (const view of ordered) {
    const id = view.entry.identifier;
    if (taken.has(id)) {
      skipped.push(`${view.source}: ${id}: shadowed by an entry of the same identifier listed first`);
      continue;
    }
    const result = importedEntry(view);
    if (!result.ok) {
      skipped.push(result.skip);
      continue;
    }
    taken.add(id);
    built.push(result.built);
    listed++;
  }
  return { built, skipped: skipped.sort(), listed };
}
