/* eslint-disable @typescript-eslint/no-explicit-any -- the tests edit cards as loosely typed JSON */
import { describe, expect, it } from 'vitest';
import { renderV03, renderV1 } from '../../../operator/card/render.ts';
import { serializeCard } from '../../../operator/card/serialize.ts';
import { validateCard } from '../../../operator/card/validate.ts';
import type { AgentCard } from '../../../operator/card/schema.ts';
import { agentCardValidator, missingRequired } from '../../support/conformance.ts';
import { fullCard, minimalCard, customerSupportCard } from '../../support/cards.ts';

const valid = (input: unknown): AgentCard => {
  const r = validateCard(input);
  if (!r.card) throw new Error(JSON.stringify(r.problems));
  return r.card;
};

describe('renderV1', () => {
  const conforms = agentCardValidator();

  it('produces cards that validate against the A2A 1.0 JSON Schema, required fields included', () => {
    for (const input of [minimalCard(), fullCard(), customerSupportCard()]) {
      const rendered = renderV1(valid(input));
      expect(conforms(rendered)).toEqual([]);
      expect(missingRequired(rendered)).toEqual([]);
    }
  });

  it('the conformance check itself catches bad cards', () => {
    const rendered = renderV1(valid(minimalCard()));
    expect(conforms({ ...rendered, url: 'https://x.example' })).not.toEqual([]);
    const { version: _v, ...noVersion } = rendered;
    expect(missingRequired(noVersion)).toEqual(['$.version']);
  });

  it('keeps required fields even when empty', () => {
    const input: Record<string, any> = {
      ...minimalCard(),
      description: '',
      skills: [],
      defaultInputModes: [],
    };
    input.capabilities = {};
    const rendered = renderV1(valid(input));
    expect(rendered.description).toBe('');
    expect(rendered.skills).toEqual([]);
    expect(rendered.defaultInputModes).toEqual([]);
    expect(rendered.capabilities).toEqual({});
    expect(conforms(rendered)).toEqual([]);
  });

  it('keeps presence-tracked optionals exactly when set, false included', () => {
    const unset = renderV1(valid({ ...minimalCard(), capabilities: {} }));
    expect(unset.capabilities).toEqual({});
    expect(unset).not.toHaveProperty('documentationUrl');
    expect(unset).not.toHaveProperty('iconUrl');
    const set = renderV1(
      valid({
        ...minimalCard(),
        capabilities: { streaming: false, pushNotifications: false, extendedAgentCard: false },
        documentationUrl: 'https://docs.example.com',
        iconUrl: 'https://example.com/i.png',
      }),
    );
    expect(set.capabilities).toEqual({
      streaming: false,
      pushNotifications: false,
      extendedAgentCard: false,
    });
    expect(set.documentationUrl).toBe('https://docs.example.com');
    expect(set.iconUrl).toBe('https://example.com/i.png');
  });

  it('omits other fields that hold their default', () => {
    const input: Record<string, any> = minimalCard();
    input.supportedInterfaces[0].tenant = '';
    input.skills[0] = {
      ...input.skills[0],
      examples: [],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    };
    input.securitySchemes = {
      key: { apiKeySecurityScheme: { description: '', location: 'header', name: 'X-Key' } },
      code: {
        oauth2SecurityScheme: {
          description: '',
          flows: {
            authorizationCode: {
              authorizationUrl: 'https://a.example/authorize',
              tokenUrl: 'https://a.example/token',
              scopes: { read: 'Read' },
              pkceRequired: false,
            },
          },
        },
      },
    };
    input.securityRequirements = [];
    input.capabilities = {
      streaming: true,
      extensions: [{ uri: 'https://x.example/e', description: '', required: false }],
    };
    const rendered = renderV1(valid(input)) as Record<string, any>;
    expect(rendered.supportedInterfaces[0]).toEqual({
      url: 'https://recipes.example.com/a2a',
      protocolBinding: 'JSONRPC',
      protocolVersion: '1.0',
    });
    expect(Object.keys(rendered.skills[0])).toEqual(['id', 'name', 'description', 'tags']);
    expect(rendered.securitySchemes.key).toEqual({
      apiKeySecurityScheme: { location: 'header', name: 'X-Key' },
    });
    expect(rendered.securitySchemes.code.oauth2SecurityScheme.flows.authorizationCode).not.toHaveProperty(
      'pkceRequired',
    );
    expect(rendered).not.toHaveProperty('securityRequirements');
    expect(rendered.capabilities.extensions).toEqual([{ uri: 'https://x.example/e' }]);
  });

  it('drops pre-1.0 fields', () => {
    const rendered = renderV1(
      valid({ ...minimalCard(), url: 'https://recipes.example.com/a2a', security: [] }),
    );
    expect(rendered).not.toHaveProperty('url');
    expect(rendered).not.toHaveProperty('security');
  });

  it('is deterministic: same content, same bytes, whatever the input key order', () => {
    const a = fullCard();
    const shuffled = Object.fromEntries(Object.entries(fullCard()).reverse());
    const bytes = serializeCard(renderV1(valid(a)));
    expect(serializeCard(renderV1(valid(shuffled)))).toBe(bytes);
    expect(serializeCard(renderV1(valid(fullCard())))).toBe(bytes);
    // key order of the rendered object follows the protobuf field order
    expect(Object.keys(renderV1(valid(shuffled)))).toEqual([
      'name',
      'description',
      'supportedInterfaces',
      'provider',
      'version',
      'documentationUrl',
      'capabilities',
      'securitySchemes',
      'securityRequirements',
      'defaultInputModes',
      'defaultOutputModes',
      'skills',
      'iconUrl',
    ]);
  });

  it('does not share objects with its input', () => {
    const card = valid(fullCard());
    const rendered = renderV1(card) as Record<string, any>;
    rendered.capabilities.extensions[0].params.units = 'imperial';
    rendered.skills[0].tags.push('changed');
    expect(serializeCard(renderV1(card))).not.toContain('imperial');
    expect(card.skills[0]!.tags).not.toContain('changed');
  });
});

describe('renderV03', () => {
  it('renders the legacy shape with url, preferredTransport and type-tagged schemes', () => {
    const card = renderV03(valid(fullCard())) as Record<string, any>;
    expect(card.protocolVersion).toBe('0.3.0');
    // only the 0.x interface is offered to 0.3 clients
    expect(card.url).toBe('https://geo.example.com/a2a/legacy');
    expect(card.preferredTransport).toBe('JSONRPC');
    expect(card).not.toHaveProperty('additionalInterfaces');
    expect(card).not.toHaveProperty('supportedInterfaces');
    expect(card.supportsAuthenticatedExtendedCard).toBe(true);
    expect(card.capabilities).toEqual({
      streaming: true,
      pushNotifications: false,
      extensions: [expect.objectContaining({ uri: 'https://example.com/ext/geo/v1' })],
    });
    expect(card.securitySchemes.apiKey).toEqual({
      type: 'apiKey',
      description: 'Partner key',
      in: 'header',
      name: 'X-API-Key',
    });
    expect(card.securitySchemes.bearer).toEqual({ type: 'http', scheme: 'Bearer', bearerFormat: 'JWT' });
    expect(card.securitySchemes.oidc.type).toBe('openIdConnect');
    expect(card.securitySchemes.mtls).toEqual({
      type: 'mutualTLS',
      description: 'Client certificates from the partner CA',
    });
    expect(card.securitySchemes.oauthCode.type).toBe('oauth2');
    expect(card.securitySchemes.oauthCode.flows.authorizationCode).not.toHaveProperty('pkceRequired');
    expect(card.securitySchemes.oauthDevice.flows).toEqual({}); // no device code flow in 0.3
    expect(card.security).toEqual([
      { oauthCode: ['route:read'] },
      { apiKey: ['partner'], mtls: ['partner'] },
    ]);
    expect(card.skills[0].security).toEqual([{ oauthClient: ['agent.invoke'] }]);
  });

  it('falls back to all interfaces when none declares 0.x, the first being the url', () => {
    const input: Record<string, any> = fullCard();
    input.supportedInterfaces = input.supportedInterfaces.slice(0, 2);
    const card = renderV03(valid(input)) as Record<string, any>;
    expect(card.url).toBe('https://geo.example.com/a2a/v1');
    expect(card.additionalInterfaces).toEqual([
      { url: 'https://geo.example.com/a2a/v1', transport: 'JSONRPC' },
      { url: 'https://geo.example.com/a2a/rest', transport: 'HTTP+JSON' },
    ]);
  });

  it('is not a valid v1.0 card (the shapes must not mix)', () => {
    expect(agentCardValidator()(renderV03(valid(minimalCard())))).not.toEqual([]);
  });
});
