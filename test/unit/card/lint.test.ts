/* eslint-disable @typescript-eslint/no-explicit-any -- the tests edit cards as loosely typed JSON */
import { describe, expect, it } from 'vitest';
import { credentialKind } from '../../../operator/card/credentials.ts';
import { isGenericName } from '../../../operator/card/lint.ts';
import { validateCard } from '../../../operator/card/validate.ts';
import { fullCard, minimalCard } from '../../support/cards.ts';

type Card = Record<string, any>;
const warnings = (card: unknown, strict = false) =>
  validateCard(card, { strict }).problems.filter((p) => p.severity === 'warning');
const lintOf = (card: unknown) =>
  Object.fromEntries(validateCard(card).problems.map((p) => [p.path, `${p.severity}: ${p.message}`]));

describe('lint warnings', () => {
  it('has none for well-formed cards', () => {
    expect(warnings(minimalCard())).toEqual([]);
    expect(warnings(fullCard())).toEqual([]);
  });

  it('warns about non-https interface URLs', () => {
    const card: Card = minimalCard();
    card.supportedInterfaces.push({
      url: 'http://recipes.example.com/rest',
      protocolBinding: 'HTTP+JSON',
      protocolVersion: '1.0',
    });
    expect(lintOf(card)['supportedInterfaces[1].url']).toMatch(/^warning: not an https URL/);
  });

  it('warns about generic names', () => {
    for (const name of ['AI Assistant', 'My Agent', 'agent', 'Chatbot 2', 'Test-Bot', 'Example Agent']) {
      expect(isGenericName(name), name).toBe(true);
    }
    for (const name of ['Recipe Agent', 'GeoSpatial Route Planner', 'Klantenondersteuningsagent']) {
      expect(isGenericName(name), name).toBe(false);
    }
    expect(lintOf({ ...minimalCard(), name: 'AI Assistant' }).name).toMatch(
      /^warning: "AI Assistant" is a generic name/,
    );
  });

  it('warns about a description under 20 characters', () => {
    expect(lintOf({ ...minimalCard(), description: 'Cooks things.' }).description).toMatch(
      /shorter than 20 characters/,
    );
    expect(lintOf({ ...minimalCard(), description: 'Cooks things for you.' }).description).toBeUndefined();
  });

  it('warns about a card over 10 KB', () => {
    const card: Card = minimalCard();
    card.skills = Array.from({ length: 40 }, (_, i) => ({
      id: `skill-${i}`,
      name: `Skill ${i}`,
      description: 'A skill with a long description. '.repeat(8),
      tags: ['tag'],
    }));
    expect(lintOf(card)['(card)']).toMatch(/^warning: the card is \d+ bytes .* over 10 KB/);
    expect(lintOf(minimalCard())['(card)']).toBeUndefined();
  });

  it('warns about duplicate interfaces', () => {
    const card: Card = minimalCard();
    card.supportedInterfaces.push({ ...card.supportedInterfaces[0] });
    expect(lintOf(card)['supportedInterfaces[1]']).toBe('warning: duplicate of supportedInterfaces[0]');
    // a different tenant is another interface
    card.supportedInterfaces[1].tenant = 'eu';
    expect(lintOf(card)['supportedInterfaces[1]']).toBeUndefined();
  });

  it('warns about an oauth2MetadataUrl (and other authorization URLs) without TLS', () => {
    const card: Card = fullCard();
    card.securitySchemes.oauthCode.oauth2SecurityScheme.oauth2MetadataUrl =
      'http://auth.example.com/.well-known/x';
    card.securitySchemes.oauthClient.oauth2SecurityScheme.flows.clientCredentials.tokenUrl =
      'http://auth.example.com/t';
    card.securitySchemes.oidc.openIdConnectSecurityScheme.openIdConnectUrl = 'http://accounts.example.com/x';
    const lint = lintOf(card);
    expect(lint['securitySchemes.oauthCode.oauth2SecurityScheme.oauth2MetadataUrl']).toMatch(
      /^warning: .*TLS/,
    );
    expect(lint['securitySchemes.oauthClient.oauth2SecurityScheme.flows.clientCredentials.tokenUrl']).toMatch(
      /TLS/,
    );
    expect(lint['securitySchemes.oidc.openIdConnectSecurityScheme.openIdConnectUrl']).toMatch(/TLS/);
  });

  it('warns about every empty value, required ones included (signature interop)', () => {
    const card: Card = minimalCard();
    card.description = '';
    card.skills = [];
    card.capabilities = {};
    card.defaultOutputModes = [];
    card.securitySchemes = {
      mtls: { mtlsSecurityScheme: {} },
      cc: {
        oauth2SecurityScheme: { flows: { clientCredentials: { tokenUrl: 'https://t.example', scopes: {} } } },
      },
    };
    card.securityRequirements = [{ schemes: { mtls: { list: [] } } }];
    const empty = warnings(card)
      .filter((p) => /empty value/.test(p.message))
      .map((p) => p.path);
    expect(empty.sort()).toEqual(
      [
        'description',
        'skills',
        'capabilities',
        'defaultOutputModes',
        'securitySchemes.mtls.mtlsSecurityScheme',
        'securitySchemes.cc.oauth2SecurityScheme.flows.clientCredentials.scopes',
        'securityRequirements[0].schemes.mtls',
      ].sort(),
    );
    // Defaults of optional fields are simply left out of the rendered card: no warning.
    const optional: Card = { ...minimalCard(), securitySchemes: {}, securityRequirements: [] };
    optional.skills[0].examples = [];
    optional.supportedInterfaces[0].tenant = '';
    expect(warnings(optional)).toEqual([]);
  });

  it('--strict turns every warning into an error and withholds the card', () => {
    const card = { ...minimalCard(), name: 'Bot', description: 'Short' };
    expect(validateCard(card).card).toBeDefined();
    const strict = validateCard(card, { strict: true });
    expect(strict.card).toBeUndefined();
    expect(strict.problems.map((p) => p.severity)).toEqual(['error', 'error']);
  });
});

describe('credential detection (always an error)', () => {
  const secrets: [string, string][] = [
    ['-----BEGIN PRIVATE KEY-----\nMIIEvQ...\n-----END PRIVATE KEY-----', 'private key'],
    ['-----BEGIN EC PRIVATE KEY-----', 'private key'],
    [
      'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
      'JSON Web Token',
    ],
    ['Authorization: Bearer 8f2a9c4e1b7d6f3a0e5c9b2d4f6a8c1e', 'bearer token'],
    ['sk-proj-abcdefghijklmnopqrstuvwxyz0123456789', 'sk-'],
    ['sk_live_51H8abcdefghijklmnop', 'Stripe'],
    ['ghp_abcdefghijklmnopqrstuvwxyz0123456789', 'GitHub'],
    ['github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS', 'GitHub'],
    ['xoxb-123456789012-abcdefghijkl', 'Slack'],
    ['AKIAIOSFODNN7EXAMPLE', 'AWS'],
    ['AIzaSyA1234567890abcdefghijklmnopqrstuv', 'Google'],
    ['glpat-abcdefghijklmnopqrst', 'GitLab'],
    ['https://user:hunter22@agent.example.com/a2a', 'password in a URL'],
    ['https://agent.example.com/a2a?api_key=0123456789abcdef', 'query parameter "api_key"'],
  ];

  it.each(secrets)('finds %s', (text, kind) => {
    expect(credentialKind(text)).toContain(kind);
  });

  it('does not flag ordinary card text', () => {
    for (const text of [
      'Bearer',
      'Use Bearer tokens issued by our identity provider',
      'risk-assessment-and-mitigation-planning-tool',
      'https://api.example.com/a2a?version=2',
      'https://auth.example.com/token',
      'JWT',
      'Helps with tasks; see the docs for authentication.',
    ]) {
      expect(credentialKind(text), text).toBeUndefined();
    }
  });

  it('reports the path and kind, never the secret, even in strict-free mode and in keys', () => {
    const secret = 'ghp_abcdefghijklmnopqrstuvwxyz0123456789';
    const card: Card = minimalCard();
    card.skills[0].examples = [`clone with ${secret}`];
    card.capabilities.extensions = [
      {
        uri: 'https://x.example/ext',
        params: { [secret]: '', jwk: { kty: 'EC', crv: 'P-256', d: 'abc', x: 'x', y: 'y' } },
      },
    ];
    const r = validateCard(card);
    expect(r.card).toBeUndefined();
    const found = r.problems.filter((p) => p.severity === 'error');
    expect(found.map((p) => p.path).sort()).toEqual(
      [
        'skills[0].examples[0]',
        'capabilities.extensions[0].params["<redacted>"]',
        'capabilities.extensions[0].params.jwk',
      ].sort(),
    );
    for (const p of found) expect(p.message).toMatch(/^looks like .*; a card is public/);
    for (const p of r.problems)
      expect(JSON.stringify(p)).not.toContain('abcdefghijklmnopqrstuvwxyz0123456789');
  });

  it('still finds credentials in a card that fails the schema', () => {
    const r = validateCard({ name: 'x', description: 'token sk-abcdefghijklmnopqrstuvwxyz012345' });
    expect(r.problems).toContainEqual(expect.objectContaining({ path: 'description', severity: 'error' }));
  });
});
