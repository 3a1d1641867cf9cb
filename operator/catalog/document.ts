/**
 * The AI Catalog document (Linux Foundation AI Catalog specification, `specification/ai-catalog.md`
 * of the public Agent-Card/ai-catalog repository): a typed, nestable list of AI artifacts, one of
 * which is the A2A Agent Card. This zod schema is the single source of the catalog's types; the
 * publisher side (catalogs) and the consumer side (`agentcard discover`) both use it.
 *
 * Consumers must ignore members they do not recognise (spec "Version Handling" and
 * "Extensions"), so every object is loose: unknown members pass through untouched (a signature
 * covers them too) and are never an error. What the spec says MUST is checked: `specVersion`
 * "Major.Minor" with a major version this code reads, `entries`, an entry's `identifier`, `type`
 * and exactly one of `url`/`data`, `host.displayName`, a publisher's `identifier` and
 * `displayName`, a Trust Manifest's `identity`, and unique `identifier` (+ `version`) pairs.
 */
import { z } from 'zod';
import { formatPath, problemsFromZod, type PathSegment, type Problem } from '../card/problem.ts';

/** Media type of an AI Catalog document (spec "Media Type"). */
export const AI_CATALOG_MEDIA_TYPE = 'application/ai-catalog+json';
/** Media type of an A2A Agent Card as a catalog entry's `type` (spec "Catalog Entry"). */
export const A2A_AGENT_CARD_MEDIA_TYPE = 'application/a2a-agent-card+json';
/** Where a host serves its catalog (spec "Well-Known URI", RFC 8615). */
export const WELL_KNOWN_CATALOG_PATH = '/.well-known/ai-catalog.json';
/** Where an A2A agent serves its card (A2A spec section 8.2). */
export const WELL_KNOWN_AGENT_CARD_PATH = '/.well-known/agent-card.json';
/** The major `specVersion` this code reads; a higher major is rejected (spec "Consumer Behavior"). */
export const SUPPORTED_MAJOR = 1;
/** Nesting depth the spec recommends as a limit (spec "Nested Catalog Depth and Circular References"). */
export const RECOMMENDED_MAX_DEPTH = 4;

const text = (what: string) => z.string().min(1, 'must not be empty').describe(what);

/** A URL or a reference relative to the catalog's own URL; consumers resolve it when they fetch. */
const urlReference = (what: string) =>
  z
    .string()
    .min(1, 'must not be empty')
    .refine((value) => URL.canParse(value, 'https://catalog.invalid/'), 'must be a URL')
    .describe(what);

const extensions = z
  .record(z.string(), z.json())
  .describe('Custom data keyed by a reverse-DNS name or a URL; unknown keys are ignored.');

const specVersion = z
  .string()
  .regex(/^\d+\.\d+$/, 'must be "Major.Minor", e.g. "1.0"')
  .refine((v) => Number(v.split('.')[0]) === SUPPORTED_MAJOR, {
    error: (issue) =>
      `major version ${String(issue.input).split('.')[0]} is not supported (this tool reads ${SUPPORTED_MAJOR}.x)`,
  })
  .describe('Version of the AI Catalog specification the document conforms to ("Major.Minor").');

export const CatalogHostSchema = z
  .looseObject({
    displayName: text('Human-readable name of the catalog operator.'),
    identifier: z.string().describe('A verifiable identifier of the host (a DID or a domain).').optional(),
    documentationUrl: z.string().describe("URL of the host's documentation.").optional(),
    logoUrl: z.string().describe("URL (or data: URI) of the host's logo.").optional(),
  })
  .describe('The operator of the catalog (spec "Host Info").');

export const PublisherSchema = z
  .looseObject({
    identifier: text('A verifiable identifier of the publishing organisation.'),
    displayName: text('Human-readable name of the publisher.'),
    identityType: z.string().describe('Type hint for the identifier, e.g. "did" or "dns".').optional(),
  })
  .describe('The entity that publishes an artifact (spec "Publisher Object"); advisory unless attested.');

export const TrustSubjectSchema = z
  .looseObject({
    identifier: text("The bound artifact's identifier; equals the entry's."),
    type: text("The bound artifact's media type; equals the entry's."),
    digest: z
      .string()
      .regex(/^[a-z0-9-]+:[0-9a-f]+$/, 'must be "algorithm:lowercase-hex", e.g. "sha256:..."')
      .describe('Digest of the artifact: of the bytes served for `url`, of the JCS form for `data`.'),
    version: z.string().optional(),
    url: z.string().optional(),
  })
  .describe('Binds a signed Trust Manifest to one artifact release (spec "Subject Binding").');

export const TrustManifestSchema = z
  .looseObject({
    identity: text('URI of the subject identity (a DID, SPIFFE ID or URL).'),
    identityType: z.string().optional(),
    subject: TrustSubjectSchema.optional(),
    issuedAt: z.iso.datetime({ offset: true, error: 'must be an RFC 3339 timestamp' }).optional(),
    expiresAt: z.iso.datetime({ offset: true, error: 'must be an RFC 3339 timestamp' }).optional(),
    signature: z
      .string()
      .describe('Detached JWS (compact form) over the JCS form of the manifest.')
      .optional(),
    extensions: extensions.optional(),
  })
  .describe('Identity, attestation and provenance metadata next to an artifact (spec "Trust Manifest").');

export const CatalogEntrySchema = z
  .looseObject({
    identifier: text(
      'Unique id of the artifact, any URI; portable ones are urn:air:{publisher}:{ns}:{name}.',
    ),
    type: text(
      `Media type of the artifact: ${A2A_AGENT_CARD_MEDIA_TYPE} for an A2A card, ${AI_CATALOG_MEDIA_TYPE} for a nested catalog.`,
    ),
    url: urlReference('Where the artifact is served. Exactly one of url and data.').optional(),
    data: z.json().describe('The artifact inline. Exactly one of url and data.').optional(),
    displayName: z.string().describe("Display name; overrides the artifact's own name.").optional(),
    description: z.string().describe("Short description; overrides the artifact's own.").optional(),
    tags: z.array(z.string()).describe('Keywords for filtering.').optional(),
    version: z
      .string()
      .describe('Version of the artifact; required when an identifier is listed twice.')
      .optional(),
    updatedAt: z.iso
      .datetime({ offset: true, error: 'must be an RFC 3339 timestamp' })
      .describe('When the entry last changed (RFC 3339).')
      .optional(),
    publisher: PublisherSchema.optional(),
    extensions: extensions.optional(),
    trustManifest: TrustManifestSchema.optional(),
  })
  .superRefine((entry, ctx) => {
    const set = (['url', 'data'] as const).filter((k) => entry[k] !== undefined);
    if (set.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message:
          set.length === 0
            ? 'exactly one of url, data must be set (none is)'
            : 'exactly one of url, data must be set (found url, data)',
      });
    }
  })
  .describe('One artifact of the catalog (spec "Catalog Entry").');

/** identifier (+ version) is unique within a catalog (spec "Multi-Version Entries"). */
function uniqueEntries(
  entries: readonly { identifier: string; version?: string }[],
  ctx: z.core.$RefinementCtx,
) {
  const seen = new Map<string, number>();
  entries.forEach((entry, i) => {
    const key = JSON.stringify([entry.identifier, entry.version ?? null]);
    const first = seen.get(key);
    if (first === undefined) {
      seen.set(key, i);
      return;
    }
    ctx.addIssue({
      code: 'custom',
      path: [i, 'identifier'],
      message:
        entry.version === undefined
          ? `duplicate identifier "${entry.identifier}" (also entries[${first}]); list versions with "version"`
          : `duplicate identifier "${entry.identifier}" with version "${entry.version}" (also entries[${first}])`,
    });
  });
}

export const AiCatalogSchema = z
  .looseObject({
    specVersion,
    entries: z.array(CatalogEntrySchema).superRefine(uniqueEntries).describe('The artifacts; may be empty.'),
    host: CatalogHostSchema.optional(),
    extensions: extensions.optional(),
    signature: z
      .string()
      .describe('Detached JWS (compact form) over the JCS form of the catalog without `signature`.')
      .optional(),
  })
  .describe('An AI Catalog document (media type application/ai-catalog+json).');

export type AiCatalog = z.infer<typeof AiCatalogSchema>;
export type CatalogEntry = z.infer<typeof CatalogEntrySchema>;
export type CatalogHost = z.infer<typeof CatalogHostSchema>;
export type Publisher = z.infer<typeof PublisherSchema>;
export type TrustManifest = z.infer<typeof TrustManifestSchema>;
export type TrustSubject = z.infer<typeof TrustSubjectSchema>;

/** JSON nesting a document may have: cards and catalogs need far less (inline data included). */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether a parsed JSON value nests deeper than `max` (iteratively: the value may be deep enough
 * to overflow the stack of any recursive walk, which is exactly what this check prevents later).
 */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [item, depth] = stack.pop()!;
    if (!item || typeof item !== 'object') continue;
    if (depth > max) return true;
    for (const child of Array.isArray(item) ? item : Object.values(item)) {
      if (child && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return false;
}

/**
 * Validates a parsed JSON value as an AI Catalog. Problems carry the path of the offending
 * member (`entries[2].url`); the catalog is returned only when there is none.
 */
export function validateCatalog(
  input: unknown,
  prefix: readonly PathSegment[] = [],
): {
  catalog?: AiCatalog;
  problems: Problem[];
} {
  if (!input || typeof input !== 'object' || Array.isArray(input)) {
    return {
      problems: [
        {
          path: formatPath(prefix) || '(root)',
          message: 'an AI Catalog must be a JSON object',
          severity: 'error',
        },
      ],
    };
  }
  if (nestsDeeperThan(input, MAX_JSON_DEPTH)) {
    const path = formatPath(prefix) || '(root)';
    return { problems: [{ path, message: `nests deeper than ${MAX_JSON_DEPTH} levels`, severity: 'error' }] };
  }
  const result = AiCatalogSchema.safeParse(input);
  return result.success
    ? { catalog: result.data, problems: [] }
    : { problems: problemsFromZod(result.error, prefix) };
}

export const isAgentCardEntry = (entry: Pick<CatalogEntry, 'type'>): boolean =>
  mediaTypeOf(entry.type) === A2A_AGENT_CARD_MEDIA_TYPE;
export const isCatalogEntry = (entry: Pick<CatalogEntry, 'type'>): boolean =>
  mediaTypeOf(entry.type) === AI_CATALOG_MEDIA_TYPE;

/** The bare media type: lower case, without parameters (RFC 9110 section 8.3.1). */
export function mediaTypeOf(value: string): string {
  return value.split(';', 1)[0]!.trim().toLowerCase();
}

/**
 * The name to show for an entry (spec "Resolving an Artifact's Display Name"): the entry's
 * displayName, else the artifact's own name when it is at hand, else the identifier's last
 * `:` or `/` segment.
 */
export function entryDisplayName(
  entry: Pick<CatalogEntry, 'identifier' | 'displayName'>,
  artifactName?: string,
): string {
  if (entry.displayName) return entry.displayName;
  if (artifactName) return artifactName;
  const segments = entry.identifier.split(/[:/]/).filter(Boolean);
  return segments.at(-1) ?? entry.identifier;
}
