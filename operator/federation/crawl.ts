/**
 * One import run: from the remote catalog's URL to the entries that verify and those refused,
 * with why. Documents are read through `get` (fetch.ts: the hostile-URL fetcher, or a test's
 * double), so everything here but that call is deterministic:
 *
 * - catalogs are read level by level, each level's entries in document order; a catalog URL is
 *   read once (a diamond, or a loop back to a catalog already read, adds nothing), and nested
 *   catalogs deeper than spec.maxDepth are not followed (AI Catalog spec "Nested Catalog Depth and
 *   Circular References");
 * - an agent is listed once: the first entry of an identifier and version, in that order, is the
 *   one imported, and a card URL is fetched once;
 * - an entry another cluster imported (it carries IMPORTED_EXTENSION) is not imported again: the
 *   cycle rule of store.ts (isReimport);
 * - the remote catalog's own signature is checked as spec.catalogSignature says (a refused
 *   catalog fails the whole run: the last good entries stay, see merge.ts), nested catalogs' when
 *   they carry one; every card must verify against spec.trust, and a Trust Manifest that
 *   contradicts its entry refuses it.
 */
import type { ImportFetchedReason, ImportRefusalReason } from '../api/reasons.ts';
import { isAgentCardEntry, isCatalogEntry, validateCatalog, type CatalogEntry } from '../catalog/document.ts';
import type { LoadedTrust } from '../catalog/trust.ts';
import { formatProblem } from '../card/problem.ts';
import { describeError } from '../errors.ts';
import { FetchError } from '../discover/fetch.ts';
import type { FetchErrorCode } from '../discover/report.ts';
import { parseTargetUrl } from '../discover/plan.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from '../catalog/document.ts';
import { digestOf, byteLength } from '../runtime/configmaps.ts';
import type { CatalogSignaturePolicy } from './resource.ts';
import { entryKey, isReimport, MAX_ENTRY_BYTES, serializeEntry, type ImportedEntry } from './store.ts';
import { checkCatalogSignature, checkManifest, verifyImportedCard, type Refusal } from './verify.ts';

/** What `get` returns: the body as text (the bytes as served). */
export interface Document {
  text: string;
}

export interface CrawlInput {
  url: string;
  maxDepth: number;
  catalogSignature: CatalogSignaturePolicy;
  trust: LoadedTrust;
  /** spec.origin. */
  origin?: string;
  /** Fetches a URL; throws a FetchError when it cannot. */
  get: (url: string) => Promise<Document>;
  /** Card fetches in flight at once (default 8). */
  concurrency?: number;
}

/** An entry (or a nested catalog) not imported, and why. */
export interface RefusedEntry extends Refusal {
  /** entryKey() of a card entry; absent for a nested catalog. */
  key?: string;
  /** The entry's identifier, or the nested catalog's URL. */
  what: string;
  /** The catalog that listed it. */
  catalogUrl: string;
}

export type CrawlOutcome =
  | { ok: false; reason: ImportFetchedReason; message: string; digest?: string }
  | {
      ok: true;
      /** sha256 of the remote catalog's bytes. */
      digest: string;
      origin: string;
      /** Catalog documents read, the remote one included. */
      catalogs: number;
      entries: ImportedEntry[];
      refused: RefusedEntry[];
      /** Nested catalogs that could not be read: what they listed before is kept (merge.ts). */
      unreadCatalogs: string[];
      /** Entries another cluster imported, not imported again (the cycle rule). */
      reimports: number;
      /** Entries of an identifier and version already listed (diamonds, repeats). */
      duplicates: number;
    };

/** The Fetched reason of a remote catalog that could not be read, by the fetcher's code. */
const FETCHED_REASON: Record<FetchErrorCode, ImportFetchedReason> = {
  blocked: 'Blocked',
  timeout: 'Timeout',
  deadline: 'Timeout',
  redirect: 'Redirected',
  'too-large': 'TooLarge',
  budget: 'TooLarge',
  'not-found': 'NotFound',
  http: 'HTTPError',
  dns: 'DNSFailed',
  connect: 'Unreachable',
  tls: 'TLSError',
  'not-json': 'NotJSON',
  'too-deep': 'NotJSON',
};

/** The refusal reason of a card or nested catalog that could not be read. */
function refusalOfFetch(err: unknown): Refusal {
  if (err instanceof FetchError) {
    const reason: ImportRefusalReason =
      err.code === 'too-large' || err.code === 'budget'
        ? 'TooLarge'
        : err.code === 'not-json' || err.code === 'too-deep'
          ? 'Invalid'
          : 'Unreachable';
    return { reason, message: `${err.url}: ${err.message}` };
  }
  return { reason: 'Unreachable', message: describeError(err) };
}

function parseJson(text: string): { value: unknown } | { error: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { error: 'the body is not JSON' };
  }
  if (nestsDeeperThan(value, MAX_JSON_DEPTH))
    return { error: `the JSON nests deeper than ${MAX_JSON_DEPTH} levels` };
  return { value };
}

/** Runs `fn` over `items` with at most `limit` at once; results in the items' order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

type CatalogDoc = { url: string; value: unknown; depth: number };

export async function crawlImport(input: CrawlInput): Promise<CrawlOutcome> {
  let root: Document;
  try {
    root = await input.get(input.url);
  } catch (err) {
    if (err instanceof FetchError)
      return { ok: false, reason: FETCHED_REASON[err.code] ?? 'HTTPError', message: err.message };
    return { ok: false, reason: 'Unreachable', message: describeError(err) };
  }
  const digest = digestOf(root.text);
  const parsed = parseJson(root.text);
  if ('error' in parsed) return { ok: false, reason: 'NotJSON', message: parsed.error, digest };
  const { catalog, problems } = validateCatalog(parsed.value);
  if (!catalog) {
    const shown = problems.slice(0, 3).map(formatProblem).join('; ');
    return { ok: false, reason: 'CatalogInvalid', message: `not a valid AI Catalog: ${shown}`, digest };
  }
  const signature = await checkCatalogSignature(
    parsed.value as Record<string, unknown>,
    input.catalogSignature,
    input.trust,
  );
  if (!signature.ok) return { ok: false, reason: signature.reason, message: signature.message, digest };

  const origin = input.origin ?? catalog.host?.displayName ?? new URL(input.url).host;
  const refused: RefusedEntry[] = [];
  const unreadCatalogs: string[] = [];
  const seenCatalogs = new Set<string>([new URL(input.url).href]);
  const seenKeys = new Set<string>();
  const cardTexts = new Map<string, Promise<Document>>();
  const listed: Array<{ entry: CatalogEntry; catalogUrl: string }> = [];
  let reimports = 0;
  let duplicates = 0;
  let catalogs = 0;

  let level: CatalogDoc[] = [{ url: input.url, value: catalog, depth: 0 }];
  while (level.length > 0) {
    const nested: Array<{ entry: CatalogEntry; at: string; parent: string; depth: number }> = [];
    for (const doc of level) {
      catalogs++;
      const { catalog: c } = doc.depth === 0 ? { catalog } : validateCatalog(doc.value);
      for (const [i, entry] of (c?.entries ?? []).entries()) {
        if (isCatalogEntry(entry)) {
          nested.push({ entry, at: `${doc.url}#entries[${i}]`, parent: doc.url, depth: doc.depth + 1 });
          continue;
        }
        if (!isAgentCardEntry(entry)) continue; // another kind of artifact: not an agent
        if (isReimport(entry)) {
          reimports++;
          continue;
        }
        const key = entryKey(entry);
        if (seenKeys.has(key)) {
          duplicates++;
          continue;
        }
        seenKeys.add(key);
        listed.push({ entry, catalogUrl: doc.url });
      }
    }
    // The next level: each nested catalog once, within the depth limit.
    const next: CatalogDoc[] = [];
    const toRead: Array<{ url: string; parent: string; depth: number; inline?: unknown }> = [];
    for (const n of nested) {
      if (n.entry.data !== undefined) {
        toRead.push({ url: n.at, parent: n.parent, depth: n.depth, inline: n.entry.data });
        continue;
      }
      let url: string;
      try {
        url = parseTargetUrl(n.entry.url!, n.parent).href;
      } catch (err) {
        refused.push({
          what: n.entry.url!,
          catalogUrl: n.parent,
          reason: 'Invalid',
          message: describeError(err),
        });
        continue;
      }
      if (seenCatalogs.has(url)) continue; // a diamond or a loop: read once
      seenCatalogs.add(url);
      toRead.push({ url, parent: n.parent, depth: n.depth });
    }
    const docs = await mapLimit(toRead, input.concurrency ?? 8, async (t) => {
      if (t.depth > input.maxDepth) {
        refused.push({
          what: t.url,
          catalogUrl: t.parent,
          reason: 'DepthExceeded',
          message: `nested deeper than spec.maxDepth ${input.maxDepth}; not followed`,
        });
        return undefined;
      }
      let value: unknown = t.inline;
      if (value === undefined) {
        try {
          const got = parseJson((await input.get(t.url)).text);
          if ('error' in got) throw new FetchError('not-json', t.url, got.error);
          value = got.value;
        } catch (err) {
          unreadCatalogs.push(t.url);
          refused.push({ what: t.url, catalogUrl: t.parent, ...refusalOfFetch(err) });
          return undefined;
        }
      }
      const v = validateCatalog(value);
      if (!v.catalog) {
        unreadCatalogs.push(t.url);
        const shown = v.problems.slice(0, 2).map(formatProblem).join('; ');
        refused.push({
          what: t.url,
          catalogUrl: t.parent,
          reason: 'Invalid',
          message: `not a valid AI Catalog: ${shown}`,
        });
        return undefined;
      }
      if (v.catalog.signature !== undefined && input.catalogSignature !== 'Ignore') {
        const s = await checkCatalogSignature(value as Record<string, unknown>, 'IfPresent', input.trust);
        if (!s.ok) {
          unreadCatalogs.push(t.url);
          refused.push({ what: t.url, catalogUrl: t.parent, reason: 'SignatureInvalid', message: s.message });
          return undefined;
        }
      }
      return { url: t.url, value: v.catalog, depth: t.depth };
    });
    for (const d of docs) if (d) next.push(d);
    level = next;
  }

  // Every listed card: fetched once per URL, then verified.
  const results = await mapLimit(listed, input.concurrency ?? 8, async ({ entry, catalogUrl }) => {
    const key = entryKey(entry);
    const refuse = (r: Refusal): RefusedEntry => ({ key, what: entry.identifier, catalogUrl, ...r });
    let cardText: string;
    let cardUrl: string | undefined;
    if (entry.data !== undefined) {
      cardText = JSON.stringify(entry.data);
    } else {
      try {
        cardUrl = parseTargetUrl(entry.url!, catalogUrl).href;
      } catch (err) {
        return refuse({ reason: 'Invalid', message: describeError(err) });
      }
      let pending = cardTexts.get(cardUrl);
      if (!pending) cardTexts.set(cardUrl, (pending = input.get(cardUrl)));
      try {
        cardText = (await pending).text;
      } catch (err) {
        return refuse(refusalOfFetch(err));
      }
    }
    const json = parseJson(cardText);
    if ('error' in json)
      return refuse({ reason: 'Invalid', message: `${cardUrl ?? entry.identifier}: ${json.error}` });
    const verdict = await verifyImportedCard(json.value, cardUrl ?? catalogUrl, input.trust);
    if (!verdict.ok) return refuse(verdict);
    const manifest = await checkManifest(entry, entry.data !== undefined ? undefined : cardText, input.trust);
    if (!manifest.ok) return refuse(manifest);
    const imported: ImportedEntry = {
      entry,
      card: cardText,
      digest: digestOf(cardText),
      ...(cardUrl ? { cardUrl } : {}),
      signer: verdict.signer,
      catalogUrl,
      origin,
      ...(manifest.identity ? { manifestIdentity: manifest.identity } : {}),
    };
    if (byteLength(serializeEntry(imported)) > MAX_ENTRY_BYTES)
      return refuse({
        reason: 'TooLarge',
        message: `the entry takes more than ${MAX_ENTRY_BYTES} bytes stored`,
      });
    return imported;
  });
  const entries: ImportedEntry[] = [];
  for (const r of results) {
    if ('reason' in r) refused.push(r);
    else entries.push(r);
  }
  return { ok: true, digest, origin, catalogs, entries, refused, unreadCatalogs, reimports, duplicates };
}
