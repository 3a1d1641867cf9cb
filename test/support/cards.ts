/** Cards shared by the tests, and the vendored signing vectors (test/fixtures/conformance). */
import { readFileSync } from 'node:fs';
import { fixturePath } from './paths.ts';

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

/**
 * A realistic customer-support card (the card benchmark's input). It still carries the pre-1.0
 * `security` field, which the input schema tolerates and the linter reports.
 */
export function customerSupportCard(): Record<string, unknown> {
  return JSON.parse(readFileSync(fixturePath('cards/customer-support.json'), 'utf8')) as Record<
    string,
    unknown
  >;
}

export const vectors = () =>
  JSON.parse(readFileSync(fixturePath('conformance/card-signing-vectors.json'), 'utf8')) as {
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

/** The A2A 1.0 card (spec.card) most controller tests publish: one JSON-RPC interface, one skill. */
export function sampleCard(version = '1.0.0', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'Weather Agent',
    description: 'Answers questions about the weather forecast for a city.',
    version,
    supportedInterfaces: [
      { url: 'https://weather.example.com/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ],
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      { id: 'forecast', name: 'Forecast', description: 'Gives the forecast for a city', tags: ['weather'] },
    ],
    ...extra,
  };
}
