/**
 * Following a start URL through catalogs to cards. Each catalog is validated (and its signature
 * checked when it has one), each A2A card entry is fetched (or taken inline) and checked, each
 * nested catalog is followed, within limits on depth, documents, bytes and time. A catalog URL
 * already on the path that led to it is a loop and reported; one reached twice by different
 * paths is read once (AI Catalog spec "Nested Catalog Depth and Circular References").
 */
import { isAgentCardEntry, isCatalogEntry, validateCatalog, type CatalogEntry } from '../catalog/document.ts';
import { verifyCatalog } from '../catalog/signature.ts';
import { verifyTrustManifest } from '../catalog/trust-manifest.ts';
import { entryOrigin } from '../catalog/imported.ts';
import { formatProblem } from '../card/problem.ts';
import { describeError, UserError } from '../errors.ts';
import { ProbeLimiter } from '../probe/limiter.ts';
import { type SignatureReport, cardProblems, checkSignatures, notVerified, signerOf } from './check.ts';
import { type Fetched, type Fetcher, FetchError, parseJsonBody } from './fetch.ts';
import { classifyDocument, nestingLoop, parseTargetUrl, redactUrl, startCandidates } from './plan.ts';
import type {
  CardReport,
  CatalogReport,
  DiscoverErrorCode,
  ErrorReport,
  ManifestReport,
  SkillSummary,
} from './report.ts';
import { type Trust, verifyOptions } from './trust.ts';

export interface CrawlLimits {
  /** Nested catalogs followed below the first one (the AI Catalog spec recommends 4). */
  maxDepth: number;
  /** Documents fetched in the whole run. */
  maxDocuments: number;
  /** Fetches in flight at once (per host too). */
  concurrency: number;
}

export interface CrawlResult {
  cards: CardReport[];
  catalogs: CatalogReport[];
  errors: ErrorReport[];
}

/**
 * Answers at an origin's /.well-known/ai-catalog.json that mean "no catalog here": the card is
 * looked for instead, quietly (many servers answer any path with an HTML page, or 401/403); a
 * 4xx counts too. A 5xx or a hostile answer (too large, a redirect, a timeout) is reported.
 */
const NO_CATALOG = new Set(['not-found', 'not-json', 'unknown-document']);
/** Failures of the host itself: its card cannot be fetched either, so they are reported once. */
const HOST_FAILURES = new Set(['blocked', 'dns', 'connect', 'tls', 'deadline']);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => !!v && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** The parts of a card the report shows, read defensively (the card may be invalid). */
function summarize(
  card: unknown,
): Pick<CardReport, 'name' | 'version' | 'description' | 'skills' | 'interfaces'> {
  const c = isObj(card) ? card : {};
  const skills: SkillSummary[] = (Array.isArray(c.skills) ? c.skills : []).filter(isObj).map((s) => ({
    id: str(s.id) ?? '',
    name: str(s.name) ?? '',
    ...(str(s.description) ? { description: str(s.description) } : {}),
    tags: (Array.isArray(s.tags) ? s.tags : []).filter((t): t is string => typeof t === 'string'),
  }));
  const interfaces = (Array.isArray(c.supportedInterfaces) ? c.supportedInterfaces : [])
    .filter(isObj)
    .filter((i) => str(i.url) && str(i.protocolBinding))
    .map((i) => ({
      url: str(i.url)!,
      protocolBinding: str(i.protocolBinding)!,
      protocolVersion: str(i.protocolVersion) ?? '',
      ...(str(i.tenant) ? { tenant: str(i.tenant) } : {}),
    }));
  return { name: str(c.name), version: str(c.version), description: str(c.description), skills, interfaces };
}

export class Crawler {
  readonly #fetcher: Fetcher;
  readonly #trust: Trust;
  readonly #limits: CrawlLimits;
  readonly #limiter: ProbeLimiter;
  readonly #result: CrawlResult = { cards: [], catalogs: [], errors: [] };
  /** Documents (catalogs and cards) already fetched or being fetched, by URL. */
  readonly #seen = new Set<string>();
  #documents = 0;
  #limitReported = false;
  #deadlineReported = false;

  constructor(fetcher: Fetcher, trust: Trust, limits: CrawlLimits) {
    this.#fetcher = fetcher;
    this.#trust = trust;
    this.#limits = limits;
    this.#limiter = new ProbeLimiter({ global: limits.concurrency, perHost: limits.concurrency });
  }

  get result(): CrawlResult {
    return this.#result;
  }

  #error(url: string, via: string[], code: DiscoverErrorCode, message: string): void {
    this.#result.errors.push({ url, via, code, message });
  }

  /**
   * Fetches within the document limit and the concurrency limits. A failure comes back as its
   * report, not recorded yet (the caller decides); `error: undefined` is a failure already
   * reported once for the whole run (the document limit, the run's deadline).
   */
  async #get(url: string, via: string[]): Promise<{ fetched: Fetched } | { error: ErrorReport | undefined }> {
    if (this.#documents >= this.#limits.maxDocuments) {
      if (this.#limitReported) return { error: undefined };
      this.#limitReported = true;
      const message = `stopped after ${this.#limits.maxDocuments} documents (--max-documents); the rest was not fetched`;
      return { error: { url, via, code: 'limit', message } };
    }
    this.#documents++;
    try {
      return { fetched: await this.#limiter.run(new URL(url).host, () => this.#fetcher.get(url)) };
    } catch (err) {
      if (err instanceof FetchError && err.code === 'deadline') {
        // Every fetch after the run's deadline fails the same way: one report says it.
        if (this.#deadlineReported) return { error: undefined };
        this.#deadlineReported = true;
        return { error: { url, via, code: err.code, message: `${err.message}; the rest was not fetched` } };
      }
      return err instanceof FetchError
        ? { error: { url, via, code: err.code, message: err.message } }
        : { error: { url, via, code: 'error', message: describeError(err) } };
    }
  }

  /** #get, with a failure recorded. */
  async #fetch(url: string, via: string[]): Promise<Fetched | undefined> {
    const got = await this.#get(url, via);
    if ('fetched' in got) return got.fetched;
    if (got.error) this.#result.errors.push(got.error);
    return undefined;
  }

  /** The JSON of a body, or the report of why it is not usable. */
  #json(fetched: Fetched, via: string[]): { value: unknown } | { error: ErrorReport } {
    try {
      return { value: parseJsonBody(fetched) };
    } catch (err) {
      const e = err as FetchError;
      return { error: { url: fetched.url, via, code: e.code, message: e.message } };
    }
  }

  #parse(fetched: Fetched, via: string[]): unknown {
    const parsed = this.#json(fetched, via);
    if ('value' in parsed) return parsed.value;
    this.#result.errors.push(parsed.error);
    return undefined;
  }

  /** Discovers from one URL the user gave. */
  async start(text: string): Promise<void> {
    let url: URL;
    try {
      url = parseTargetUrl(text);
    } catch (err) {
      this.#error(redactUrl(text), [], 'usage', describeError(err));
      return;
    }
    const candidates = startCandidates(url);
    if (candidates.length === 1) {
      const fetched = await this.#fetch(url.href, []);
      if (!fetched) return;
      this.#seen.add(url.href);
      const value = this.#parse(fetched, []);
      if (value === undefined) return;
      const kind = classifyDocument(value, fetched.contentType);
      if (kind === 'catalog') await this.#catalog(value, url.href, [], 0, fetched.cache);
      else if (kind === 'card') await this.#card(value, url.href, [], undefined, fetched.cache);
      else this.#error(url.href, [], 'unknown-document', 'neither an AI Catalog nor an A2A Agent Card');
      return;
    }
    // An origin: its catalog, else its card. Several start URLs run at once, so this one's
    // failures are kept here until it is known which of them to report.
    const [catalogUrl, cardUrl] = [candidates[0]!.url, candidates[1]!.url];
    const got = await this.#get(catalogUrl, []);
    let failure: ErrorReport | undefined;
    if ('fetched' in got) {
      this.#seen.add(catalogUrl);
      const parsed = this.#json(got.fetched, []);
      if ('error' in parsed) failure = parsed.error;
      else if (classifyDocument(parsed.value, got.fetched.contentType) === 'catalog') {
        await this.#catalog(parsed.value, catalogUrl, [], 0, got.fetched.cache);
        return;
      } else failure = { url: catalogUrl, via: [], code: 'unknown-document', message: 'not an AI Catalog' };
    } else if (!got.error)
      return; // the run is over (document limit or deadline)
    else failure = got.error;
    if (HOST_FAILURES.has(failure.code)) {
      this.#result.errors.push(failure); // the card is on the same host: reported once
      return;
    }
    // No catalog is the common case, not an error: the card is looked for instead.
    // A 429 stays quiet when its Retry-After could not be honoured (its message says more).
    const quiet = NO_CATALOG.has(failure.code) || /^HTTP 4\d\d\b/.test(failure.message);
    if (!quiet) this.#result.errors.push(failure);
    const card = await this.#get(cardUrl, []);
    if ('error' in card) {
      if (card.error && quiet) {
        card.error.message = `no AI Catalog (${catalogUrl}: ${failure.message}) and no agent card (${card.error.message})`;
      }
      if (card.error) this.#result.errors.push(card.error);
      return;
    }
    this.#seen.add(cardUrl);
    const value = this.#parse(card.fetched, []);
    if (value !== undefined) await this.#card(value, cardUrl, [], undefined, card.fetched.cache);
  }

  async #catalog(
    value: unknown,
    url: string,
    via: string[],
    depth: number,
    cache?: Fetched['cache'],
  ): Promise<void> {
    const { catalog, problems } = validateCatalog(value);
    if (!catalog) {
      const shown = problems.slice(0, 3).map(formatProblem).join('; ');
      const more = problems.length > 3 ? ` (and ${problems.length - 3} more)` : '';
      this.#error(url, via, 'invalid-catalog', `not a valid AI Catalog: ${shown}${more}`);
      return;
    }
    const report: CatalogReport = {
      url,
      via,
      ...(catalog.host ? { host: catalog.host.displayName } : {}),
      entries: { cards: 0, catalogs: 0, other: 0 },
      ...(cache ? { cache } : {}),
    };
    this.#result.catalogs.push(report);
    if (catalog.signature !== undefined) {
      report.signature = await this.#catalogSignature(value, url);
      if (report.signature.status !== 'verified') {
        this.#error(
          url,
          via,
          `catalog-${report.signature.status}`,
          `catalog signature: ${report.signature.message}`,
        );
      }
    }
    const path = [...via, url];
    await Promise.all(
      catalog.entries.map((entry, i) => {
        const at = `${url}#entries[${i}]`;
        if (isAgentCardEntry(entry)) {
          report.entries.cards++;
          return this.#cardEntry(entry, at, url, path);
        }
        if (isCatalogEntry(entry)) {
          report.entries.catalogs++;
          return this.#catalogEntry(entry, at, url, path, depth + 1);
        }
        report.entries.other++;
        return undefined;
      }),
    );
  }

  async #catalogSignature(value: unknown, url: string): Promise<SignatureReport> {
    const result = await verifyCatalog(value, this.#trust.jwks, verifyOptions(this.#trust, url));
    return result.verified
      ? {
          status: 'verified',
          ...(result.kid ? { kid: result.kid } : {}),
          ...(result.identity ? { identity: result.identity } : {}),
          message: `verified: ${signerOf(result)}`,
          results: result.results,
        }
      : notVerified(result.results, 'catalog');
  }

  /** Resolves an entry's url against its catalog's; a bad one is reported against the entry. */
  #entryUrl(entry: CatalogEntry, at: string, base: string, via: string[]): string | undefined {
    try {
      return parseTargetUrl(entry.url!, base).href;
    } catch (err) {
      this.#error(at, via, 'bad-url', err instanceof UserError ? err.message : describeError(err));
      return undefined;
    }
  }

  async #cardEntry(entry: CatalogEntry, at: string, base: string, via: string[]): Promise<void> {
    const origin = entryOrigin(entry);
    const listed = {
      identifier: entry.identifier,
      ...(entry.displayName ? { displayName: entry.displayName } : {}),
      ...(entry.description ? { description: entry.description } : {}),
      ...(entry.tags ? { tags: entry.tags } : {}),
      ...(origin ? { origin } : {}),
    };
    if (entry.data !== undefined)
      return this.#card(entry.data, at, via, listed, undefined, await this.#manifest(entry, undefined, base));
    const url = this.#entryUrl(entry, at, base, via);
    if (!url || this.#seen.has(url)) return;
    this.#seen.add(url);
    const fetched = await this.#fetch(url, via);
    if (!fetched) return;
    const value = this.#parse(fetched, via);
    if (value !== undefined)
      await this.#card(
        value,
        url,
        via,
        listed,
        fetched.cache,
        await this.#manifest(entry, fetched.text, base),
      );
  }

  /** The verdict on an entry's Trust Manifest (signature, identity, subject, digest), if it has one. */
  async #manifest(
    entry: CatalogEntry,
    artifactText: string | undefined,
    catalogUrl: string,
  ): Promise<ManifestReport | undefined> {
    if (!entry.trustManifest) return undefined;
    const v = await verifyTrustManifest(
      entry,
      artifactText,
      this.#trust.jwks,
      verifyOptions(this.#trust, catalogUrl),
    );
    return v.ok
      ? { status: 'verified', identity: v.identity, message: v.message }
      : {
          status: v.invalid ? 'invalid' : 'untrusted',
          identity: entry.trustManifest.identity,
          message: v.message,
        };
  }

  async #catalogEntry(
    entry: CatalogEntry,
    at: string,
    base: string,
    via: string[],
    depth: number,
  ): Promise<void> {
    const target = entry.data !== undefined ? at : this.#entryUrl(entry, at, base, via);
    if (!target) return;
    if (depth > this.#limits.maxDepth) {
      this.#error(
        target,
        via,
        'depth',
        `nested deeper than ${this.#limits.maxDepth} catalogs (--max-depth); not followed`,
      );
      return;
    }
    if (entry.data !== undefined) return this.#catalog(entry.data, at, via, depth);
    const loop = nestingLoop(via, target);
    if (loop) {
      this.#error(target, via, 'loop', `nesting loop: ${loop}`);
      return;
    }
    if (this.#seen.has(target)) return; // reached by another path: read once
    this.#seen.add(target);
    const fetched = await this.#fetch(target, via);
    if (!fetched) return;
    const value = this.#parse(fetched, via);
    if (value !== undefined) await this.#catalog(value, target, via, depth, fetched.cache);
  }

  async #card(
    value: unknown,
    source: string,
    via: string[],
    entry?: CardReport['entry'],
    cache?: Fetched['cache'],
    trustManifest?: ManifestReport,
  ): Promise<void> {
    const problems = cardProblems(value);
    const signature = await checkSignatures(value, source.split('#')[0]!, this.#trust);
    const valid = !problems.some((p) => p.severity === 'error');
    this.#result.cards.push({
      source,
      via,
      ...(entry ? { entry } : {}),
      ...summarize(value),
      problems,
      signature,
      ...(trustManifest ? { trustManifest } : {}),
      // A trust manifest that does not verify is a catalog contradicting what it lists.
      ok: valid && signature.status === 'verified' && (!trustManifest || trustManifest.status === 'verified'),
      ...(cache ? { cache } : {}),
    });
  }
}
