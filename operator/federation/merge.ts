/**
 * What an import stores after a run (pure): the run's verified entries, and the last good ones it
 * could not confirm, kept until spec.maxStaleness after they last verified.
 *
 * - The remote catalog could not be read or was refused (origin down, a tampered catalog): every
 *   stored entry stays, stale, until maxStaleness after it last verified; then it is dropped
 *   (refused Stale).
 * - An entry still listed but refused now (a tampered or unreachable card): its last good version
 *   stays, stale, on the same terms; a changed card is verified again like a new one.
 * - An entry under a nested catalog that could not be read: the same.
 * - An entry no longer listed by a catalog that was read: gone at once.
 */
import type { CrawlOutcome, RefusedEntry } from './crawl.ts';
import { entryKey, type ImportedEntry } from './store.ts';

export interface MergeInput {
  /** The entries stored now. */
  previous: readonly ImportedEntry[];
  /** When each stored entry last verified (ms), by entryKey. */
  lastGood: ReadonlyMap<string, number>;
  /** When an entry verified whose time is not in lastGood (after a restart: status.lastSuccessTime). */
  fallbackGood: number;
  outcome: CrawlOutcome;
  now: number;
  maxStalenessMs: number;
}

export interface MergeResult {
  /** What to store, sorted by identifier and version. */
  entries: ImportedEntry[];
  lastGood: Map<string, number>;
  /** Entries kept from before, not confirmed by this run. */
  stale: number;
  /** Entries and nested catalogs not imported, with why (sorted); dropped stale entries included. */
  refused: RefusedEntry[];
}

const byKey = (a: ImportedEntry, b: ImportedEntry) => {
  const [x, y] = [entryKey(a.entry), entryKey(b.entry)];
  return x < y ? -1 : x > y ? 1 : 0;
};

const byWhat = (a: RefusedEntry, b: RefusedEntry) => {
  const [x, y] = [`${a.catalogUrl}\u0000${a.what}`, `${b.catalogUrl}\u0000${b.what}`];
  return x < y ? -1 : x > y ? 1 : 0;
};

export function mergeImport(input: MergeInput): MergeResult {
  const { outcome, now, maxStalenessMs } = input;
  const entries: ImportedEntry[] = [];
  const lastGood = new Map<string, number>();
  const refused: RefusedEntry[] = outcome.ok ? [...outcome.refused] : [];
  let stale = 0;

  const fresh = new Set<string>();
  if (outcome.ok)
    for (const e of outcome.entries) {
      const key = entryKey(e.entry);
      fresh.add(key);
      entries.push(e);
      lastGood.set(key, now);
    }
  const refusedKeys = new Set(outcome.ok ? outcome.refused.flatMap((r) => (r.key ? [r.key] : [])) : []);
  const unread = new Set(outcome.ok ? outcome.unreadCatalogs : []);

  for (const prev of input.previous) {
    const key = entryKey(prev.entry);
    if (fresh.has(key)) continue;
    // Not confirmed by this run: kept only when the run could not say it is gone.
    const unconfirmed = !outcome.ok || refusedKeys.has(key) || unread.has(prev.catalogUrl);
    if (!unconfirmed) continue; // removed at the origin
    const good = input.lastGood.get(key) ?? input.fallbackGood;
    if (now - good <= maxStalenessMs) {
      entries.push(prev);
      lastGood.set(key, good);
      stale++;
    } else if (!refusedKeys.has(key)) {
      // (An entry refused now is counted once, under the reason it is refused for.)
      refused.push({
        key,
        what: prev.entry.identifier,
        catalogUrl: prev.catalogUrl,
        reason: 'Stale',
        message: `not verified since ${new Date(good).toISOString()}, longer than spec.maxStaleness; dropped`,
      });
    }
  }
  entries.sort(byKey);
  refused.sort(byWhat);
  return { entries, lastGood, stale, refused };
}
