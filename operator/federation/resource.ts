/**
 * The CatalogImport resource (agentcard.dev/v1alpha1, namespaced): another cluster's signed AI
 * Catalog, imported into this namespace. The operator fetches it with the defences of adoption
 * (the address policy, no redirects, size and time limits, ETag), follows its nested catalogs
 * within `maxDepth`, and keeps only the cards that verify against `trust`, in ConfigMaps the
 * import owns (store.ts), which local catalogs list. zod schemas of its spec and status: the
 * source of the CRD (crd.ts), the API reference (reference.ts) and the controller's types.
 */
import { z } from 'zod';
import { API_VERSION, IMPORT_KIND } from '../api/names.ts';
import { IMPORT_REASONS_BY_TYPE, IMPORT_REFUSAL_REASONS, reasonsDescription } from '../api/reasons.ts';
import { RECOMMENDED_MAX_DEPTH } from '../catalog/document.ts';
import { CatalogTrustSchema } from '../catalog/resource.ts';
import { ConditionSchema, duration } from '../card/resource.ts';

/** What a remote catalog's own signature must be (spec.catalogSignature). */
export const CATALOG_SIGNATURE_POLICIES = ['Required', 'IfPresent', 'Ignore'] as const;
export type CatalogSignaturePolicy = (typeof CATALOG_SIGNATURE_POLICIES)[number];

/** The deepest nesting an import may follow: the spec's recommended 4, and a little room. */
export const MAX_IMPORT_DEPTH = 8;

export const CatalogImportSpecSchema = z
  .strictObject({
    url: z
      .string()
      .max(2048)
      .regex(/^https:\/\/\S+$/, 'must be an https URL')
      .refine((v) => URL.canParse(v), 'must be a URL')
      .describe(
        "The remote AI Catalog, for example another cluster's https://<host>/.well-known/ai-catalog.json. Fetched under the operator's address policy (Helm value probes.allowCidrs), with no redirects and size and time limits.",
      ),
    origin: z
      .string()
      .min(1)
      .max(256)
      .describe(
        "Display name of the origin (the other cluster) shown next to each imported entry; default: the remote catalog's host.displayName, else the URL's host.",
      )
      .optional(),
    trust: CatalogTrustSchema.describe(
      'Which card signatures are imported: a card is imported only when one of its signatures verifies against this trust policy (a certificate chain to the trust bundle with an identity in identities, or a key of the JWKS). Anything else is refused and counted in status.refused.',
    ),
    catalogSignature: z
      .enum(CATALOG_SIGNATURE_POLICIES)
      .default('IfPresent')
      .describe(
        'What the remote catalog\'s own signature must be, checked against spec.trust: "Required" (an unsigned catalog is refused), "IfPresent" (a signature, when there is one, must verify; default), "Ignore" (not checked; every card is verified all the same).',
      ),
    interval: duration('Time between fetches of the remote catalog.', { min: '30s', default: '5m' }),
    maxStaleness: duration(
      'How long the last verified entries are kept while the origin cannot be fetched or verified, from the last success; after that they are dropped (status.refused Stale).',
      { min: '1m', default: '1h' },
    ),
    maxDepth: z
      .int()
      .min(0)
      .max(MAX_IMPORT_DEPTH)
      .default(RECOMMENDED_MAX_DEPTH)
      .describe(
        `Nested catalogs followed below the remote catalog (default ${RECOMMENDED_MAX_DEPTH}, the AI Catalog specification's recommendation); deeper ones are not followed.`,
      ),
  })
  .describe('Which remote catalog is imported, and which of its cards are trusted.');

const time = (what: string) => z.iso.datetime({ offset: true }).describe(`${what} (RFC 3339).`);

export const IMPORT_CONDITION_TYPES = ['Accepted', 'Fetched', 'Ready'] as const;

/** The most refused entries status.refusedEntries names. */
export const MAX_REFUSED_SHOWN = 20;

export const CatalogImportStatusSchema = z
  .strictObject({
    observedGeneration: z.int().min(0).describe('The .metadata.generation last reconciled.').optional(),
    conditions: z
      .array(ConditionSchema)
      .max(16)
      .describe(
        `Conditions: ${IMPORT_CONDITION_TYPES.join(', ')}. Reasons by type: ${reasonsDescription(IMPORT_REASONS_BY_TYPE)}; Ready otherwise copies the reason of the condition that blocks it.`,
      )
      .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] })
      .optional(),
    origin: z.string().describe('The origin name shown next to the imported entries.').optional(),
    imported: z
      .int()
      .min(0)
      .describe('Entries imported: verified A2A cards stored for local catalogs (stale ones included).')
      .optional(),
    stale: z
      .int()
      .min(0)
      .describe(
        'Imported entries kept from an earlier fetch because the last one failed (origin down, catalog refused); dropped spec.maxStaleness after the last success.',
      )
      .optional(),
    refused: z
      .partialRecord(z.enum(IMPORT_REFUSAL_REASONS), z.int().min(0))
      .describe(`Entries not imported, by reason: ${IMPORT_REFUSAL_REASONS.join(', ')}.`)
      .optional(),
    refusedEntries: z
      .array(z.string().max(1024))
      .max(MAX_REFUSED_SHOWN)
      .describe(`The first ${MAX_REFUSED_SHOWN} entries not imported, with why.`)
      .optional(),
    catalogs: z
      .int()
      .min(0)
      .describe('Catalog documents read: the remote catalog and its nested catalogs.')
      .optional(),
    digest: z
      .string()
      .regex(/^sha256:[0-9a-f]{64}$/)
      .describe('"sha256:<hex>" of the remote catalog\'s bytes, as last fetched.')
      .optional(),
    configMaps: z
      .int()
      .min(0)
      .describe('ConfigMaps holding the imported entries (labelled agentcard.dev/catalog-import).')
      .optional(),
    lastFetchTime: time(
      'When the remote catalog was last fetched. Status is written only when something changes (an unchanged import writes nothing), and otherwise about every spec.maxStaleness / 2',
    ).optional(),
    lastSuccessTime: time(
      'When the remote catalog was last fetched and verified; the staleness of kept entries counts from it. Written as lastFetchTime is',
    ).optional(),
  })
  .describe('The observed state of the import.');

const metadata = z.looseObject({ name: z.string().min(1), namespace: z.string().optional() });

export const CatalogImportResourceSchema = z.strictObject({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(IMPORT_KIND),
  metadata,
  spec: CatalogImportSpecSchema,
  status: CatalogImportStatusSchema.optional(),
});

export type CatalogImportSpec = z.infer<typeof CatalogImportSpecSchema>;
export type CatalogImportStatus = z.infer<typeof CatalogImportStatusSchema>;
export type CatalogImportResource = z.infer<typeof CatalogImportResourceSchema>;
