/**
 * The AgentCard custom resource (agentcard.dev/v1alpha1): zod schemas of its spec and status,
 * the source of the CRD's OpenAPI schema (build/gen-crd.ts) and of the controller's types.
 */
import { CARD_REASONS_BY_TYPE, reasonsDescription } from '../api/reasons.ts';
import { PROBE_REASONS } from '../probe/types.ts';
import { z } from 'zod';
import { UserError } from '../errors.ts';
import { allInterfaceUrls, DEFAULT_AUDIENCE } from './audience.ts';
import { agentCardInputShape, agentCardShape } from './schema.ts';
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
  // Routing /.well-known/ to the sidecar is the user's Ingress or HTTPRoute (docs/operations.md,
  // "Routing `/.well-known/` to the sidecar"); the operator does not manage routes.
  .describe('How the card is served by the sidecar.');

export const ProbeCredentialSchema = z
  .strictObject({
    url: z
      .string()
      .min(1)
      .describe(
        'The interface url (of spec.card.supportedInterfaces or of an audience) these credentials are for.',
      ),
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

// ---------------------------------------------------------------------------------------------
// Audiences: one AgentCard, a card per kind of client (in-cluster by Service DNS, public through
// an Ingress or Gateway host). Each audience's card is rendered and signed in advance; the
// sidecar picks it by the request's Host, so no proxy rewrites (and breaks) a signed card.

/**
 * Bounds that keep the audiences' CEL rules cheap to estimate. A host is at most 230 characters
 * so that its ConfigMap keys (`host.<host>.agent-card.json`, `wildcard.<suffix>.agent-card.json`)
 * stay within the 253 characters of a key.
 */
export const AUDIENCE_LIMITS = { audiences: 8, hosts: 16, hostLength: 230 } as const;

const DNS_LABEL = '[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?';
/** A host name (any case) or `*.` and a host name; no scheme, port, path or trailing dot. */
export const HOST_PATTERN = `^([*][.])?${DNS_LABEL}([.]${DNS_LABEL})*$`;
const HOST_MESSAGE =
  'must be a host name such as agents.example.com, or *.example.com for any one label in front; no scheme, port, path or trailing dot';

const HostSchema = z
  .string()
  .min(1)
  .max(AUDIENCE_LIMITS.hostLength)
  // refine, not regex: the CEL rule below gives the API server's error its message (a bare
  // OpenAPI pattern would only quote the regular expression).
  .refine((h) => new RegExp(HOST_PATTERN).test(h), HOST_MESSAGE)
  .describe(
    'A host name clients use to reach the agent, e.g. "support.example.com", or "*.example.com" for exactly one more leading label. Compared case-insensitively; the request\'s port is ignored.',
  )
  .meta({ 'x-kubernetes-validations': [{ rule: `self.matches('${HOST_PATTERN}')`, message: HOST_MESSAGE }] });

const BASE_URL_PATTERN = '^https?://[^/?#@\\s]+(/[^?#\\s]*)?$';

export const AudienceSchema = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .max(63)
      .refine(
        (n) => /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(n),
        'must be a DNS label (lowercase letters, digits, "-")',
      )
      .refine((n) => n !== DEFAULT_AUDIENCE, {
        message: `"${DEFAULT_AUDIENCE}" names spec.card itself; choose another name`,
      })
      .describe(
        `Name of the audience, a DNS label unique within the card ("${DEFAULT_AUDIENCE}" is spec.card itself).`,
      )
      .meta({
        'x-kubernetes-validations': [
          {
            rule: "self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",
            message: 'must be a DNS label (lowercase letters, digits, "-")',
          },
          {
            rule: `self != '${DEFAULT_AUDIENCE}'`,
            message: `"${DEFAULT_AUDIENCE}" names spec.card itself; choose another name`,
          },
        ],
      }),
    hosts: z
      .array(HostSchema)
      .min(1)
      .max(AUDIENCE_LIMITS.hosts)
      .superRefine((hosts, ctx) => {
        const seen = new Set<string>();
        hosts.forEach((h, i) => {
          const key = h.toLowerCase();
          if (seen.has(key)) ctx.addIssue({ code: 'custom', path: [i], message: `duplicate host "${h}"` });
          seen.add(key);
        });
      })
      .describe(
        "Host names of this audience: a request whose Host (or trusted X-Forwarded-Host) is one of them gets this audience's card. A host belongs to at most one audience.",
      )
      .meta({
        'x-kubernetes-validations': [
          {
            rule: 'self.all(h, self.exists_one(g, g.lowerAscii() == h.lowerAscii()))',
            message: 'hosts must be unique (compared case-insensitively)',
          },
        ],
      }),
    baseURL: z
      .string()
      .max(2048)
      .refine(
        (u) => new RegExp(BASE_URL_PATTERN).test(u),
        'must be an http(s) URL without query, fragment or user info',
      )
      .describe(
        'Shorthand: re-bases every interface URL of spec.card onto this origin and path prefix, e.g. "https://agents.example.com/support" turns "http://support.agents.svc:8080/a2a/jsonrpc" into "https://agents.example.com/support/a2a/jsonrpc". GRPC interfaces take the origin only (gRPC has no path prefix). Exclusive with supportedInterfaces.',
      )
      .meta({
        'x-kubernetes-validations': [
          {
            rule: `self.matches(r'${BASE_URL_PATTERN}')`,
            message: 'must be an http(s) URL without query, fragment or user info',
          },
        ],
      })
      .optional(),
    supportedInterfaces: agentCardShape.supportedInterfaces
      .describe("Replaces spec.card.supportedInterfaces in this audience's card.")
      .optional(),
    securitySchemes: agentCardShape.securitySchemes
      .unwrap()
      .describe("Replaces spec.card.securitySchemes in this audience's card ({} removes them).")
      .optional(),
    securityRequirements: agentCardShape.securityRequirements
      .unwrap()
      .describe("Replaces spec.card.securityRequirements in this audience's card ([] removes them).")
      .optional(),
    probe: z
      .enum(['Enabled', 'Disabled'])
      .default('Enabled')
      .describe(
        'Whether the interfaces of this audience are probed from the operator (default Enabled). Public hosts are often unreachable from inside the cluster (no hairpin NAT): Disabled shows the audience as not probed, and it does not block Ready.',
      ),
  })
  .superRefine((a, ctx) => {
    if (a.baseURL !== undefined && a.supportedInterfaces !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['baseURL'],
        message: 'set either baseURL or supportedInterfaces, not both',
      });
    }
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: '!(has(self.baseURL) && has(self.supportedInterfaces))',
        message: 'set either baseURL or supportedInterfaces, not both',
      },
    ],
  })
  .describe(
    "A group of clients that reach the agent by other host names and get their own card: spec.card with this audience's interfaces and security.",
  );

const AudiencesSchema = z
  .array(AudienceSchema)
  .max(AUDIENCE_LIMITS.audiences)
  .superRefine((audiences, ctx) => {
    const names = new Map<string, number>();
    const hosts = new Map<string, string>();
    audiences.forEach((a, i) => {
      if (names.has(a.name))
        ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate audience name "${a.name}"` });
      else names.set(a.name, i);
      const own = new Set<string>();
      a.hosts.forEach((h, j) => {
        const key = h.toLowerCase();
        const other = hosts.get(key);
        if (other !== undefined && !own.has(key)) {
          ctx.addIssue({
            code: 'custom',
            path: [i, 'hosts', j],
            message: `host "${h}" is already in audience "${other}"; a host belongs to at most one audience`,
          });
        }
        own.add(key);
        if (other === undefined) hosts.set(key, a.name);
      });
    });
  })
  .describe(
    "Audiences besides the default one (spec.card, served when no audience's host matches): each gets its own signed card, chosen by the request's Host.",
  )
  .meta({
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['name'],
    'x-kubernetes-validations': [
      {
        rule: 'self.all(a, a.hosts.all(h, self.filter(b, b.hosts.exists(g, g.lowerAscii() == h.lowerAscii())).size() == 1))',
        message: 'a host belongs to at most one audience (hosts are compared case-insensitively)',
      },
    ],
  });

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
    audiences: AudiencesSchema.optional(),
  })
  .superRefine((spec, ctx) => {
    // Cross-field checks (kept out of CEL: comparing URL lists is costly to estimate).
    const urls = new Set(allInterfaceUrls(spec));
    spec.probe?.credentials?.forEach((c, i) => {
      if (!urls.has(c.url)) {
        ctx.addIssue({
          code: 'custom',
          path: ['probe', 'credentials', i, 'url'],
          message: 'not the url of an interface of card.supportedInterfaces or of an audience',
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

/** status.signatures of a published document (a card, a catalog): the key ids and algorithms. */
export const publishedSignaturesSchema = (document: string, description: string) =>
  z
    .array(
      z
        .strictObject({
          kid: z.string().describe('Key id of the signature.'),
          alg: z.string().describe('JWS algorithm of the signature.'),
        })
        .describe(`A signature of the published ${document}.`),
    )
    .describe(description)
    .optional();

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
      .describe(
        'Machine-readable reason, CamelCase. Free-form, as in metav1.Condition: the values each type takes are listed in the description of the conditions list.',
      ),
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
      .describe(
        // Reasons stay free-form in the schema (no enum): see operator/api/reasons.ts for why.
        `Conditions: ${CONDITION_TYPES.join(', ')}. Reasons by type: ${reasonsDescription(CARD_REASONS_BY_TYPE)}; Ready otherwise copies the reason of the condition that blocks it.`,
      )
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
    signatures: publishedSignaturesSchema('card', 'Signatures of the published card, in order.'),
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
                `Probe verdict: ${PROBE_REASONS.slice(0, -1).join(', ')} or ${PROBE_REASONS.at(-1)}.`,
              ),
            message: z.string().describe('Human-readable probe result.'),
            latencyMs: z.number().min(0).describe('Duration of the last probe, in milliseconds.'),
            tlsNotAfter: time("Expiry of the interface's TLS certificate").optional(),
            lastProbeTime: time('When the interface was last probed'),
            lastTransitionTime: time('When reachable last changed'),
            audiences: z
              .array(z.string())
              .describe(
                `The audiences whose card declares this interface ("${DEFAULT_AUDIENCE}": spec.card); set when spec.audiences is.`,
              )
              .optional(),
          })
          .describe('Probe result of one interface.'),
      )
      .describe('Probe results, one per interface of the card.')
      .optional(),
    reachableInterfaces: z.string().describe('"reachable/total", e.g. "2/3".').optional(),
    audiences: z
      .array(
        z
          .strictObject({
            name: z.string().describe('Name of the audience (spec.audiences[].name).'),
            hosts: z.array(z.string()).describe('Its hosts, lowercase, as the sidecar matches them.'),
            digest: z
              .string()
              .regex(/^sha256:[0-9a-f]{64}$/)
              .describe('"sha256:<hex>" of the agent-card.json bytes served to this audience.'),
            bytes: z.int().min(0).describe("Size of this audience's agent-card.json, in bytes."),
            probed: z
              .boolean()
              .describe(
                'Whether its interfaces are probed (false: spec.audiences[].probe is Disabled, or probes are off).',
              ),
          })
          .describe('The card published for one audience (the default one is status.card).'),
      )
      .describe('The cards published for spec.audiences, in order.')
      .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] })
      .optional(),
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
export type Audience = z.infer<typeof AudienceSchema>;
export type AudienceStatus = NonNullable<AgentCardStatus['audiences']>[number];
export type SpecCard = z.infer<typeof SpecCardSchema>;
export type SigningKeyRef = z.infer<typeof SigningKeyRefSchema>;
export type Serving = z.infer<typeof ServingSchema>;
export type Probe = z.infer<typeof ProbeSchema>;
export type ProbeCredential = z.infer<typeof ProbeCredentialSchema>;
export type Condition = z.infer<typeof ConditionSchema>;
export type AgentCardStatus = z.infer<typeof AgentCardStatusSchema>;
export type AgentCardResource = z.infer<typeof AgentCardResourceSchema>;
