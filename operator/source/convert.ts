/**
 * A card read from an agent, in the A2A 1.0 shape whatever the agent served (pure). A2A 0.3
 * cards (spec v0.3.0, section 5.5 "AgentCard Object Structure") name their main endpoint with a
 * top-level `url` and `preferredTransport`, more in `additionalInterfaces`, tag security schemes
 * with `type` and list requirements in `security`; A2A 1.0 (section 4.4.1) lists
 * `supportedInterfaces` with a `protocolVersion` each, wraps each scheme in a one-field union and
 * lists `securityRequirements`. The fields both versions share are copied as they are; whatever
 * else the agent serves is kept too, so that validation names it (spec.remove drops it).
 */

type Json = Record<string, unknown>;

export type SourceShape = '1.0' | '0.3';

export interface ConvertedCard {
  /** The card in the 1.0 shape, without `signatures`. */
  card: Json;
  /** The shape the agent served. */
  protocolVersion: SourceShape;
  /** The `signatures` the agent served (verified against the card as served, not this one). */
  signatures?: unknown[];
}

const isObject = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);

/** 0.3 fields with no place in a 1.0 card once converted. */
const V03_ONLY = [
  'url',
  'preferredTransport',
  'additionalInterfaces',
  'protocolVersion',
  'supportsAuthenticatedExtendedCard',
  'security',
] as const;

/** Which shape a card is in: 1.0 lists supportedInterfaces; 0.3 has a top-level url. */
export function sourceShape(card: Json): SourceShape {
  if (Array.isArray(card.supportedInterfaces)) return '1.0';
  if (typeof card.url === 'string' || typeof card.preferredTransport === 'string') return '0.3';
  // Neither: the 1.0 validation will say supportedInterfaces is missing.
  return '1.0';
}

/** "0.3.0" -> "0.3": interfaces carry the protocol's major.minor (A2A 1.0 section 4.4.6). */
function majorMinor(version: unknown): string {
  const match = typeof version === 'string' ? /^(\d+)\.(\d+)/.exec(version) : null;
  return match ? `${match[1]}.${match[2]}` : '0.3';
}

/** A 0.3 `{name: [scopes]}` requirement -> 1.0 `{schemes: {name: {list: [scopes]}}}`. */
function requirement(r: unknown): unknown {
  if (!isObject(r)) return r;
  return {
    schemes: Object.fromEntries(
      Object.entries(r).map(([name, scopes]) => [name, { list: Array.isArray(scopes) ? scopes : [] }]),
    ),
  };
}

/** A 0.3 `type`-tagged security scheme -> the 1.0 one-field union. Unknown types stay as they are. */
function scheme(s: unknown): unknown {
  if (!isObject(s) || typeof s.type !== 'string') return s;
  const { type, ...rest } = s;
  const description = typeof rest.description === 'string' ? { description: rest.description } : {};
  switch (type) {
    case 'apiKey':
      return { apiKeySecurityScheme: { ...description, location: rest.in, name: rest.name } };
    case 'http':
      return {
        httpAuthSecurityScheme: {
          ...description,
          scheme: rest.scheme,
          ...(rest.bearerFormat !== undefined ? { bearerFormat: rest.bearerFormat } : {}),
        },
      };
    case 'oauth2':
      return {
        oauth2SecurityScheme: {
          ...description,
          flows: rest.flows,
          ...(rest.oauth2MetadataUrl !== undefined ? { oauth2MetadataUrl: rest.oauth2MetadataUrl } : {}),
        },
      };
    case 'openIdConnect':
      return { openIdConnectSecurityScheme: { ...description, openIdConnectUrl: rest.openIdConnectUrl } };
    case 'mutualTLS':
      return { mtlsSecurityScheme: { ...description } };
    default:
      return s;
  }
}

function skill(s: unknown): unknown {
  if (!isObject(s) || s.security === undefined) return s;
  const { security, ...rest } = s;
  return {
    ...rest,
    ...(Array.isArray(security) ? { securityRequirements: security.map(requirement) } : {}),
  };
}

/** The 1.0 interfaces of a 0.3 card: `url` first (it is preferred), then the others, deduplicated. */
function interfaces(card: Json): Json[] {
  const version = majorMinor(card.protocolVersion);
  const out: Json[] = [];
  const seen = new Set<string>();
  const add = (url: unknown, binding: unknown) => {
    if (typeof url !== 'string') return;
    const protocolBinding = typeof binding === 'string' && binding ? binding : 'JSONRPC';
    const key = `${protocolBinding} ${url}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push({ url, protocolBinding, protocolVersion: version });
  };
  add(card.url, card.preferredTransport);
  if (Array.isArray(card.additionalInterfaces)) {
    for (const i of card.additionalInterfaces) if (isObject(i)) add(i.url, i.transport);
  }
  return out;
}

/** Converts a 0.3 card to 1.0 (anything else is returned as it is, without `signatures`). */
export function toV1(served: Json): ConvertedCard {
  const { signatures, ...card } = served;
  const sigs = Array.isArray(signatures) ? { signatures } : {};
  const shape = sourceShape(card);
  if (shape === '1.0') return { card, protocolVersion: '1.0', ...sigs };

  const out: Json = {};
  for (const [key, value] of Object.entries(card)) {
    if (!(V03_ONLY as readonly string[]).includes(key)) out[key] = value;
  }
  out.supportedInterfaces = interfaces(card);
  if (isObject(card.provider)) {
    // 0.3's provider has organization and url, as 1.0's; some agents also send "name".
    const { name: _name, ...provider } = card.provider;
    out.provider = provider;
  }
  const capabilities: Json = isObject(card.capabilities) ? { ...card.capabilities } : {};
  delete capabilities.stateTransitionHistory; // removed in 1.0
  if (typeof card.supportsAuthenticatedExtendedCard === 'boolean' && card.supportsAuthenticatedExtendedCard) {
    capabilities.extendedAgentCard = true;
  }
  out.capabilities = capabilities;
  if (isObject(card.securitySchemes)) {
    out.securitySchemes = Object.fromEntries(
      Object.entries(card.securitySchemes).map(([name, s]) => [name, scheme(s)]),
    );
  }
  if (Array.isArray(card.security)) out.securityRequirements = card.security.map(requirement);
  if (Array.isArray(card.skills)) out.skills = card.skills.map(skill);
  return { card: out, protocolVersion: '0.3', ...sigs };
}
