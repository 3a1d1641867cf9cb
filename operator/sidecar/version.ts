/**
 * One served version of the card: the documents of a published ConfigMap (the default audience's
 * and any per-host variants, see audience.ts), checked and turned into ready-to-write bytes and header lists once, so that answering a request never
 * serializes, hashes or formats anything.
 */
import { createHash } from 'node:crypto';
import { isVariantFile } from './audience.ts';
import { checkAgentCard, checkJwks, checkLegacyCard } from './check.ts';

/** ConfigMap keys (files in the mounted directory) and the paths they are served at. */
export const DOCUMENTS = [
  { file: 'agent-card.json', path: '/.well-known/agent-card.json', required: true, check: checkAgentCard },
  { file: 'agent.json', path: '/.well-known/agent.json', required: false, check: checkLegacyCard },
  { file: 'jwks.json', path: '/.well-known/jwks.json', required: false, check: checkJwks },
] as const;
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
  for (const doc of DOCUMENTS) {
    const content = files.get(doc.file);
    if (!content) {
      if (doc.required) return { ok: false, problem: `${doc.file} is missing` };
      continue;
    }
    const parsed = parseFile(doc.file, doc.file, content, doc.check);
    if (!parsed.ok) return parsed;
    if (doc.file === 'agent-card.json') cardVersion = (parsed.value as { version: string }).version;
    documents.set(doc.path, prepareDocument(doc.path, content, maxAge));
  }
  // Other audiences' cards are checked like the default one: one bad variant refuses the version.
  const variants = new Map<string, PreparedDocument>();
  for (const [name, content] of [...files].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (!isVariantFile(name)) continue;
    const doc = DOCUMENTS.find((d) => name.endsWith('.' + d.file))!;
    const parsed = parseFile(name, doc.file, content, doc.check);
    if (!parsed.ok) return parsed;
    variants.set(name, prepareDocument(doc.path, content, maxAge));
  }
  const digest = 'sha256:' + createHash('sha256').update(files.get('agent-card.json')!.bytes).digest('hex');
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
    value = JSON.parse(content.bytes.toString('utf8'));
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

function prepareDocument(route: string, content: FileContent, maxAgeSeconds: number): PreparedDocument {
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
  const headers304 = [...validators, ...CORS_HEADERS, ...COMMON_HEADERS];
  const headers200 = [
    'Content-Type',
    'application/json',
    'Content-Length',
    String(body.length),
    ...headers304,
  ];
  const answers = {
    get: { status: 200, headers: headers200, body, route },
    head: { status: 200, headers: headers200, route },
    notModified: { status: 304, headers: headers304, route },
  };
  return { body, etag, lastModifiedSeconds, headers200, headers304, answers };
}
