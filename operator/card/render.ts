/**
 * Rendering: the validated card -> the JSON object that is signed and served.
 *
 * v1.0 follows the proto3 JSON presence rules of spec section 8.4.1:
 * - fields marked REQUIRED are always present, even when empty ("", [], {});
 * - optional fields declared with presence (`documentationUrl`, `iconUrl`, the three capability
 *   booleans) and message-typed fields are present exactly when set, even when false or empty;
 * - every other field is omitted when it holds its default ("", [], {}, false, 0).
 * Keys are emitted in the order of the protobuf definition and values are copied, never shared
 * with the input, so the same card always renders to the same bytes.
 *
 * v0.3 is the legacy (A2A 0.3) shape, for clients that still read /.well-known/agent.json.
 */
import type {
  AgentCapabilities,
  AgentCard,
  AgentExtension,
  AgentInterface,
  AgentSkill,
  OAuthFlows,
  SecurityRequirement,
  SecurityScheme,
} from './schema.ts';

type Json = Record<string, unknown>;

/** Sets `key` only when the value is not the proto3 default (undefined, "", false, 0, [], {}). */
function setIfNotDefault(out: Json, key: string, value: unknown): void {
  if (value === undefined || value === '' || value === false || value === 0) return;
  if (Array.isArray(value) && value.length === 0) return;
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0)
    return;
  out[key] = value;
}

const strings = (list: readonly string[]): string[] => list.slice();
const stringMap = (map: Readonly<Record<string, string>>): Record<string, string> => ({ ...map });
/** A protobuf Struct (extension params, signature header): copied as plain JSON. */
const struct = (value: Readonly<Record<string, unknown>>): Json => structuredClone(value) as Json;

function renderInterface(i: AgentInterface): Json {
  const out: Json = { url: i.url, protocolBinding: i.protocolBinding };
  setIfNotDefault(out, 'tenant', i.tenant);
  out.protocolVersion = i.protocolVersion;
  return out;
}

function renderExtension(e: AgentExtension): Json {
  const out: Json = {};
  setIfNotDefault(out, 'uri', e.uri);
  setIfNotDefault(out, 'description', e.description);
  setIfNotDefault(out, 'required', e.required);
  if (e.params !== undefined) out.params = struct(e.params);
  return out;
}

function renderCapabilities(c: AgentCapabilities): Json {
  const out: Json = {};
  // Presence-tracked booleans: kept when set, including false.
  if (c.streaming !== undefined) out.streaming = c.streaming;
  if (c.pushNotifications !== undefined) out.pushNotifications = c.pushNotifications;
  if (c.extensions?.length) out.extensions = c.extensions.map(renderExtension);
  if (c.extendedAgentCard !== undefined) out.extendedAgentCard = c.extendedAgentCard;
  return out;
}

function renderFlows(f: OAuthFlows): Json {
  const out: Json = {};
  if (f.authorizationCode) {
    const a = f.authorizationCode;
    const flow: Json = { authorizationUrl: a.authorizationUrl, tokenUrl: a.tokenUrl };
    setIfNotDefault(flow, 'refreshUrl', a.refreshUrl);
    flow.scopes = stringMap(a.scopes);
    setIfNotDefault(flow, 'pkceRequired', a.pkceRequired);
    out.authorizationCode = flow;
  } else if (f.clientCredentials) {
    const c = f.clientCredentials;
    const flow: Json = { tokenUrl: c.tokenUrl };
    setIfNotDefault(flow, 'refreshUrl', c.refreshUrl);
    flow.scopes = stringMap(c.scopes);
    out.clientCredentials = flow;
  } else if (f.implicit) {
    const i = f.implicit;
    const flow: Json = {};
    setIfNotDefault(flow, 'authorizationUrl', i.authorizationUrl);
    setIfNotDefault(flow, 'refreshUrl', i.refreshUrl);
    setIfNotDefault(flow, 'scopes', i.scopes && stringMap(i.scopes));
    out.implicit = flow;
  } else if (f.password) {
    const p = f.password;
    const flow: Json = {};
    setIfNotDefault(flow, 'tokenUrl', p.tokenUrl);
    setIfNotDefault(flow, 'refreshUrl', p.refreshUrl);
    setIfNotDefault(flow, 'scopes', p.scopes && stringMap(p.scopes));
    out.password = flow;
  } else if (f.deviceCode) {
    const d = f.deviceCode;
    const flow: Json = { deviceAuthorizationUrl: d.deviceAuthorizationUrl, tokenUrl: d.tokenUrl };
    setIfNotDefault(flow, 'refreshUrl', d.refreshUrl);
    flow.scopes = stringMap(d.scopes);
    out.deviceCode = flow;
  }
  return out;
}

function renderScheme(s: SecurityScheme): Json {
  if (s.apiKeySecurityScheme) {
    const a = s.apiKeySecurityScheme;
    const inner: Json = {};
    setIfNotDefault(inner, 'description', a.description);
    inner.location = a.location;
    inner.name = a.name;
    return { apiKeySecurityScheme: inner };
  }
  if (s.httpAuthSecurityScheme) {
    const h = s.httpAuthSecurityScheme;
    const inner: Json = {};
    setIfNotDefault(inner, 'description', h.description);
    inner.scheme = h.scheme;
    setIfNotDefault(inner, 'bearerFormat', h.bearerFormat);
    return { httpAuthSecurityScheme: inner };
  }
  if (s.oauth2SecurityScheme) {
    const o = s.oauth2SecurityScheme;
    const inner: Json = {};
    setIfNotDefault(inner, 'description', o.description);
    inner.flows = renderFlows(o.flows);
    setIfNotDefault(inner, 'oauth2MetadataUrl', o.oauth2MetadataUrl);
    return { oauth2SecurityScheme: inner };
  }
  if (s.openIdConnectSecurityScheme) {
    const o = s.openIdConnectSecurityScheme;
    const inner: Json = {};
    setIfNotDefault(inner, 'description', o.description);
    inner.openIdConnectUrl = o.openIdConnectUrl;
    return { openIdConnectSecurityScheme: inner };
  }
  const inner: Json = {};
  setIfNotDefault(inner, 'description', s.mtlsSecurityScheme?.description);
  return { mtlsSecurityScheme: inner };
}

function renderRequirement(r: SecurityRequirement): Json {
  const out: Json = {};
  if (r.schemes && Object.keys(r.schemes).length > 0) {
    const schemes: Json = {};
    for (const [name, list] of Object.entries(r.schemes)) {
      const value: Json = {};
      setIfNotDefault(value, 'list', list.list && strings(list.list));
      schemes[name] = value; // map values are always written, even when empty
    }
    out.schemes = schemes;
  }
  return out;
}

function renderSkill(s: AgentSkill): Json {
  const out: Json = { id: s.id, name: s.name, description: s.description, tags: strings(s.tags) };
  setIfNotDefault(out, 'examples', s.examples && strings(s.examples));
  setIfNotDefault(out, 'inputModes', s.inputModes && strings(s.inputModes));
  setIfNotDefault(out, 'outputModes', s.outputModes && strings(s.outputModes));
  setIfNotDefault(out, 'securityRequirements', s.securityRequirements?.map(renderRequirement));
  return out;
}

function renderSchemes(schemes: AgentCard['securitySchemes']): Json | undefined {
  if (!schemes) return undefined;
  const out: Json = {};
  for (const [name, scheme] of Object.entries(schemes)) out[name] = renderScheme(scheme);
  return out;
}

/** The served A2A 1.0 card (without signatures: signCard adds them). */
export function renderV1(card: AgentCard): Record<string, unknown> {
  const out: Json = {
    name: card.name,
    description: card.description,
    supportedInterfaces: card.supportedInterfaces.map(renderInterface),
  };
  if (card.provider) out.provider = { url: card.provider.url, organization: card.provider.organization };
  out.version = card.version;
  if (card.documentationUrl !== undefined) out.documentationUrl = card.documentationUrl;
  out.capabilities = renderCapabilities(card.capabilities);
  setIfNotDefault(out, 'securitySchemes', renderSchemes(card.securitySchemes));
  setIfNotDefault(out, 'securityRequirements', card.securityRequirements?.map(renderRequirement));
  out.defaultInputModes = strings(card.defaultInputModes);
  out.defaultOutputModes = strings(card.defaultOutputModes);
  out.skills = card.skills.map(renderSkill);
  if (card.iconUrl !== undefined) out.iconUrl = card.iconUrl;
  return out;
}

// ---------------------------------------------------------------------------------------------
// v0.3 (legacy clients)

/** The v0.3 card's `protocolVersion`. */
export const V03_PROTOCOL_VERSION = '0.3.0';

function v03Scheme(s: SecurityScheme): Json {
  if (s.apiKeySecurityScheme) {
    const a = s.apiKeySecurityScheme;
    const out: Json = { type: 'apiKey' };
    setIfNotDefault(out, 'description', a.description);
    out.in = a.location;
    out.name = a.name;
    return out;
  }
  if (s.httpAuthSecurityScheme) {
    const h = s.httpAuthSecurityScheme;
    const out: Json = { type: 'http' };
    setIfNotDefault(out, 'description', h.description);
    out.scheme = h.scheme;
    setIfNotDefault(out, 'bearerFormat', h.bearerFormat);
    return out;
  }
  if (s.oauth2SecurityScheme) {
    const o = s.oauth2SecurityScheme;
    const out: Json = { type: 'oauth2' };
    setIfNotDefault(out, 'description', o.description);
    // v0.3 has no device code flow and no pkceRequired; the other flows keep their shape.
    const flows = renderFlows(o.flows);
    delete flows.deviceCode;
    if (flows.authorizationCode) delete (flows.authorizationCode as Json).pkceRequired;
    for (const name of ['implicit', 'password'] as const) {
      if (flows[name]) (flows[name] as Json).scopes ??= {};
    }
    out.flows = flows;
    setIfNotDefault(out, 'oauth2MetadataUrl', o.oauth2MetadataUrl);
    return out;
  }
  if (s.openIdConnectSecurityScheme) {
    const o = s.openIdConnectSecurityScheme;
    const out: Json = { type: 'openIdConnect' };
    setIfNotDefault(out, 'description', o.description);
    out.openIdConnectUrl = o.openIdConnectUrl;
    return out;
  }
  const out: Json = { type: 'mutualTLS' };
  setIfNotDefault(out, 'description', s.mtlsSecurityScheme?.description);
  return out;
}

/** v1.0 `{schemes: {name: {list}}}` -> v0.3 `{name: [scopes]}`. */
const v03Requirement = (r: SecurityRequirement): Record<string, string[]> =>
  Object.fromEntries(Object.entries(r.schemes ?? {}).map(([name, l]) => [name, strings(l.list ?? [])]));

function v03Skill(s: AgentSkill): Json {
  const out: Json = { id: s.id, name: s.name, description: s.description, tags: strings(s.tags) };
  setIfNotDefault(out, 'examples', s.examples && strings(s.examples));
  setIfNotDefault(out, 'inputModes', s.inputModes && strings(s.inputModes));
  setIfNotDefault(out, 'outputModes', s.outputModes && strings(s.outputModes));
  setIfNotDefault(out, 'security', s.securityRequirements?.map(v03Requirement));
  return out;
}

/**
 * The v0.3-shaped card. Its interfaces are those declaring protocol version 0.x (a 0.3 client
 * cannot talk to a 1.0-only endpoint); when there is none, all interfaces, so that the legacy
 * card still names the agent's endpoints. `url`/`preferredTransport` come from the first one.
 */
export function renderV03(card: AgentCard): Record<string, unknown> {
  const legacy = card.supportedInterfaces.filter((i) => /^0\./.test(i.protocolVersion));
  const interfaces = legacy.length > 0 ? legacy : card.supportedInterfaces;
  const first = interfaces[0]!;
  const out: Json = {
    protocolVersion: V03_PROTOCOL_VERSION,
    name: card.name,
    description: card.description,
    url: first.url,
    preferredTransport: first.protocolBinding,
  };
  if (interfaces.length > 1) {
    out.additionalInterfaces = interfaces.map((i) => ({ url: i.url, transport: i.protocolBinding }));
  }
  if (card.provider) out.provider = { organization: card.provider.organization, url: card.provider.url };
  out.version = card.version;
  if (card.documentationUrl !== undefined) out.documentationUrl = card.documentationUrl;
  if (card.iconUrl !== undefined) out.iconUrl = card.iconUrl;
  const caps: Json = {};
  if (card.capabilities.streaming !== undefined) caps.streaming = card.capabilities.streaming;
  if (card.capabilities.pushNotifications !== undefined)
    caps.pushNotifications = card.capabilities.pushNotifications;
  if (card.capabilities.extensions?.length)
    caps.extensions = card.capabilities.extensions.map(renderExtension);
  out.capabilities = caps;
  if (card.securitySchemes && Object.keys(card.securitySchemes).length > 0) {
    out.securitySchemes = Object.fromEntries(
      Object.entries(card.securitySchemes).map(([name, s]) => [name, v03Scheme(s)]),
    );
  }
  setIfNotDefault(out, 'security', card.securityRequirements?.map(v03Requirement));
  out.defaultInputModes = strings(card.defaultInputModes);
  out.defaultOutputModes = strings(card.defaultOutputModes);
  out.skills = card.skills.map(v03Skill);
  if (card.capabilities.extendedAgentCard !== undefined) {
    out.supportsAuthenticatedExtendedCard = card.capabilities.extendedAgentCard;
  }
  return out;
}
