/**
 * The AgentCatalog (namespaced) and ClusterAgentCatalog (cluster-scoped) custom resources
 * (agentcard.dev/v1alpha1), modelled on cert-manager's Issuer and ClusterIssuer: zod schemas of
 * their spec and status, the source of the CRDs (crd.ts) and of the catalog controller's types.
 *
 * The namespaced kind has no `namespaceSelector`: the schema is strict, so an AgentCatalog that
 * tries to reach across namespaces is refused by the API server (unknown field, strict field
 * validation) and by the controller (Accepted=False) instead of being quietly widened.
 */
import { CATALOG_REASONS_BY_TYPE, reasonsDescription } from '../api/reasons.ts';
import { z } from 'zod';
import {
  ConditionSchema,
  publishedSignaturesSchema,
  ServingSchema,
  SigningSchema,
} from '../card/resource.ts';
import { API_VERSION, CATALOG_KIND, CLUSTER_CATALOG_KIND } from '../api/names.ts';
import { parseIdentityPattern } from '../card/x5c.ts';

// ---------------------------------------------------------------------------------------------
// Label selectors (metav1.LabelSelector; the same semantics as a Deployment's selector).

export const LabelSelectorRequirementSchema = z
  .strictObject({
    key: z.string().min(1).max(317).describe('The label key the selector applies to.'),
    operator: z
      .enum(['In', 'NotIn', 'Exists', 'DoesNotExist'])
      .describe('In, NotIn, Exists or DoesNotExist.'),
    values: z
      .array(z.string().max(63))
      .max(64)
      .describe('Values for In and NotIn (non-empty); empty for Exists and DoesNotExist.')
      .optional(),
  })
  .superRefine((r, ctx) => {
    const needsValues = r.operator === 'In' || r.operator === 'NotIn';
    const has = (r.values?.length ?? 0) > 0;
    if (needsValues !== has) {
      ctx.addIssue({
        code: 'custom',
        path: ['values'],
        message: needsValues ? `must not be empty for ${r.operator}` : `must be empty for ${r.operator}`,
      });
    }
  })
  .describe('A label selector requirement.');

export const LabelSelectorSchema = z
  .strictObject({
    matchLabels: z
      .record(z.string(), z.string().max(63))
      .describe('Labels that must all be present with these values.')
      .optional(),
    matchExpressions: z
      .array(LabelSelectorRequirementSchema)
      .max(32)
      .describe('Requirements that must all hold.')
      .optional(),
  })
  .describe('A label selector (metav1.LabelSelector); empty or absent selects everything.');

// ---------------------------------------------------------------------------------------------
// spec

// RE2 (the API server's regex engine) has no look-ahead: the length is checked by max(253).
const DOMAIN = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*$/;

export const CatalogHostInfoSchema = z
  .strictObject({
    displayName: z.string().min(1).max(256).describe('Human-readable name of whoever runs the catalog.'),
    identifier: z
      .string()
      .max(2048)
      .describe('A verifiable identifier of the host (a DID or a domain).')
      .optional(),
    documentationUrl: z
      .string()
      .max(2048)
      .regex(/^https?:\/\/\S+$/, 'must be an http(s) URL')
      .describe("URL of the host's documentation.")
      .optional(),
    logoUrl: z
      .string()
      .max(2048)
      .regex(/^https?:\/\/\S+$/, 'must be an http(s) URL')
      .describe("URL of the host's logo.")
      .optional(),
  })
  .describe('The catalog\'s "host" member (AI Catalog spec, Host Info).');

export const CatalogIncludeSchema = z
  .strictObject({
    url: z
      .string()
      .max(2048)
      .regex(/^https?:\/\/\S+$/, 'must be an http(s) URL')
      .describe("URL of another AI Catalog (for example another cluster's /.well-known/ai-catalog.json)."),
    identifier: z
      .string()
      .min(1)
      .max(2048)
      .describe('Identifier of the nested entry (default: the url).')
      .optional(),
    displayName: z.string().max(256).describe('Display name of the nested entry.').optional(),
    description: z.string().max(2048).describe('Description of the nested entry.').optional(),
  })
  .describe('Another catalog, listed as a nested entry (type application/ai-catalog+json).');

const ConfigMapKeySchema = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .max(253)
      .regex(DOMAIN, 'must be a ConfigMap name (lower-case DNS subdomain)')
      .describe('Name of the ConfigMap, in the namespace the catalog publishes to.'),
    key: z
      .string()
      .min(1)
      .max(253)
      .regex(/^[-._a-zA-Z0-9]+$/, 'must be a ConfigMap data key')
      .describe('Data key holding the document.'),
  })
  .describe('A key of a ConfigMap in the namespace the catalog publishes to.');

export const CatalogTrustSchema = z
  .strictObject({
    trustBundle: z
      .strictObject({ configMap: ConfigMapKeySchema })
      .describe(
        'CA certificates (PEM), for example a trust-manager Bundle target: a card signature whose x5c certificate chain leads to one of them, with a leaf allowing digitalSignature and an identity in spec.trust.identities, verifies.',
      )
      .optional(),
    identities: z
      .array(
        z
          .string()
          .min(1)
          .max(2048)
          .superRefine((pattern, ctx) => {
            try {
              parseIdentityPattern(pattern);
            } catch (err) {
              ctx.addIssue({ code: 'custom', message: (err as Error).message });
            }
          }),
      )
      .max(64)
      .describe(
        "Signer identities trusted with the trust bundle: the leaf certificate's URI SAN (a SPIFFE ID), exact or ending in /* for every identity below that path.",
      )
      .optional(),
    jwks: z
      .strictObject({ configMap: ConfigMapKeySchema })
      .describe(
        'Trusted public keys (a JWKS, or one JWK): a card signature by one of them (by kid) verifies.',
      )
      .optional(),
  })
  .superRefine((t, ctx) => {
    if (!t.trustBundle && !t.jwks)
      ctx.addIssue({ code: 'custom', message: 'give trustBundle (with identities), jwks, or both' });
    if (t.trustBundle && !t.identities?.length)
      ctx.addIssue({
        code: 'custom',
        path: ['identities'],
        message: 'trustBundle needs at least one identity',
      });
    if (!t.trustBundle && t.identities?.length)
      ctx.addIssue({ code: 'custom', path: ['identities'], message: 'identities need a trustBundle' });
  })
  .describe(
    "Require every listed card to verify against this trust policy: a card whose published signatures do not verify is left out (status.unverified, status.skipped), and the catalog's page shows who signed each card.",
  );

const importsSelector = LabelSelectorSchema.describe(
  'Labels of the CatalogImports whose verified entries are listed; empty selects every one in reach.',
);

export const AgentCatalogImportsSchema = z
  .strictObject({ selector: importsSelector })
  .describe(
    "List the verified entries of the CatalogImports of this namespace that the selector selects, next to this namespace's AgentCards (docs/federation.md). Absent: none.",
  );

export const ClusterAgentCatalogImportsSchema = z
  .strictObject({
    selector: importsSelector,
    namespaceSelector: LabelSelectorSchema.describe(
      'Labels of the namespaces whose CatalogImports are listed; absent or empty selects every namespace.',
    ).optional(),
  })
  .describe(
    'List the verified entries of the CatalogImports that the selectors select, next to the AgentCards (docs/federation.md). Absent: none.',
  );

const catalogSpecShape = {
  selector: LabelSelectorSchema.describe(
    'Labels of the AgentCards to list; absent or empty lists every AgentCard in scope.',
  ).optional(),
  audience: z
    .string()
    .min(1)
    .max(63)
    .describe(
      "Which audience's card each entry points at (an AgentCard's spec.audiences[].name); absent: the default audience.",
    )
    .optional(),
  requireReady: z
    .boolean()
    .default(true)
    .describe('List only AgentCards whose Ready condition is True (default true).'),
  entries: z
    .enum(['url', 'inline'])
    .default('url')
    .describe(
      '"url": each entry points at the served card (default); "inline": the signed card is the entry\'s data.',
    ),
  host: CatalogHostInfoSchema.optional(),
  publisher: z
    .string()
    .max(253)
    .regex(DOMAIN, 'must be a lower-case DNS domain, e.g. "example.com"')
    .default('cluster.local')
    .describe(
      'Domain in the entries\' identifiers, urn:air:{publisher}:{namespace}:{name} (default "cluster.local").',
    ),
  include: z
    .array(CatalogIncludeSchema)
    .max(64)
    .describe('Other catalogs, listed as nested entries (how discovery spans clusters).')
    .optional(),
  signing: SigningSchema.describe(
    'Signing of the catalog (a detached JWS over its RFC 8785 form without "signature"); the first key signs, every key is published in jwks.json. Absent: unsigned.',
  ).optional(),
  serving: ServingSchema.optional(),
  trust: CatalogTrustSchema.optional(),
};

function uniqueIncludes(
  spec: { include?: Array<{ url: string; identifier?: string }> },
  ctx: z.core.$RefinementCtx,
) {
  const seen = new Set<string>();
  spec.include?.forEach((inc, i) => {
    const id = inc.identifier ?? inc.url;
    if (seen.has(id)) {
      ctx.addIssue({ code: 'custom', path: ['include', i], message: `duplicate nested catalog "${id}"` });
    }
    seen.add(id);
  });
}

export const AgentCatalogSpecSchema = z
  .strictObject({ ...catalogSpecShape, imports: AgentCatalogImportsSchema.optional() })
  .superRefine(uniqueIncludes)
  .describe('Which AgentCards of this namespace the catalog lists, and how it is signed and served.');

export const ClusterAgentCatalogSpecSchema = z
  .strictObject({
    ...catalogSpecShape,
    namespaceSelector: LabelSelectorSchema.describe(
      'Labels of the namespaces whose AgentCards are listed; absent or empty selects every namespace.',
    ).optional(),
    imports: ClusterAgentCatalogImportsSchema.optional(),
  })
  .superRefine(uniqueIncludes)
  .describe('Which AgentCards of which namespaces the catalog lists, and how it is signed and served.');

// ---------------------------------------------------------------------------------------------
// status

export const CATALOG_CONDITION_TYPES = ['Accepted', 'Signed', 'Published', 'Ready'] as const;

export const CatalogStatusSchema = z
  .strictObject({
    observedGeneration: z.int().min(0).describe('The .metadata.generation last reconciled.').optional(),
    conditions: z
      .array(ConditionSchema)
      .max(16)
      .describe(
        // Reasons stay free-form in the schema (no enum): see operator/api/reasons.ts for why.
        `Conditions: ${CATALOG_CONDITION_TYPES.join(', ')}. Reasons by type: ${reasonsDescription(CATALOG_REASONS_BY_TYPE)}; Ready otherwise copies the reason of the condition that blocks it.`,
      )
      .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] })
      .optional(),
    entries: z
      .int()
      .min(0)
      .describe('Agents listed, imported ones included (nested catalogs not counted).')
      .optional(),
    imported: z
      .int()
      .min(0)
      .describe('Entries listed from CatalogImports (spec.imports), counted in entries too.')
      .optional(),
    nested: z.int().min(0).describe('Nested catalogs listed: spec.include and partitions.').optional(),
    digest: z
      .string()
      .regex(/^sha256:[0-9a-f]{64}$/)
      .describe('"sha256:<hex>" of the served ai-catalog.json bytes.')
      .optional(),
    bytes: z
      .int()
      .min(0)
      .describe('Bytes of every published catalog document together (root and partitions).')
      .optional(),
    partitions: z
      .int()
      .min(0)
      .describe('Partitions (nested catalogs) the entries are split into; 0: none.')
      .optional(),
    configMap: z.string().describe('Name of the ConfigMap holding ai-catalog.json.').optional(),
    namespace: z.string().describe('Namespace of that ConfigMap.').optional(),
    skipped: z
      .array(z.string())
      .max(20)
      .describe(
        'Selected AgentCards left out, with why (not Ready, no card for the audience...), at most 20.',
      )
      .optional(),
    unverified: z
      .int()
      .min(0)
      .describe('Selected AgentCards left out because their card does not verify against spec.trust.')
      .optional(),
    signatures: publishedSignaturesSchema('catalog', 'Signatures of the published catalog.'),
  })
  .describe('The observed state of the catalog.');

const metadata = z.looseObject({ name: z.string().min(1), namespace: z.string().optional() });

export const AgentCatalogResourceSchema = z.strictObject({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(CATALOG_KIND),
  metadata,
  spec: AgentCatalogSpecSchema,
  status: CatalogStatusSchema.optional(),
});

export const ClusterAgentCatalogResourceSchema = z.strictObject({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(CLUSTER_CATALOG_KIND),
  metadata,
  spec: ClusterAgentCatalogSpecSchema,
  status: CatalogStatusSchema.optional(),
});

export type LabelSelector = z.infer<typeof LabelSelectorSchema>;
export type AgentCatalogSpec = z.infer<typeof AgentCatalogSpecSchema>;
export type ClusterAgentCatalogSpec = z.infer<typeof ClusterAgentCatalogSpecSchema>;
/** Either kind's spec: the cluster kind's, with namespaceSelector absent for the namespaced kind. */
export type CatalogSpec = ClusterAgentCatalogSpec;
export type CatalogInclude = z.infer<typeof CatalogIncludeSchema>;
export type CatalogHostInfo = z.infer<typeof CatalogHostInfoSchema>;
export type CatalogStatus = z.infer<typeof CatalogStatusSchema>;
export type CatalogTrust = z.infer<typeof CatalogTrustSchema>;
