/** Cards shared by the card-engine tests, and paths of the shared conformance data. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The repository root. */
export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
/** A path in the shared data that sits next to the checkout (../shared). */
export const sharedPath = (rel: string): string =>
  fileURLToPath(new URL(`../../../../shared/${rel}`, import.meta.url));

/** A small valid card with no empty values. */
export function minimalCard(): Record<string, unknown> {
  return {
    name: 'Recipe Agent',
    description: 'Finds recipes and answers cooking questions.',
    supportedInterfaces: [
      { url: 'https://recipes.example.com/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ],
    version: '1.0.0',
    capabilities: { streaming: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'find-recipe',
        name: 'Find recipe',
        description: 'Finds a recipe by ingredients.',
        tags: ['cooking'],
      },
    ],
  };
}

/** A card that uses every message of the A2A 1.0 card model, with no empty values. */
export function fullCard(): Record<string, unknown> {
  return {
    name: 'GeoSpatial Route Planner',
    description: 'Plans routes with live traffic, analyses traffic and renders custom maps.',
    supportedInterfaces: [
      { url: 'https://geo.example.com/a2a/v1', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      {
        url: 'https://geo.example.com/a2a/rest',
        protocolBinding: 'HTTP+JSON',
        protocolVersion: '1.0',
        tenant: 'eu',
      },
      { url: 'https://grpc.geo.example.com', protocolBinding: 'GRPC', protocolVersion: '1.0' },
      { url: 'https://geo.example.com/a2a/legacy', protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ],
    provider: { organization: 'Example Geo Services Inc.', url: 'https://www.examplegeoservices.com' },
    version: '1.2.0',
    documentationUrl: 'https://docs.examplegeoservices.com/agent',
    capabilities: {
      streaming: true,
      pushNotifications: false,
      extendedAgentCard: true,
      extensions: [
        {
          uri: 'https://example.com/ext/geo/v1',
          description: 'Geo hints',
          required: true,
          params: {
            precision: 0.5,
            units: 'metric',
            layers: ['traffic', 'tolls'],
            nested: { on: true, n: 3 },
          },
        },
      ],
    },
    securitySchemes: {
      apiKey: { apiKeySecurityScheme: { description: 'Partner key', location: 'header', name: 'X-API-Key' } },
      bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'JWT' } },
      oauthCode: {
        oauth2SecurityScheme: {
          description: 'User login',
          flows: {
            authorizationCode: {
              authorizationUrl: 'https://auth.example.com/authorize',
              tokenUrl: 'https://auth.example.com/token',
              refreshUrl: 'https://auth.example.com/refresh',
              scopes: { 'route:read': 'Read routes' },
              pkceRequired: true,
            },
          },
          oauth2MetadataUrl: 'https://auth.example.com/.well-known/oauth-authorization-server',
        },
      },
      oauthClient: {
        oauth2SecurityScheme: {
          flows: {
            clientCredentials: {
              tokenUrl: 'https://auth.example.com/token',
              scopes: { 'agent.invoke': 'Invoke' },
            },
          },
        },
      },
      oauthDevice: {
        oauth2SecurityScheme: {
          flows: {
            deviceCode: {
              deviceAuthorizationUrl: 'https://auth.example.com/device',
              tokenUrl: 'https://auth.example.com/token',
              scopes: { 'route:read': 'Read routes' },
            },
          },
        },
      },
      oauthImplicit: {
        oauth2SecurityScheme: {
          flows: {
            implicit: { authorizationUrl: 'https://auth.example.com/authorize', scopes: { read: 'Read' } },
          },
        },
      },
      oauthPassword: {
        oauth2SecurityScheme: {
          flows: { password: { tokenUrl: 'https://auth.example.com/token', scopes: { read: 'Read' } } },
        },
      },
      oidc: {
        openIdConnectSecurityScheme: {
          openIdConnectUrl: 'https://accounts.example.com/.well-known/openid-configuration',
        },
      },
      mtls: { mtlsSecurityScheme: { description: 'Client certificates from the partner CA' } },
    },
    securityRequirements: [
      { schemes: { oauthCode: { list: ['route:read'] } } },
      { schemes: { apiKey: { list: ['partner'] }, mtls: { list: ['partner'] } } },
    ],
    defaultInputModes: ['application/json', 'text/plain'],
    defaultOutputModes: ['application/json', 'image/png'],
    skills: [
      {
        id: 'route-optimizer-traffic',
        name: 'Traffic-aware route optimizer',
        description: 'Computes optimal driving routes using live traffic.',
        tags: ['maps', 'routing', 'traffic'],
        examples: ['Plan a route from A to B avoiding tolls.'],
        inputModes: ['application/json'],
        outputModes: ['application/json', 'image/png'],
        securityRequirements: [{ schemes: { oauthClient: { list: ['agent.invoke'] } } }],
      },
      {
        id: 'custom-map',
        name: 'Custom map generator',
        description: 'Renders a map with the requested layers.',
        tags: ['maps'],
      },
    ],
    iconUrl: 'https://geo.example.com/icon.png',
  };
}

/** The customer-support card of seed 002 (the benchmark card), extracted from the seed text. */
export function seedCard(): Record<string, unknown> {
  const text = readFileSync(sharedPath('seeds/002_c297d45a81eee8e4.txt'), 'utf8');
  return extractJsonObject(text, '"name": "Klantenondersteuningsagent"');
}

/** The JSON object in `text` that contains `marker` (brace matching from the `{` before it). */
export function extractJsonObject(text: string, marker: string): Record<string, unknown> {
  const at = text.indexOf(marker);
  if (at < 0) throw new Error(`marker not found: ${marker}`);
  const start = text.lastIndexOf('{', at);
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0)
      return JSON.parse(text.slice(start, i + 1)) as Record<string, unknown>;
  }
  throw new Error('unbalanced JSON object');
}

export const vectors = () =>
  JSON.parse(readFileSync(sharedPath('conformance/card-signing-vectors.json'), 'utf8')) as {
    public_jwk: Record<string, string>;
    private_jwk: Record<string, string>;
    canonicalization_cases: {
      id: string;
      agent_card: Record<string, unknown>;
      expected_jcs_payload: string;
    }[];
    signing_cases: {
      id: string;
      agent_card: Record<string, unknown>;
      protected_header: Record<string, string>;
      expected_protected_b64: string;
      expected_jcs_payload: string;
      expected_signing_input: string;
      signature: string;
    }[];
  };
