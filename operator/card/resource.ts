/**
 * The AgentCard custom resource (agentcard.dev/v1alpha1): zod schemas of its spec and status,
 * the source of the CRD's OpenAPI schema (gen-crd.ts) and of the controller's types.
 */
import { z } from 'zod';
import { UserError } from '../errors.ts';
import { agentCardInputShape } from './schema.ts';
import { API_VERSION, KIND } from '../api/names.ts';

export const SIGNING_ALGS = ['ES256', 'ES384', 'EdDSA', 'RS256', 'PS256'] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];

// ---------------------------------------------------------------------------------------------
// Durations ("60s", "5m", "1h30m", "250ms"): the Go duration syntax, which CEL's duration() reads.

const DURATION_PATTERN = /^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses a duration like "60s", "5m", "1h30m" or "250ms" into milliseconds. */
export function parseDuration(text: string): number {
  if (typeof text !== 'string' || !DURATION_PATTERN.test(text)) {
    throw new UserError(
      `invalid duration "${String(text).slice(0, 40)}" (expected e.g. "60s", "5m", "1h30m")`,
    );
  }
  let ms = 0;
  for (const [, amount, , unit] of text.matchAll(/([0-9]+(\.[0-9]+)?)(ms|s|m|h)/g)) {
    ms += Number(amount) * UNIT_MS[unit!]!;
  }
  return Math.round(ms);
}

const duration = (what: string, opts: { min?: string; default: string }) => {
  let schema = z
    .string()
    .max(32)
    .regex(DURATION_PATTERN, 'must be a duration such as "60s", "5m" or "1h30m"')
    .describe(`${what} A duration such as "60s", "5m" or "1h30m" (default "${opts.default}").`);
  if (opts.min) {
    const min = opts.min;
    schema = schema
      .refine((v) => !DURATION_PATTERN.test(v) || parseDuration(v) >= parseDuration(min), {
        message: `must be at least ${min}`,
      })
      .meta({
        'x-kubernetes-validations': [
          { rule: `duration(self) >= duration('${min}')`, message: `must be at least ${min}` },
        ],
      });
  }
  return schema.default(opts.default);
};

// ---------------------------------------------------------------------------------------------
// spec

const SecretKeySelectorSchema = z
  .strictObject({
    name: z.string().min(1).describe('Name of a Secret in the namespace of the AgentCard.'),
    key: z.string().min(1).describe("Key of the entry in the Secret's data."),
  })
  .describe('A key of a Secret in the same namespace.');

export const SigningKeyRefSchema = z
  .strictObject({
    secretRef: SecretKeySelectorSchema.describe(
      'The Secret entry holding the private key: a private JWK (JSON) or a PKCS#8 PEM.',
    ),
    kid: z
      .string()
      .min(1)
      .describe(
        'Key id put in the JWS header and the JWKS. Default: the JWK "kid", else its RFC 7638 thumbprint.',
      )
      .optional(),
    alg: z
      .enum(SIGNING_ALGS)
      .describe(
        'JWS algorithm. Default: from the key type (P-256: ES256, P-384: ES384, Ed25519: EdDSA, RSA: RS256).',
      )
      .optional(),
  })
  .describe('A signing key; each key adds one signature, in order.');

export const SigningSchema = z
  .strictObject({
    keys: z
      .array(SigningKeyRefSchema)
      .min(1)
      .max(8)
      .describe('Signing keys, in order; several keys sign the card several times (key rotation).'),
    jku: z
      .string()
      .max(2048)
      .regex(/^https:[^\s]+$/, 'must be an https URL')
      .describe(
        'Optional https URL of the JWKS with the public keys, put in each JWS protected header as "jku".',
      )
      .optional(),
  })
  .describe('Signing of the card (JCS + detached JWS, A2A spec section 8.4). Absent: the card is unsigned.');

export const ServingSchema = z
  .strictObject({
    cacheMaxAgeSeconds: z
      .int()
      .min(0)
      .max(86400)
      .default(300)
      .describe('Cache-Control max-age of the served card, in seconds (default 300).'),
  })
  // Routing /.well-known/ to the sidecar is the user's Ingress or HTTPRoute (README, "Routing
  // `/.well-known/` to the sidecar"); the operator does not manage routes.
  .describe('How the card is served by the sidecar.');

export const ProbeCredentialSchema = z
  .strictObject({
    url: z
      .string()
      .min(1)
      .describe('The interface url (as in spec.card.supportedInterfaces) these credentials are for.'),
    secretRef: SecretKeySelectorSchema.describe('The Secret entry holding the token or API key.'),
    type: z
      .enum(['bearer', 'apiKey'])
      .describe('"bearer": Authorization: Bearer <token>; "apiKey": a header.'),
    headerName: z.string().min(1).describe('Header for type apiKey (default "X-API-Key").').optional(),
  })
  .describe('Credentials sent when probing one interface.');

export const ProbeSchema = z
  .strictObject({
    enabled: z.boolean().default(true).describe('Whether the interfaces are probed (default true).'),
    interval: duration('Time between probes of an interface.', { min: '10s', default: '60s' }),
    timeout: duration('Timeout of one probe.', { default: '5s' }),
    credentials: z
      .array(ProbeCredentialSchema)
      .max(32)
      .describe('Credentials for interfaces that require authentication.')
      .optional(),
  })
  .describe('Probing: a real A2A call per interface proves that it speaks the declared binding.');

export const SpecCardSchema = z
  .strictObject(agentCardInputShape)
  .describe(
    'The A2A 1.0 AgentCard, field for field in its JSON (camelCase) shape, without signatures (the operator adds them).',
  );

export const AgentCardSpecSchema = z
  .strictObject({
    card: SpecCardSchema,
    signing: SigningSchema.optional(),
    serving: ServingSchema.optional(),
    probe: ProbeSchema.optional(),
  })
  .superRefine((spec, ctx) => {
    // Cross-field checks (kept out of CEL: comparing URL lists is costly to estimate).
    const urls = new Set(spec.card.supportedInterfaces.map((i) => i.url));
    spec.probe?.credentials?.forEach((c, i) => {
      if (!urls.has(c.url)) {
        ctx.addIssue({
          code: 'custom',
          path: ['probe', 'credentials', i, 'url'],
          message: 'not the url of an interface in card.supportedInterfaces',
        });
      }
    });
    const kids = new Set<string>();
    spec.signing?.keys.forEach((k, i) => {
      if (k.kid !== undefined && kids.has(k.kid)) {
        ctx.addIssue({
          code: 'custom',
          path: ['signing', 'keys', i, 'kid'],
          message: `duplicate kid "${k.kid}"`,
        });
      }
      if (k.kid !== undefined) kids.add(k.kid);
    });
  })
  .describe('The desired Agent Card and how it is signed, served and probed.');

// ---------------------------------------------------------------------------------------------
// status

const time = (what: string) => z.iso.datetime({ offset: true }).describe(`${what} (RFC 3339).`);

export const CONDITION_TYPES = ['Accepted', 'Signed', 'Published', 'InterfacesReachable', 'Ready'] as const;

export const ConditionSchema = z
  .strictObject({
    type: z
      .string()
      .min(1)
      .max(316)
      .describe(`Condition type: ${CONDITION_TYPES.join(', ')}.`),
    status: z.enum(['True', 'False', 'Unknown']).describe('Status of the condition: True, False or Unknown.'),
    observedGeneration: z
      .int()
      .min(0)
      .describe('The .metadata.generation the condition was set for.')
      .optional(),
    reason: z
      .string()
      .min(1)
      .max(1024)
      .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/, 'must be CamelCase')
      .describe('Machine-readable reason, CamelCase.'),
    message: z.string().max(32768).describe('Human-readable message.'),
    lastTransitionTime: time('When the status last changed'),
  })
  .describe('A metav1.Condition.');

export const AgentCardStatusSchema = z
  .strictObject({
    observedGeneration: z.int().min(0).describe('The .metadata.generation last reconciled.').optional(),
    conditions: z
      .array(ConditionSchema)
      .max(16)
      .describe(`Conditions: ${CONDITION_TYPES.join(', ')}.`)
      .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] })
      .optional(),
    card: z
      .strictObject({
        digest: z
          .string()
          .regex(/^sha256:[0-9a-f]{64}$/)
          .describe('"sha256:<hex>" of the served agent-card.json bytes.'),
        bytes: z.int().min(0).describe('Size of the served agent-card.json, in bytes.'),
        version: z.string().describe('The card version published.'),
        configMap: z.string().describe('Name of the ConfigMap holding the published card.'),
      })
      .describe('The published card.')
      .optional(),
    signatures: z
      .array(
        z
          .strictObject({
            kid: z.string().describe('Key id of the signature.'),
            alg: z.string().describe('JWS algorithm of the signature.'),
          })
          .describe('A signature of the published card.'),
      )
      .describe('Signatures of the published card, in order.')
      .optional(),
    interfaces: z
      .array(
        z
          .strictObject({
            url: z.string().describe('Interface URL.'),
            protocolBinding: z.string().describe('Declared protocol binding.'),
            protocolVersion: z.string().describe('Declared protocol version.'),
            reachable: z
              .boolean()
              .describe('Whether the last probe proved the declared binding and version.'),
            reason: z
              .string()
              .describe(
                'Probe verdict: Reachable, BindingMismatch, VersionMismatch, Unauthenticated, DNSFailed, ConnectionFailed, TLSError, Timeout, HTTPError, Blocked or Unsupported.',
              ),
            message: z.string().describe('Human-readable probe result.'),
            latencyMs: z.number().min(0).describe('Duration of the last probe, in milliseconds.'),
            tlsNotAfter: time("Expiry of the interface's TLS certificate").optional(),
            lastProbeTime: time('When the interface was last probed'),
            lastTransitionTime: time('When reachable last changed'),
          })
          .describe('Probe result of one interface.'),
      )
      .describe('Probe results, one per interface of the card.')
      .optional(),
    reachableInterfaces: z.string().describe('"reachable/total", e.g. "2/3".').optional(),
    serving: z
      .strictObject({
        podsRequesting: z
          .int()
          .min(0)
          .describe('Pods that ask for this card (annotation agentcard.dev/inject).'),
        podsMissingSidecar: z.int().min(0).describe('Of those, pods without the serving sidecar.'),
        missing: z.array(z.string()).max(20).describe('Names of pods without the sidecar (at most 20).'),
      })
      .describe('Pods serving the card.')
      .optional(),
  })
  .describe('The observed state of the AgentCard.');

export const AgentCardResourceSchema = z.strictObject({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(KIND),
  metadata: z.looseObject({
    name: z.string().min(1),
    namespace: z.string().optional(),
  }),
  spec: AgentCardSpecSchema,
  status: AgentCardStatusSchema.optional(),
});

export type AgentCardSpec = z.infer<typeof AgentCardSpecSchema>;
export type SpecCard = z.infer<typeof SpecCardSchema>;
export type SigningKeyRef = z.infer<typeof SigningKeyRefSchema>;
export type Serving = z.infer<typeof ServingSchema>;
export type Probe = z.infer<typeof ProbeSchema>;
export type ProbeCredential = z.infer<typeof ProbeCredentialSchema>;
export type Condition = z.infer<typeof ConditionSchema>;
export type AgentCardStatus = z.infer<typeof AgentCardStatusSchema>;
export type AgentCardResource = z.infer<typeof AgentCardResourceSchema>;
