import { describe, expect, it } from 'vitest';
import { sourceShape, toV1 } from '../../../operator/source/convert.ts';
import { validateCard } from '../../../operator/card/validate.ts';
import { minimalCard } from '../../support/cards.ts';

/** The card a2a-go v0.3 serves (its JSON field names), with a few 0.3-only features. */
const v03 = () => ({
  protocolVersion: '0.3.0',
  name: 'Go Hello Agent',
  description: 'A hello agent',
  url: 'http://agent.test/invoke',
  preferredTransport: 'JSONRPC',
  additionalInterfaces: [
    { url: 'http://agent.test/invoke', transport: 'JSONRPC' },
    { url: 'agent.test:50051', transport: 'GRPC' },
  ],
  provider: { organization: 'Example', url: 'https://example.com', name: 'legacy' },
  version: '1.2.3',
  capabilities: { streaming: true, stateTransitionHistory: true },
  supportsAuthenticatedExtendedCard: true,
  securitySchemes: {
    key: { type: 'apiKey', in: 'header', name: 'X-Key', description: 'a key' },
    bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
    oidc: {
      type: 'openIdConnect',
      openIdConnectUrl: 'https://id.example.com/.well-known/openid-configuration',
    },
    mtls: { type: 'mutualTLS' },
  },
  security: [{ bearer: [] }, { key: [], oidc: ['read'] }],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [
    { id: 'hello', name: 'Hello', description: 'Says hello', tags: ['hello'], security: [{ key: [] }] },
  ],
  signatures: [{ protected: 'x', signature: 'y' }],
});

describe('0.3 to 1.0', () => {
  it('tells the shapes apart', () => {
    expect(sourceShape(minimalCard())).toBe('1.0');
    expect(sourceShape(v03())).toBe('0.3');
    expect(sourceShape({ name: 'x' })).toBe('1.0');
  });

  it('converts a 0.3 card into a valid 1.0 card, field by field', () => {
    const { card, protocolVersion, signatures } = toV1(v03());
    expect(protocolVersion).toBe('0.3');
    expect(signatures).toEqual([{ protected: 'x', signature: 'y' }]);
    expect(card.supportedInterfaces).toEqual([
      { url: 'http://agent.test/invoke', protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      { url: 'agent.test:50051', protocolBinding: 'GRPC', protocolVersion: '0.3' },
    ]);
    expect(card.provider).toEqual({ organization: 'Example', url: 'https://example.com' });
    expect(card.capabilities).toEqual({ streaming: true, extendedAgentCard: true });
    expect(card.securitySchemes).toEqual({
      key: { apiKeySecurityScheme: { description: 'a key', location: 'header', name: 'X-Key' } },
      bearer: { httpAuthSecurityScheme: { scheme: 'bearer', bearerFormat: 'JWT' } },
      oidc: {
        openIdConnectSecurityScheme: {
          openIdConnectUrl: 'https://id.example.com/.well-known/openid-configuration',
        },
      },
      mtls: { mtlsSecurityScheme: {} },
    });
    expect(card.securityRequirements).toEqual([
      { schemes: { bearer: { list: [] } } },
      { schemes: { key: { list: [] }, oidc: { list: ['read'] } } },
    ]);
    expect((card.skills as Array<Record<string, unknown>>)[0]).toEqual({
      id: 'hello',
      name: 'Hello',
      description: 'Says hello',
      tags: ['hello'],
      securityRequirements: [{ schemes: { key: { list: [] } } }],
    });
    for (const gone of ['url', 'preferredTransport', 'additionalInterfaces', 'protocolVersion', 'security'])
      expect(card).not.toHaveProperty(gone);
    const checked = validateCard(card, { strict: false });
    expect(checked.problems.filter((p) => p.severity === 'error')).toEqual([]);
    expect(checked.card).toBeDefined();
  });

  it('gives a 0.3 card without preferredTransport JSON-RPC, and keeps unknown fields for validation to name', () => {
    const { preferredTransport: _p, ...card } = v03();
    const out = toV1({ ...card, custom: 1 });
    expect((out.card.supportedInterfaces as unknown[])[0]).toMatchObject({ protocolBinding: 'JSONRPC' });
    expect(out.card.custom).toBe(1);
    expect(validateCard(out.card).problems.some((p) => p.path === 'custom')).toBe(true);
  });

  it('returns a 1.0 card as it is, without its signatures', () => {
    const served = { ...minimalCard(), signatures: [{ protected: 'a', signature: 'b' }] };
    const out = toV1(served);
    expect(out.protocolVersion).toBe('1.0');
    expect(out.card).toEqual(minimalCard());
    expect(out.signatures).toHaveLength(1);
  });
});
