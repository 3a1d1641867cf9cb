/**
 * One served version of the card: the documents of a published ConfigMap (the default audience's
 * and any per-host variants, see audience.ts), checked and turned into ready-to-write bytes and header lists once, so that answering a request never
 * serializes, hashes or formats anything.
 */
import { createHash } from 'node:crypto';
import { isVariantFile } from './audience.ts';
import { checkAgentCard, checkCatalog, checkJwks, checkLegacyCard, checkPage } from './check.ts';
import { PAGE_CSP } from '../catalog/page-style.ts';

const JSON_TYPE = 'application/json';
const HTML_TYPE = 'text/html; charset=utf-8';
/** AI Catalog spec, "Media Type" (the same constant as operator/catalog/document.ts, which the sidecar does not load). */
const AI_CATALOG_MEDIA_TYPE = 'application/ai-catalog+json';

/**
 * ConfigMap keys (files in the mounted directory), the paths they are served at and their media
 * types. A card ConfigMap has agent-card.json; a catalog ConfigMap (the catalog server) has
 * ai-catalog.json (AI Catalog spec, "Well-Known URI" and "Media Type") and its page, index.html,
 * served at `/` with a Content-Security-Policy that allows its one inline style and nothing else.
 */
export const DOCUMENTS = [
  { file: 'agent-card.json', path: '/.well-known/agent-card.json', check: checkAgentCard, type: JSON_TYPE },
  { file: 'agent.json', path: '/.well-known/agent.json', check: checkLegacyCard, type: JSON_TYPE },
  { file: 'jwks.json', path: '/.well-known/jwks.json', check: checkJwks, type: JSON_TYPE },
  {
    file: 'ai-catalog.json',
    path: '/.well-known/ai-catalog.json',
    check: checkCatalog,
    type: AI_CATALOG_MEDIA_TYPE,
  },
  { file: 'index.html', path: '/', check: checkPage, type: HTML_TYPE },
] as const;
/** One of these two is required: a version is a card, a catalog, or both. */
const PRIMARY_FILES = ['agent-card.json', 'ai-catalog.json'] as const;

/**
 * Partitions of a large catalog (nested catalogs, operator/catalog/build.ts):
 * `ai-catalog.p<N>.json` at `/.well-known/ai-catalog/p<N>.json`, its page `index.p<N>.html` at
 * `/p<N>.html`.
 */
const PARTITION_FILE = /^(?:ai-catalog\.p(\d{1,3})\.json|index\.p(\d{1,3})\.html)$/;
export const isPartitionFile = (name: string): boolean => PARTITION_FILE.test(name);
/** The URL path of a partition file; undefined for any other name. */
export function partitionPath(name: string): string | undefined {
  const m = PARTITION_FILE.exec(name);
  if (!m) return undefined;
  return m[1] !== undefined ? `/.well-known/ai-catalog/p${Number(m[1])}.json` : `/p${Number(m[2])}.html`;
}
/** Metrics labels of partition paths (bounded cardinality). */
export const PARTITION_ROUTES = {
  json: '/.well-known/ai-catalog/{partition}.json',
  html: '/{partition}.html',
} as const;
export const PARTITION_PATH = /^\/(?:\.well-known\/ai-catalog\/p\d{1,3}\.json|p\d{1,3}\.html)$/;

export const MAX_AGE_FILE = 'cache-max-age-seconds';
/** Same bound as spec.serving.cacheMaxAgeSeconds in the AgentCard resource. */
export const MAX_AGE_LIMIT = 86_400;
/** Public discovery clients cap card responses at 1 MiB; a bigger file is not a card. */
export const MAX_FILE_BYTES = 1024 * 1024;

export interface FileContent {
  bytes: Buffer;
  /** Size on disk (bytes may be left empty for a file too big to be read). */
  size: number;
  mtimeMs: number;
}

/** What was read from the directory: file name -> content (absent files are missing). */
export type FileSet = ReadonlyMap<string, FileContent>;

export interface PreparedDocument {
  body: Buffer;
  /** Strong entity tag (RFC 9110 section 8.8.3), a hash of the bytes. */
  etag: string;
  /** Last-Modified in whole seconds since the epoch (HTTP dates have one-second resolution). */
  lastModifiedSeconds: number;
  /** Flat [name, value, ...] lists for `res.writeHead`, built once per version. */
  headers200: string[];
  headers304: string[];
  /** The answers to GET, HEAD and a revalidation, labelled with the path for metrics. */
  answers: Record<'get' | 'head' | 'notModified', PreparedAnswer>;
}

/** An answer built once, never per request (the shape respond.ts returns). */
export interface PreparedAnswer {
  readonly status: number;
  /** Flat [name, value, ...] list. */
  readonly headers: readonly string[];
  readonly body?: Buffer;
  /** Metrics label: the well-known path, or `other` (bounded cardinality). */
  readonly route: string;
}

export interface CardVersion {
  /** URL path -> document of the default audience. */
  documents: ReadonlyMap<string, PreparedDocument>;
  /** File name (`host.<h>.<file>`, `wildcard.<s>.<file>`) -> document of another audience. */
  variants: ReadonlyMap<string, PreparedDocument>;
  /** `sha256:<hex>` of the agent-card.json bytes, the same form as the AgentCard's status.card.digest. */
  digest: string;
  /** The card's own `version` field. */
  cardVersion: string;
  maxAgeSeconds: number;
}

export type PrepareResult = { ok: true; version: CardVersion } | { ok: false; problem: string };

/** Headers every answer carries, whatever its status. */
export const COMMON_HEADERS = ['X-Content-Type-Options', 'nosniff'] as const;
/** CORS for public discovery from browsers: no credentials are involved, so `*` is safe. */
export const CORS_HEADERS = [
  'Access-Control-Allow-Origin',
  '*',
  'Access-Control-Expose-Headers',
  'ETag, Last-Modified, Cache-Control',
] as const;

/** Checks the files and prepares every document, or names the first problem found. */
export function prepareVersion(files: FileSet, opts: { defaultMaxAgeSeconds: number }): PrepareResult {
  const maxAge = parseMaxAge(files.get(MAX_AGE_FILE), opts.defaultMaxAgeSeconds);
  if (typeof maxAge === 'string') return { ok: false, problem: maxAge };

  const documents = new Map<string, PreparedDocument>();
  let cardVersion = '';
  if (!PRIMARY_FILES.some((f) => files.has(f))) return { ok: false, problem: 'agent-card.json is missing' };
  for (const doc of DOCUMENTS) {
    const content = files.get(doc.file);
    if (!content) continue;
    const parsed = parseFile(doc.file, doc.file, content, doc.check);
    if (!parsed.ok) return parsed;
    if (doc.file === 'agent-card.json') cardVersion = (parsed.value as { version: string }).version;
    documents.set(doc.path, prepareDocument(doc.path, content, maxAge, doc.type));
  }
  const sorted = [...files].sort(([a], [b]) => (a < b ? -1 : 1));
  // Other audiences' cards are checked like the default one: one bad variant refuses the version.
  const variants = new Map<string, PreparedDocument>();
  for (const [name, content] of sorted) {
    if (isVariantFile(name)) {
      const doc = DOCUMENTS.find((d) => name.endsWith('.' + d.file))!;
      const parsed = parseFile(name, doc.file, content, doc.check);
      if (!parsed.ok) return parsed;
      variants.set(name, prepareDocument(doc.path, content, maxAge, doc.type));
      continue;
    }
    const path = partitionPath(name);
    if (path === undefined) continue;
    const json = name.endsWith('.json');
    const parsed = parseFile(
      name,
      json ? 'ai-catalog.json' : 'index.html',
      content,
      json ? checkCatalog : checkPage,
    );
    if (!parsed.ok) return parsed;
    documents.set(
      path,
      prepareDocument(
        json ? PARTITION_ROUTES.json : PARTITION_ROUTES.html,
        content,
        maxAge,
        json ? AI_CATALOG_MEDIA_TYPE : HTML_TYPE,
      ),
    );
  }
  const primary = files.get('agent-card.json') ?? files.get('ai-catalog.json')!;
  const digest = 'sha256:' + createHash('sha256').update(primary.bytes).digest('hex');
  return { ok: true, version: { documents, variants, digest, cardVersion, maxAgeSeconds: maxAge } };
}

/** Parses and checks one file; problems name the file as it is in the directory. */
function parseFile(
  name: string,
  base: string,
  content: FileContent,
  check: (value: unknown) => string | undefined,
): { ok: true; value: unknown } | { ok: false; problem: string } {
  if (content.size > MAX_FILE_BYTES) {
    return { ok: false, problem: `${name} is ${content.size} bytes, over the 1 MiB limit` };
  }
  let value: unknown;
  try {
    // The page is text, checked as it is; every other document is JSON.
    value =
      base === 'index.html' ? content.bytes.toString('utf8') : JSON.parse(content.bytes.toString('utf8'));
  } catch (err) {
    return { ok: false, problem: `${name} is not valid JSON (${(err as Error).message.split('\n', 1)[0]})` };
  }
  const problem = check(value);
  if (problem) return { ok: false, problem: name === base ? problem : problem.replace(base, name) };
  return { ok: true, value };
}

function parseMaxAge(content: FileContent | undefined, fallback: number): number | string {
  if (!content) return fallback;
  const text = content.bytes.toString('utf8').trim();
  const value = Number(text);
  if (!/^\d{1,6}$/.test(text) || value > MAX_AGE_LIMIT) {
    return `${MAX_AGE_FILE} must be an integer from 0 to ${MAX_AGE_LIMIT}, got '${text.slice(0, 20)}'`;
  }
  return value;
}

function prepareDocument(
  route: string,
  content: FileContent,
  maxAgeSeconds: number,
  contentType: string,
): PreparedDocument {
  const body = Buffer.from(content.bytes); // a private copy: the caller's buffer may be reused
  const etag = `"${createHash('sha256').update(body).digest('base64url')}"`;
  const lastModifiedSeconds = Math.floor(content.mtimeMs / 1000);
  const lastModified = new Date(lastModifiedSeconds * 1000).toUTCString();
  // RFC 9110 section 15.4.5: a 304 repeats the validators and caching headers of the 200.
  const validators = [
    'ETag',
    etag,
    'Last-Modified',
    lastModified,
    'Cache-Control',
    `public, max-age=${maxAgeSeconds}`,
  ];
  // The page allows nothing but its own inline style (operator/catalog/page-style.ts).
  const policy =
    contentType === HTML_TYPE ? ['Content-Security-Policy', PAGE_CSP, 'Referrer-Policy', 'no-referrer'] : [];
  const headers304 = [...validators, ...CORS_HEADERS, ...policy, ...COMMON_HEADERS];
  const headers200 = ['Content-Type', contentType, 'Content-Length', String(body.length), ...headers304];
  const answers = {
    get: { status: 200, headers: headers200, body, route },
    head: { status: 200, headers: headers200, route },
    notModified: { status: 304, headers: headers304, route },
  };
  return { body, etag, lastModifiedSeconds, headers200, headers304, answers };
}
