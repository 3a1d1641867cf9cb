/**
 * The AgentCard custom resource (agentcard.dev/v1alpha1): zod schemas of its spec and status,
 * the source of the CRD's OpenAPI schema (build/gen-crd.ts) and of the controller's types.
 */
import { CARD_REASONS_BY_TYPE, reasonsDescription } from '../api/reasons.ts';
import { PROBE_REASONS } from '../api/reasons.ts';
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

export const duration = (what: string, opts: { min?: string; default: string }) => {
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

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export const CertificateKeySchema = z
  .strictObject({
    secretName: z
      .string()
      .min(1)
      .max(253)
      .regex(DNS_SUBDOMAIN, 'must be a Secret name (a lower-case DNS subdomain)')
      .describe(
        'A kubernetes.io/tls Secret in the namespace of the AgentCard: tls.crt (the certificate, then its intermediates), tls.key, optional ca.crt.',
      ),
  })
  .describe(
    'A certificate signing key: each signature carries the certificate chain in its protected header ("x5c", RFC 7515 section 4.1.6) next to the kid.',
  );

const KID_FIELD = z
  .string()
  .min(1)
  .describe(
    'Key id put in the JWS header and the JWKS. Default: the JWK "kid", else its RFC 7638 thumbprint.',
  )
  .optional();
const ALG_FIELD = z
  .enum(SIGNING_ALGS)
  .describe(
    'JWS algorithm. Default: from the key type (P-256: ES256, P-384: ES384, Ed25519: EdDSA, RSA: RS256).',
  )
  .optional();

export const SigningKeyRefSchema = z
  .strictObject({
    secretRef: SecretKeySelectorSchema.describe(
      'The Secret entry holding the private key: a private JWK (JSON) or a PKCS#8 PEM.',
    ).optional(),
    certificate: CertificateKeySchema.optional(),
    kid: KID_FIELD,
    alg: ALG_FIELD,
  })
  .refine((k) => (k.secretRef === undefined) !== (k.certificate === undefined), {
    message: 'set exactly one of secretRef and certificate',
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: 'has(self.secretRef) != has(self.certificate)',
        message: 'set exactly one of secretRef and certificate',
      },
    ],
  })
  .describe(
    'A signing key (a JWK or PEM in a Secret, or a certificate); each key adds one signature, in order.',
  );

/**
 * A cert-manager issuer (cert-manager.io/v1 ObjectReference of Certificate.spec.issuerRef): the
 * operator requests the card's signing certificate from it (operator/controllers/issuer/), in the style of
 * cert-manager's ingress-shim. Only the issuer is the user's to choose; the certificate's identity
 * comes from the administrator's template (operator/card/identity.ts).
 */
export const IssuerRefSchema = z
  .strictObject({
    name: z
      .string()
      .min(1)
      .max(253)
      .describe('Name of the Issuer (in the namespace of the AgentCard) or of the ClusterIssuer.'),
    kind: z
      .string()
      .min(1)
      .max(63)
      .default('Issuer')
      .describe(
        'Kind of the issuer: Issuer or ClusterIssuer for cert-manager.io, or the kind of an external issuer (default Issuer).',
      ),
    group: z
      .string()
      .min(1)
      .max(253)
      .default('cert-manager.io')
      .describe('API group of the issuer (default cert-manager.io; an external issuer has its own).'),
  })
  .describe(
    "A cert-manager issuer: the operator creates and owns a Certificate for the workload identity of the card and signs with the Secret cert-manager issues (needs cert-manager and the operator's --cert-manager).",
  );

/** A signing key of an AgentCard: a catalog's kinds, or a certificate the operator requests. */
export const CardSigningKeyRefSchema = z
  .strictObject({
    secretRef: SecretKeySelectorSchema.describe(
      'The Secret entry holding the private key: a private JWK (JSON) or a PKCS#8 PEM.',
    ).optional(),
    certificate: CertificateKeySchema.optional(),
    issuerRef: IssuerRefSchema.optional(),
    kid: KID_FIELD,
    alg: ALG_FIELD,
  })
  .refine((k) => [k.secretRef, k.certificate, k.issuerRef].filter((v) => v !== undefined).length === 1, {
    message: 'set exactly one of secretRef, certificate and issuerRef',
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: '(has(self.secretRef) ? 1 : 0) + (has(self.certificate) ? 1 : 0) + (has(self.issuerRef) ? 1 : 0) == 1',
        message: 'set exactly one of secretRef, certificate and issuerRef',
      },
    ],
  })
  .describe(
    'A signing key (a JWK or PEM in a Secret, a certificate Secret, or a certificate the operator requests from a cert-manager issuer); each key adds one signature, in order.',
  );

const JKU_FIELD = z
  .string()
  .max(2048)
  .regex(/^https:[^\s]+$/, 'must be an https URL')
  .describe('Optional https URL of the JWKS with the public keys, put in each JWS protected header as "jku".')
  .optional();

export const SigningSchema = z
  .strictObject({
    keys: z
      .array(SigningKeyRefSchema)
      .min(1)
      .max(8)
      .describe('Signing keys, in order; several keys sign the card several times (key rotation).'),
    jku: JKU_FIELD,
  })
  .describe('Signing of the card (JCS + detached JWS, A2A spec section 8.4). Absent: the card is unsigned.');

export const CardSigningSchema = z
  .strictObject({
    keys: z
      .array(CardSigningKeyRefSchema)
      .min(1)
      .max(8)
      .refine((keys) => keys.filter((k) => k.issuerRef !== undefined).length <= 1, {
        message: 'at most one key may name an issuerRef (the operator requests one certificate per card)',
      })
      .meta({
        'x-kubernetes-validations': [
          {
            rule: 'self.filter(k, has(k.issuerRef)).size() <= 1',
            message: 'at most one key may name an issuerRef (the operator requests one certificate per card)',
          },
        ],
      })
      .describe('Signing keys, in order; several keys sign the card several times (key rotation).'),
    jku: JKU_FIELD,
  })
  .describe('Signing of the card (JCS + detached JWS, A2A spec section 8.4). Absent: the card is unsigned.');

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
    verifyServed: z
      .boolean()
      .optional()
      .describe(
        "Whether the operator fetches this audience's card from each of its exact hosts (https://<host>/.well-known/agent-card.json, or baseURL's origin when baseURL names the host) as a client would, on the probe interval, and reports in the Delivered condition whether it is the card it signed (default false). The fetch follows the probes' address policy: no redirects, size and time limits.",
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

const SERVING_HOSTS_MESSAGE =
  'hosts are only for server Central (the sidecar serves whatever Host reaches it)';

export const ServingSchema = z
  .strictObject({
    cacheMaxAgeSeconds: z
      .int()
      .min(0)
      .max(86400)
      .default(300)
      .describe('Cache-Control max-age of the served card, in seconds (default 300).'),
    server: z
      .enum(['Sidecar', 'Central'])
      .default('Sidecar')
      .describe(
        'Who serves the card: "Sidecar" (default), the container the webhook injects into the Pods that ask for the card; "Central", the operator\'s card server, which serves every such card by Host from its published ConfigMap and keeps answering while the agent has no Pods.',
      ),
    hosts: z
      .array(HostSchema)
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
        'With server Central: the host names whose requests get the default card (spec.card); the hosts of spec.audiences get their own cards. The card server answers 404 for a host no card claims, and refuses a host two cards claim.',
      )
      .meta({
        'x-kubernetes-validations': [
          {
            rule: 'self.all(h, self.exists_one(g, g.lowerAscii() == h.lowerAscii()))',
            message: 'hosts must be unique (compared case-insensitively)',
          },
        ],
      })
      .optional(),
  })
  // Routing /.well-known/ to the sidecar or the card server is the user's Ingress or HTTPRoute
  // (docs/operations.md, "Routing `/.well-known/` to the sidecar"; docs/adopt.md).
  .describe('How the card is served: by the injected sidecar, or by the central card server.')
  .superRefine((serving, ctx) => {
    if (serving.hosts !== undefined && serving.server !== 'Central')
      ctx.addIssue({ code: 'custom', path: ['hosts'], message: SERVING_HOSTS_MESSAGE });
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: "!has(self.hosts) || (has(self.server) && self.server == 'Central')",
        message: SERVING_HOSTS_MESSAGE,
      },
    ],
  });

export const SpecCardSchema = z
  .strictObject(agentCardInputShape)
  .describe(
    'The A2A 1.0 AgentCard, field for field in its JSON (camelCase) shape, without signatures (the operator adds them).',
  );

// ---------------------------------------------------------------------------------------------
// Adoption: the card taken from the agent itself (docs/adopt.md). spec.source names where the
// agent serves its card; spec.card, when present, is an overlay on it; spec.remove drops fields.

/** Where a card is served when spec.source gives no path (A2A spec section 8.2, well-known URI). */
export const SOURCE_PATHS = ['/.well-known/agent-card.json', '/.well-known/agent.json'] as const;
export const SOURCE_LIMITS = { removals: 32, keys: 8, pointerLength: 512 } as const;

const SOURCE_URL_PATTERN = '^https?://[^/?#@\\s]+(/[^#\\s]*)?$';
const SOURCE_URL_MESSAGE = 'must be an http(s) URL without fragment or user info';
const SOURCE_PATH_PATTERN = '^/[^#\\s]*$';
const SOURCE_PATH_MESSAGE = 'must be an absolute path, e.g. "/.well-known/agent-card.json"';
/** RFC 6901 JSON Pointer, non-empty (the whole card cannot be removed). */
export const POINTER_PATTERN = '^(/([^~/]|~[01])*)+$';
const POINTER_MESSAGE = 'must be a JSON Pointer (RFC 6901) such as "/provider/url" or "/skills/0"';

const withRule = <T extends z.ZodString>(schema: T, pattern: string, message: string) =>
  schema
    .refine((v) => new RegExp(pattern).test(v), message)
    .meta({ 'x-kubernetes-validations': [{ rule: `self.matches(r'${pattern}')`, message }] });

/** A public JWK (RFC 7517) that may have signed the source's card; private members are refused. */
export const SourceKeySchema = z
  .strictObject({
    kty: z.enum(['EC', 'OKP', 'RSA']).describe('Key type.'),
    kid: z.string().min(1).max(256).describe('Key id, matched against the JWS header "kid".'),
    alg: z.string().min(1).max(16).describe('Algorithm the key is used with, e.g. ES256.').optional(),
    use: z.string().max(16).describe('Public key use, "sig".').optional(),
    crv: z.string().max(16).describe('Curve of an EC or OKP key (P-256, P-384, Ed25519).').optional(),
    x: z.string().max(1024).describe('x coordinate (EC) or public key (OKP), base64url.').optional(),
    y: z.string().max(1024).describe('y coordinate of an EC key, base64url.').optional(),
    n: z.string().max(2048).describe('Modulus of an RSA key, base64url.').optional(),
    e: z.string().max(16).describe('Exponent of an RSA key, base64url.').optional(),
  })
  .describe('A public JWK (RFC 7517); private members are not accepted.');

export const SourceServiceSchema = z
  .strictObject({
    name: z.string().min(1).max(63).describe('Name of a Service in the namespace of the AgentCard.'),
    port: z
      .union([z.int().min(1).max(65535), z.string().min(1).max(15)])
      .describe('Port of the Service: its number, or its name.')
      .meta({ 'x-kubernetes-int-or-string': true }),
    scheme: z.enum(['http', 'https']).describe('Scheme used to reach the Service (default http).').optional(),
  })
  .describe("A Service and port of the AgentCard's namespace, reached by its cluster DNS name.");

export const SourceSchema = z
  .strictObject({
    url: withRule(z.string().min(1).max(2048), SOURCE_URL_PATTERN, SOURCE_URL_MESSAGE)
      .describe(
        'URL of the agent\'s own card, e.g. "https://agent.example.com/.well-known/agent-card.json". Exclusive with service. A URL that ends in "/" or has no path gets the well-known path appended.',
      )
      .optional(),
    service: SourceServiceSchema.optional(),
    path: withRule(z.string().max(1024), SOURCE_PATH_PATTERN, SOURCE_PATH_MESSAGE)
      .describe(
        `Path of the card on the Service (default "${SOURCE_PATHS[0]}", then the legacy "${SOURCE_PATHS[1]}" when the first answers 404). Only with service.`,
      )
      .optional(),
    interval: duration(
      'Time between fetches of the source (a change is adopted at the next fetch that confirms it).',
      {
        min: '10s',
        default: '5m',
      },
    ),
    verification: z
      .strictObject({
        keys: z
          .array(SourceKeySchema)
          .min(1)
          .max(SOURCE_LIMITS.keys)
          .describe("Public keys that may have signed the source's card."),
        required: z
          .boolean()
          .default(false)
          .describe(
            "Whether the source's card must carry a signature valid under one of the keys (default false: the result is only recorded in status.source).",
          ),
      })
      .describe(
        "Verification of the signatures the source's card carries (A2A spec section 8.4). The published card is always re-signed with spec.signing.",
      )
      .optional(),
  })
  .superRefine((s, ctx) => {
    if ((s.url === undefined) === (s.service === undefined)) {
      ctx.addIssue({ code: 'custom', path: [], message: 'set exactly one of url and service' });
    }
    if (s.path !== undefined && s.url !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['path'], message: 'path goes with service; put it in url' });
    }
  })
  .meta({
    'x-kubernetes-validations': [
      { rule: 'has(self.url) != has(self.service)', message: 'set exactly one of url and service' },
      { rule: '!(has(self.path) && has(self.url))', message: 'path goes with service; put it in url' },
    ],
  })
  .describe(
    "Where the agent serves its own card: the operator fetches it (under the probes' address policy), converts a 0.3 card to 1.0, removes spec.remove, applies spec.card on top and publishes the result like a written card.",
  );

/** The required fields of a written card: spec.card must have them unless spec.source is set. */
const CARD_REQUIRED = [
  'name',
  'description',
  'supportedInterfaces',
  'version',
  'capabilities',
  'defaultInputModes',
  'defaultOutputModes',
  'skills',
] as const;

/** spec.card as an overlay: every top-level field optional (a field present replaces the source's). */
export const SpecCardOverlaySchema = z
  .strictObject(agentCardInputShape)
  .partial()
  .describe(
    "The A2A 1.0 AgentCard, field for field in its JSON (camelCase) shape, without signatures (the operator adds them). With spec.source it is an overlay: its fields replace the source card's (objects merge key by key, lists and scalars replace); without it, it is the whole card.",
  );

const RemoveSchema = z
  .array(withRule(z.string().min(2).max(SOURCE_LIMITS.pointerLength), POINTER_PATTERN, POINTER_MESSAGE))
  .max(SOURCE_LIMITS.removals)
  .describe(
    'JSON Pointers (RFC 6901) of fields removed from the source\'s card before spec.card is applied, e.g. "/provider/url" or "/skills/2". Only with source; a pointer that matches nothing is ignored.',
  );

/** How the controller treats a change of the published card (docs/changes.md, "In the cluster"). */
export const ChangesSchema = z
  .strictObject({
    breaking: z
      .enum(['Audit', 'Enforce'])
      .default('Audit')
      .describe(
        'A breaking change (docs/changes.md) without a new major card version: "Audit" (default) publishes it and records it in status.history; "Enforce" holds it (the last good card stays published, Published=False with reason BreakingChangeHeld) until the version gets a new major, or the annotation agentcard.dev/accept-breaking-change names the held change\'s digest.',
      ),
  })
  .describe('What the controller does with a change of the published card.');

/**
 * The spec as written in the resource: a written card (spec.card complete), or an adopted one
 * (spec.source, with spec.card an optional overlay). The controller resolves an adopted spec
 * into an AgentCardSpec (operator/source/) before validating it like a written one.
 */
export const AgentCardResourceSpecSchema = z
  .strictObject({
    source: SourceSchema.optional(),
    remove: RemoveSchema.optional(),
    card: SpecCardOverlaySchema.optional(),
    signing: CardSigningSchema.optional(),
    serving: ServingSchema.optional(),
    probe: ProbeSchema.optional(),
    audiences: AudiencesSchema.optional(),
    changes: ChangesSchema.optional(),
  })
  .superRefine((spec, ctx) => {
    if (spec.source) {
      return;
    }
    if (spec.remove !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['remove'], message: 'remove needs source' });
    }
    if (spec.card === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['card'],
        message: 'set card, or source to take the card from the agent',
      });
      return;
    }
    for (const field of CARD_REQUIRED) {
      if (spec.card[field] === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['card', field],
          message: 'required (unless spec.source is set)',
        });
      }
    }
  })
  .meta({
    'x-kubernetes-validations': [
      {
        rule: `has(self.source) || (has(self.card) && ${CARD_REQUIRED.map((f) => `has(self.card.${f})`).join(' && ')})`,
        message: `spec.card needs ${CARD_REQUIRED.join(', ')} unless spec.source is set`,
      },
      { rule: '!has(self.remove) || has(self.source)', message: 'remove needs source' },
    ],
  })
  .describe(
    'The desired Agent Card (written out in card, or taken from the agent with source) and how it is signed, served and probed.',
  );

export const AgentCardSpecSchema = z
  .strictObject({
    card: SpecCardSchema,
    signing: CardSigningSchema.optional(),
    serving: ServingSchema.optional(),
    probe: ProbeSchema.optional(),
    audiences: AudiencesSchema.optional(),
    changes: ChangesSchema.optional(),
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
    const certificates = new Set<string>();
    spec.signing?.keys.forEach((k, i) => {
      const name = k.certificate?.secretName;
      if (name === undefined) return;
      if (certificates.has(name)) {
        ctx.addIssue({
          code: 'custom',
          path: ['signing', 'keys', i, 'certificate', 'secretName'],
          message: `duplicate certificate Secret "${name}"`,
        });
      }
      certificates.add(name);
    });
  })
  .describe('The desired Agent Card and how it is signed, served and probed.');

// ---------------------------------------------------------------------------------------------
// status

/** status.history: how many published changes are kept, and how much of each version. */
export const HISTORY_LIMIT = 10;
export const HISTORY_VERSION_LENGTH = 128;

const time = (what: string) => z.iso.datetime({ offset: true }).describe(`${what} (RFC 3339).`);

export const CONDITION_TYPES = [
  'Accepted',
  'Signed',
  'Published',
  'InterfacesReachable',
  'CertificatesValid',
  'SourceAvailable',
  'Serving',
  'Delivered',
  'PolicyCompliant',
  'Ready',
] as const;

/** The public facts of a signing certificate in status. */
export const SignatureCertificateSchema = z
  .strictObject({
    subject: z.string().describe('Subject of the signing (leaf) certificate.'),
    issuer: z.string().describe('Issuer of the signing certificate.'),
    identities: z
      .array(z.string())
      .describe('Its subject alternative names: URIs (such as a SPIFFE ID) first, then DNS names.'),
    notAfter: time('When the certificate expires'),
  })
  .describe('The certificate of a signature (signing.keys[].certificate), as carried in its x5c header.');

/** status.signatures of a published document (a card, a catalog): the key ids and algorithms. */
export const publishedSignaturesSchema = (document: string, description: string) =>
  z
    .array(
      z
        .strictObject({
          kid: z.string().describe('Key id of the signature.'),
          alg: z.string().describe('JWS algorithm of the signature.'),
          certificate: SignatureCertificateSchema.optional(),
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
    source: z
      .strictObject({
        url: z.string().describe('The URL the adopted card was fetched from.'),
        digest: z
          .string()
          .regex(/^sha256:[0-9a-f]{64}$/)
          .describe('"sha256:<hex>" of the fetched bytes of the adopted card.'),
        protocolVersion: z
          .enum(['1.0', '0.3'])
          .describe('The A2A shape the source served ("0.3" cards are converted to 1.0).'),
        fetchTime: time('When the adopted card was fetched'),
        changeTime: time('When the source last changed to a card that was adopted').optional(),
        changes: z.int().min(0).describe('How many times a changed source card was adopted.').optional(),
        signature: z
          .strictObject({
            result: z
              .enum(['Verified', 'Invalid', 'Unsigned', 'NotChecked'])
              .describe(
                'Verified: a signature is valid under a key of spec.source.verification; Invalid: none is; Unsigned: the card carries none; NotChecked: no keys are given.',
              ),
            kid: z.string().describe('Key id of the verified signature.').optional(),
            message: z.string().max(1024).describe('Why the signatures did not verify.').optional(),
          })
          .describe("The source card's own signatures, checked against spec.source.verification.")
          .optional(),
      })
      .describe('The card adopted from spec.source (absent for a written card).')
      .optional(),
    serving: z
      .strictObject({
        podsRequesting: z
          .int()
          .min(0)
          .describe('Pods that ask for this card (annotation agentcard.dev/inject).'),
        podsMissingSidecar: z.int().min(0).describe('Of those, pods without the serving sidecar.'),
        missing: z
          .array(z.string())
          .max(20)
          .describe('Names of pods without the sidecar (at most 20); absent when there are none.')
          .optional(),
      })
      .describe('Pods serving the card.')
      .optional(),
    history: z
      .array(
        z
          .strictObject({
            version: z
              .string()
              .max(HISTORY_VERSION_LENGTH)
              .describe(`The card's version (its first ${HISTORY_VERSION_LENGTH} characters).`),
            digest: z
              .string()
              .regex(/^sha256:[0-9a-f]{64}$/)
              .describe('"sha256:<hex>" of the published agent-card.json bytes (as status.card.digest).'),
            time: time('When it was published'),
            class: z
              .enum(['breaking', 'compatible', 'descriptive'])
              .describe(
                'The most severe class of its changes against the card published before (docs/changes.md); absent when there was no earlier card to compare with (the first publish, or the ConfigMap was gone).',
              )
              .optional(),
          })
          .describe('One published change of the card.'),
      )
      .max(HISTORY_LIMIT)
      .describe(
        `The last ${HISTORY_LIMIT} published changes of the card, newest first. A card signed again without a change of content adds none.`,
      )
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
  spec: AgentCardResourceSpecSchema,
  status: AgentCardStatusSchema.optional(),
});

export type AgentCardSpec = z.infer<typeof AgentCardSpecSchema>;
export type AgentCardResourceSpec = z.infer<typeof AgentCardResourceSpecSchema>;
export type Source = z.infer<typeof SourceSchema>;
export type SourceKey = z.infer<typeof SourceKeySchema>;
export type SourceStatus = NonNullable<AgentCardStatus['source']>;
export type SpecCardOverlay = z.infer<typeof SpecCardOverlaySchema>;
export type Audience = z.infer<typeof AudienceSchema>;
export type AudienceStatus = NonNullable<AgentCardStatus['audiences']>[number];
export type HistoryEntry = NonNullable<AgentCardStatus['history']>[number];
export type Changes = z.infer<typeof ChangesSchema>;
export type SpecCard = z.infer<typeof SpecCardSchema>;
export type SigningKeyRef = z.infer<typeof SigningKeyRefSchema>;
export type CardSigningKeyRef = z.infer<typeof CardSigningKeyRefSchema>;
export type IssuerRef = z.infer<typeof IssuerRefSchema>;
export type CertificateKey = z.infer<typeof CertificateKeySchema>;
export type Serving = z.infer<typeof ServingSchema>;
export type Probe = z.infer<typeof ProbeSchema>;
export type ProbeCredential = z.infer<typeof ProbeCredentialSchema>;
export type Condition = z.infer<typeof ConditionSchema>;
export type AgentCardStatus = z.infer<typeof AgentCardStatusSchema>;
export type AgentCardResource = z.infer<typeof AgentCardResourceSchema>;
