/**
 * The A2A 1.0 Agent Card model: one strict zod schema per protobuf message of the specification
 * (section 4.4, "Agent Card"), in its JSON (camelCase) shape. This file is the single source of
 * truth: the CRD schema (`npm run gen:crd`), the validator and the TypeScript types all derive
 * from it. Every field carries a description, which becomes the `kubectl explain` text.
 *
 * Presence (spec section 8.4.1): fields the specification marks REQUIRED must be written, even
 * when empty (an empty value is a lint warning, see lint.ts). Optional fields may be left out.
 * A few bounds (list sizes, id length) exist only to keep the CRD's CEL rules cheap to evaluate.
 */
import { z } from 'zod';

/** Bounds shared with the CRD; they keep the estimated cost of the CEL rules low. */
export const LIMITS = {
  interfaces: 32,
  skills: 100,
  skillId: 256,
  securitySchemes: 64,
  extensions: 64,
} as const;

const url = (what: string) =>
  z
    .url({ error: (issue) => (issue.code === 'invalid_format' ? 'must be an absolute URL' : undefined) })
    .describe(what);

/** Helper: "exactly one of these keys is set" for the protobuf `oneof` unions. */
function exactlyOne(keys: readonly string[], what: string) {
  const rule = keys.map((k) => `(has(self.${k}) ? 1 : 0)`).join(' + ') + ' == 1';
  return {
    check: (value: Record<string, unknown>, ctx: z.core.$RefinementCtx) => {
      const set = keys.filter((k) => value[k] !== undefined);
      if (set.length !== 1) {
        ctx.addIssue({
          code: 'custom',
          message:
            set.length === 0
              ? `${what}: exactly one of ${keys.join(', ')} must be set (none is)`
              : `${what}: exactly one of ${keys.join(', ')} must be set (found ${set.join(', ')})`,
        });
      }
    },
    cel: [{ rule, message: `exactly one of ${keys.join(', ')} must be set` }],
  };
}

// ---------------------------------------------------------------------------------------------
// Interfaces, provider, capabilities, extensions

export const AgentInterfaceSchema = z
  .strictObject({
    url: url(
      'Required. URL where this interface is available; must be an absolute HTTPS URL in production. Example: "https://api.example.com/a2a/v1".',
    ),
    protocolBinding: z
      .string()
      .min(1, 'must not be empty')
      .describe(
        'Required. Protocol binding spoken at this URL: "JSONRPC", "GRPC", "HTTP+JSON", or any other string for a custom binding.',
      ),
    tenant: z
      .string()
      .describe(
        'Optional. Opaque tenant id; when set, clients must put it in the tenant field of every request sent to this interface.',
      )
      .optional(),
    protocolVersion: z
      .string()
      .min(1, 'must not be empty')
      .describe('Required. A2A protocol version exposed by this interface, e.g. "1.0" or "0.3".'),
  })
  .describe('An endpoint of the agent: a URL, the protocol binding it speaks and the A2A protocol version.');

export const AgentProviderSchema = z
  .strictObject({
    url: url(
      'Required. URL of the provider\'s website or relevant documentation. Example: "https://ai.google.dev".',
    ),
    organization: z.string().describe('Required. Name of the provider\'s organization. Example: "Google".'),
  })
  .describe('The service provider of the agent.');

export const AgentExtensionSchema = z
  .strictObject({
    uri: z.string().describe('Unique URI identifying the extension.').optional(),
    description: z.string().describe('How this agent uses the extension.').optional(),
    required: z
      .boolean()
      .describe('If true, the client must understand and comply with the extension.')
      .optional(),
    params: z
      .record(z.string(), z.json())
      .describe('Optional. Extension-specific configuration (a free-form JSON object, protobuf Struct).')
      .meta({ 'x-kubernetes-preserve-unknown-fields': true })
      .optional(),
  })
  .describe('A protocol extension supported by the agent.');

export const AgentCapabilitiesSchema = z
  .strictObject({
    streaming: z.boolean().describe('Whether the agent supports streaming responses.').optional(),
    pushNotifications: z
      .boolean()
      .describe('Whether the agent can send push notifications for asynchronous task updates.')
      .optional(),
    extensions: z
      .array(AgentExtensionSchema)
      .max(LIMITS.extensions)
      .describe('Protocol extensions supported by the agent.')
      .optional(),
    extendedAgentCard: z
      .boolean()
      .describe(
        'Whether the agent serves an extended agent card to authenticated clients (GetExtendedAgentCard).',
      )
      .optional(),
  })
  .describe('Optional A2A capabilities the agent supports. Unset booleans are omitted; false is kept.');

// ---------------------------------------------------------------------------------------------
// Security schemes (a union, modelled on the OpenAPI 3.2 Security Scheme Object)

const schemeDescription = z.string().describe('Optional description of the security scheme.').optional();
const requiredScopes = () =>
  z
    .record(z.string(), z.string())
    .describe('Required. Available scopes: a map of scope name to a short description.');
const optionalScopes = () =>
  z
    .record(z.string(), z.string())
    .describe('Available scopes: a map of scope name to a short description (may be empty).')
    .optional();
const refreshUrl = url('URL used to obtain refresh tokens; TLS is required.').optional();

export const APIKeySecuritySchemeSchema = z
  .strictObject({
    description: schemeDescription,
    location: z
      .enum(['query', 'header', 'cookie'])
      .describe('Required. Where the API key goes: "query", "header" or "cookie".'),
    name: z
      .string()
      .min(1, 'must not be empty')
      .describe('Required. Name of the header, query or cookie parameter.'),
  })
  .describe('Authentication with an API key.');

export const HTTPAuthSecuritySchemeSchema = z
  .strictObject({
    description: schemeDescription,
    scheme: z
      .string()
      .min(1, 'must not be empty')
      .describe(
        'Required. HTTP authentication scheme for the Authorization header (RFC 7235), e.g. "Bearer".',
      ),
    bearerFormat: z.string().describe('Hint of how the bearer token is formatted, e.g. "JWT".').optional(),
  })
  .describe('HTTP authentication (Basic, Bearer, ...).');

export const AuthorizationCodeOAuthFlowSchema = z
  .strictObject({
    authorizationUrl: url('Required. Authorization URL for this flow.'),
    tokenUrl: url('Required. Token URL for this flow.'),
    refreshUrl,
    scopes: requiredScopes(),
    pkceRequired: z
      .boolean()
      .describe('Whether PKCE (RFC 7636) is required for this flow (default false).')
      .optional(),
  })
  .describe('The OAuth 2.0 Authorization Code flow.');

export const ClientCredentialsOAuthFlowSchema = z
  .strictObject({
    tokenUrl: url('Required. Token URL for this flow.'),
    refreshUrl,
    scopes: requiredScopes(),
  })
  .describe('The OAuth 2.0 Client Credentials flow.');

export const ImplicitOAuthFlowSchema = z
  .strictObject({
    authorizationUrl: url('Authorization URL for this flow; TLS is required.').optional(),
    refreshUrl,
    scopes: optionalScopes(),
  })
  .describe('Deprecated: the OAuth 2.0 Implicit flow. Use Authorization Code with PKCE instead.');

export const PasswordOAuthFlowSchema = z
  .strictObject({
    tokenUrl: url('Token URL for this flow; TLS is required.').optional(),
    refreshUrl,
    scopes: optionalScopes(),
  })
  .describe(
    'Deprecated: the OAuth 2.0 Resource Owner Password flow. Use Authorization Code with PKCE or Device Code.',
  );

export const DeviceCodeOAuthFlowSchema = z
  .strictObject({
    deviceAuthorizationUrl: url('Required. Device authorization endpoint URL.'),
    tokenUrl: url('Required. Token URL for this flow.'),
    refreshUrl,
    scopes: requiredScopes(),
  })
  .describe('The OAuth 2.0 Device Authorization flow (RFC 8628).');

const FLOW_KEYS = ['authorizationCode', 'clientCredentials', 'implicit', 'password', 'deviceCode'] as const;
const oneFlow = exactlyOne(FLOW_KEYS, 'flows');
export const OAuthFlowsSchema = z
  .strictObject({
    authorizationCode: AuthorizationCodeOAuthFlowSchema.optional(),
    clientCredentials: ClientCredentialsOAuthFlowSchema.optional(),
    implicit: ImplicitOAuthFlowSchema.optional(),
    password: PasswordOAuthFlowSchema.optional(),
    deviceCode: DeviceCodeOAuthFlowSchema.optional(),
  })
  .superRefine(oneFlow.check)
  .describe(
    'The OAuth 2.0 flow: exactly one of authorizationCode, clientCredentials, deviceCode, implicit, password.',
  )
  .meta({ 'x-kubernetes-validations': oneFlow.cel });

export const OAuth2SecuritySchemeSchema = z
  .strictObject({
    description: schemeDescription,
    flows: OAuthFlowsSchema.describe('Required. The OAuth 2.0 flow supported (exactly one).'),
    oauth2MetadataUrl: url('URL of the RFC 8414 authorization server metadata; TLS is required.').optional(),
  })
  .describe('Authentication with OAuth 2.0.');

export const OpenIdConnectSecuritySchemeSchema = z
  .strictObject({
    description: schemeDescription,
    openIdConnectUrl: url('Required. OpenID Connect Discovery URL of the provider metadata.'),
  })
  .describe('Authentication with OpenID Connect.');

export const MutualTlsSecuritySchemeSchema = z
  .strictObject({ description: schemeDescription })
  .describe('Authentication with mutual TLS.');

export const SECURITY_SCHEME_KEYS = [
  'apiKeySecurityScheme',
  'httpAuthSecurityScheme',
  'oauth2SecurityScheme',
  'openIdConnectSecurityScheme',
  'mtlsSecurityScheme',
] as const;
const oneScheme = exactlyOne(SECURITY_SCHEME_KEYS, 'security scheme');
export const SecuritySchemeSchema = z
  .strictObject({
    apiKeySecurityScheme: APIKeySecuritySchemeSchema.optional(),
    httpAuthSecurityScheme: HTTPAuthSecuritySchemeSchema.optional(),
    oauth2SecurityScheme: OAuth2SecuritySchemeSchema.optional(),
    openIdConnectSecurityScheme: OpenIdConnectSecuritySchemeSchema.optional(),
    mtlsSecurityScheme: MutualTlsSecuritySchemeSchema.optional(),
  })
  .superRefine(oneScheme.check)
  .describe(
    'A security scheme: exactly one of apiKeySecurityScheme, httpAuthSecurityScheme, oauth2SecurityScheme, openIdConnectSecurityScheme, mtlsSecurityScheme.',
  )
  .meta({ 'x-kubernetes-validations': oneScheme.cel });

export const StringListSchema = z
  .strictObject({
    list: z
      .array(z.string())
      .describe('The individual string values (here: the required scopes).')
      .optional(),
  })
  .describe('A list of strings.');

export const SecurityRequirementSchema = z
  .strictObject({
    schemes: z
      .record(z.string(), StringListSchema)
      .describe('Map of security scheme name (a key of securitySchemes) to the scopes it requires.')
      .optional(),
  })
  .describe('One way of satisfying the security of the agent: all listed schemes together.');

// ---------------------------------------------------------------------------------------------
// Skills, signatures and the card

export const AgentSkillSchema = z
  .strictObject({
    id: z
      .string()
      .min(1, 'must not be empty')
      .max(LIMITS.skillId)
      .describe('Required. Unique identifier of the skill within this card.'),
    name: z.string().describe('Required. Human-readable name of the skill.'),
    description: z.string().describe('Required. Detailed description of the skill.'),
    tags: z.array(z.string()).describe('Required. Keywords describing what the skill can do.'),
    examples: z.array(z.string()).describe('Example prompts or scenarios this skill can handle.').optional(),
    inputModes: z
      .array(z.string())
      .describe("Media types this skill accepts, overriding the card's defaultInputModes.")
      .optional(),
    outputModes: z
      .array(z.string())
      .describe("Media types this skill produces, overriding the card's defaultOutputModes.")
      .optional(),
    securityRequirements: z
      .array(SecurityRequirementSchema)
      .describe('Security requirements for this skill.')
      .optional(),
  })
  .describe('A distinct capability or function the agent can perform.');

export const AgentCardSignatureSchema = z
  .strictObject({
    protected: z
      .string()
      .min(1, 'must not be empty')
      .describe('Required. The JWS protected header: a base64url-encoded JSON object.'),
    signature: z
      .string()
      .min(1, 'must not be empty')
      .describe('Required. The computed signature, base64url-encoded.'),
    header: z.record(z.string(), z.json()).describe('The unprotected JWS header values.').optional(),
  })
  .describe('A JSON Web Signature (RFC 7515) over the canonicalized card.');

const interfacesNonEmpty = (list: unknown[], ctx: z.core.$RefinementCtx) => {
  if (list.length === 0) ctx.addIssue({ code: 'custom', message: 'must list at least one interface' });
};
const skillIdsUnique = (skills: { id: string }[], ctx: z.core.$RefinementCtx) => {
  const seen = new Set<string>();
  skills.forEach((s, i) => {
    if (seen.has(s.id))
      ctx.addIssue({ code: 'custom', path: [i, 'id'], message: `duplicate skill id "${s.id}"` });
    seen.add(s.id);
  });
};

/** The fields of AgentCard, shared by the card schema and the custom resource's spec.card. */
export const agentCardShape = {
  name: z.string().describe('Required. Human-readable name of the agent. Example: "Recipe Agent".'),
  description: z
    .string()
    .describe(
      'Required. Human-readable description of the agent, helping users and other agents understand its purpose.',
    ),
  supportedInterfaces: z
    .array(AgentInterfaceSchema)
    .max(LIMITS.interfaces)
    .superRefine(interfacesNonEmpty)
    .describe('Required, non-empty. Ordered list of supported interfaces; the first entry is preferred.')
    .meta({
      'x-kubernetes-validations': [{ rule: 'size(self) > 0', message: 'must list at least one interface' }],
    }),
  provider: AgentProviderSchema.describe('The service provider of the agent.').optional(),
  version: z
    .string()
    .describe('Required. Version of the agent (not of the protocol); change it whenever the card changes.'),
  documentationUrl: url('A URL with additional documentation about the agent.').optional(),
  capabilities: AgentCapabilitiesSchema.describe('Required. The A2A capabilities supported by the agent.'),
  securitySchemes: z
    .record(z.string(), SecuritySchemeSchema)
    .refine((m) => Object.keys(m).length <= LIMITS.securitySchemes, {
      message: `at most ${LIMITS.securitySchemes} security schemes`,
    })
    .describe('Security schemes for authenticating with this agent, by name.')
    .meta({ maxProperties: LIMITS.securitySchemes })
    .optional(),
  securityRequirements: z
    .array(SecurityRequirementSchema)
    .describe('Security requirements for contacting the agent (any one of them suffices).')
    .optional(),
  defaultInputModes: z
    .array(z.string())
    .describe('Required. Media types the agent accepts across all skills; skills may override them.'),
  defaultOutputModes: z
    .array(z.string())
    .describe('Required. Media types the agent produces across all skills.'),
  skills: z
    .array(AgentSkillSchema)
    .max(LIMITS.skills)
    .superRefine(skillIdsUnique)
    .describe('Required. The skills of the agent; skill ids are unique.')
    .meta({
      'x-kubernetes-validations': [
        { rule: 'self.all(s, self.exists_one(t, t.id == s.id))', message: 'skill ids must be unique' },
      ],
    }),
  iconUrl: url('Optional. URL of an icon for the agent.').optional(),
};

const signatures = z
  .array(AgentCardSignatureSchema)
  .describe('JSON Web Signatures computed over this card (spec section 8.4).')
  .optional();

export const AgentCardSchema = z
  .strictObject({ ...agentCardShape, signatures })
  .describe('A self-describing manifest for an agent (A2A 1.0 AgentCard).');

// ---------------------------------------------------------------------------------------------
// Pre-1.0 fields, accepted on input so that an older card can be pasted as it is. They are not
// part of the v1.0 card: validation warns about each (an error with --strict) and rendering
// drops them (a card mixing both shapes would fail the v1.0 schema).

const legacy = (replacement: string) =>
  `Pre-1.0 (A2A 0.3) field, not part of the v1.0 card: ignored when rendering. Use ${replacement} instead.`;

/** Each pre-1.0 field that is accepted on input, with its v1.0 replacement. */
export const LEGACY_FIELDS = {
  url: 'supportedInterfaces[0].url',
  preferredTransport: 'supportedInterfaces[0].protocolBinding (the first interface is preferred)',
  additionalInterfaces: 'supportedInterfaces',
  protocolVersion: 'supportedInterfaces[].protocolVersion',
  supportsAuthenticatedExtendedCard: 'capabilities.extendedAgentCard',
  security: 'securityRequirements',
  'provider.name': 'provider.organization',
  'capabilities.stateTransitionHistory': 'nothing (removed in 1.0; model it as an extension if needed)',
} as const;

const LegacyInterfaceSchema = z
  .strictObject({
    url: z.string().describe('URL of the interface.'),
    transport: z.string().describe('Transport (protocol binding) of the interface.'),
  })
  .describe('A pre-1.0 additional interface.');

export const agentCardInputShape = {
  ...agentCardShape,
  provider: AgentProviderSchema.extend({
    name: z.string().describe(legacy(LEGACY_FIELDS['provider.name'])).optional(),
  })
    .describe('The service provider of the agent.')
    .optional(),
  capabilities: AgentCapabilitiesSchema.extend({
    stateTransitionHistory: z
      .boolean()
      .describe(legacy(LEGACY_FIELDS['capabilities.stateTransitionHistory']))
      .optional(),
  }).describe('Required. The A2A capabilities supported by the agent.'),
  url: z.string().describe(legacy(LEGACY_FIELDS.url)).optional(),
  preferredTransport: z.string().describe(legacy(LEGACY_FIELDS.preferredTransport)).optional(),
  additionalInterfaces: z
    .array(LegacyInterfaceSchema)
    .describe(legacy(LEGACY_FIELDS.additionalInterfaces))
    .optional(),
  protocolVersion: z.string().describe(legacy(LEGACY_FIELDS.protocolVersion)).optional(),
  supportsAuthenticatedExtendedCard: z
    .boolean()
    .describe(legacy(LEGACY_FIELDS.supportsAuthenticatedExtendedCard))
    .optional(),
  security: z
    .array(z.record(z.string(), z.array(z.string())))
    .describe(legacy(LEGACY_FIELDS.security))
    .optional(),
};

/** What a user may write: the v1.0 card plus the tolerated pre-1.0 fields. */
export const AgentCardInputSchema = z
  .strictObject({ ...agentCardInputShape, signatures })
  .describe('An A2A 1.0 AgentCard (pre-1.0 fields are tolerated and ignored).');

export type AgentInterface = z.infer<typeof AgentInterfaceSchema>;
export type AgentProvider = z.infer<typeof AgentProviderSchema>;
export type AgentCapabilities = z.infer<typeof AgentCapabilitiesSchema>;
export type AgentExtension = z.infer<typeof AgentExtensionSchema>;
export type SecurityScheme = z.infer<typeof SecuritySchemeSchema>;
export type OAuthFlows = z.infer<typeof OAuthFlowsSchema>;
export type SecurityRequirement = z.infer<typeof SecurityRequirementSchema>;
export type StringList = z.infer<typeof StringListSchema>;
export type AgentSkill = z.infer<typeof AgentSkillSchema>;
export type AgentCardSignature = z.infer<typeof AgentCardSignatureSchema>;
export type AgentCard = z.infer<typeof AgentCardSchema>;
export type AgentCardInput = z.infer<typeof AgentCardInputSchema>;
