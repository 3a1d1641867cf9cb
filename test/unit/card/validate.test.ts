/* eslint-disable @typescript-eslint/no-explicit-any -- the tests edit cards as loosely typed JSON */
import { describe, expect, it } from 'vitest';
import { validateCard, validateSpec } from '../../../operator/card/validate.ts';
import { AgentCardSchema, AgentCardInputSchema } from '../../../operator/card/schema.ts';
import { fullCard, minimalCard, customerSupportCard } from '../../support/cards.ts';

const errors = (r: { problems: { severity: string; path: string; message: string }[] }) =>
  r.problems.filter((p) => p.severity === 'error');
const paths = (r: { problems: { path: string }[] }) => r.problems.map((p) => p.path);

describe('validateCard: the schema', () => {
  it('accepts a minimal and a full card, returning the card', () => {
    for (const input of [minimalCard(), fullCard()]) {
      const r = validateCard(input);
      expect(errors(r)).toEqual([]);
      expect(r.card).toBeDefined();
      expect(AgentCardSchema.safeParse(r.card).success).toBe(true);
    }
  });

  it('rejects unknown fields anywhere, naming each with its path', () => {
    const card = fullCard() as any;
    card.color = 'blue';
    card.supportedInterfaces[1].transport = 'JSONRPC';
    card.skills[0].level = 3;
    card.securitySchemes.apiKey.apiKeySecurityScheme.in = 'header';
    card.capabilities.extensions[0].extra = true;
    const r = validateCard(card);
    expect(r.card).toBeUndefined();
    expect(paths(r)).toEqual(
      expect.arrayContaining([
        'color',
        'supportedInterfaces[1].transport',
        'skills[0].level',
        'securitySchemes.apiKey.apiKeySecurityScheme.in',
        'capabilities.extensions[0].extra',
      ]),
    );
    for (const p of errors(r)) expect(p.message).toMatch(/^unknown field/);
  });

  it('reports missing required fields and wrong types with their paths', () => {
    const card = minimalCard() as any;
    delete card.version;
    delete card.skills[0].tags;
    card.capabilities.streaming = 'yes';
    card.supportedInterfaces[0].url = 42;
    const r = validateCard(card);
    const byPath = Object.fromEntries(errors(r).map((p) => [p.path, p.message]));
    expect(byPath.version).toBe('required field is missing');
    expect(byPath['skills[0].tags']).toBe('required field is missing');
    expect(byPath['capabilities.streaming']).toMatch(/expected boolean, got string/);
    expect(byPath['supportedInterfaces[0].url']).toMatch(/expected string, got number/);
  });

  it('requires at least one interface, unique skill ids, and absolute URLs', () => {
    const card = minimalCard() as any;
    card.supportedInterfaces = [];
    card.skills.push({ ...card.skills[0] });
    card.iconUrl = 'icon.png';
    const r = validateCard(card);
    expect(errors(r).map((p) => `${p.path}: ${p.message}`)).toEqual(
      expect.arrayContaining([
        'supportedInterfaces: must list at least one interface',
        'skills[1].id: duplicate skill id "find-recipe"',
        'iconUrl: must be an absolute URL',
      ]),
    );
  });

  it('requires exactly one member of the SecurityScheme and OAuthFlows unions', () => {
    const card = minimalCard() as any;
    card.securitySchemes = {
      none: {},
      two: { mtlsSecurityScheme: {}, httpAuthSecurityScheme: { scheme: 'Bearer' } },
      flows: { oauth2SecurityScheme: { flows: {} } },
    };
    const r = validateCard(card);
    const byPath = Object.fromEntries(errors(r).map((p) => [p.path, p.message]));
    expect(byPath['securitySchemes.none']).toMatch(/exactly one of .* must be set \(none is\)/);
    expect(byPath['securitySchemes.two']).toMatch(/found httpAuthSecurityScheme, mtlsSecurityScheme/);
    expect(byPath['securitySchemes.flows.oauth2SecurityScheme.flows']).toMatch(
      /exactly one of authorizationCode/,
    );
  });

  it('rejects non-JSON values such as Infinity in extension params', () => {
    const card = minimalCard() as any;
    card.capabilities.extensions = [{ uri: 'https://x.example/ext', params: { ratio: Infinity } }];
    expect(paths(validateCard(card))).toContain('capabilities.extensions[0].params.ratio');
  });

  it('gives a v0.3 security scheme a hint instead of a bare "unknown field"', () => {
    const card = minimalCard() as any;
    card.securitySchemes = { key: { type: 'apiKey', in: 'header', name: 'X-Key' } };
    const p = validateCard(card).problems.find((x) => x.path === 'securitySchemes.key.type');
    expect(p?.message).toMatch(/v0\.3 "type"-tagged security scheme/);
  });

  it('rejects a card that is not an object', () => {
    for (const input of [null, 42, 'card', [minimalCard()]]) {
      const r = validateCard(input);
      expect(r.card).toBeUndefined();
      expect(errors(r).length).toBeGreaterThan(0);
    }
  });

  it('tolerates pre-1.0 fields with a warning each and drops them from the card', () => {
    const card = {
      ...minimalCard(),
      url: 'https://recipes.example.com/a2a',
      preferredTransport: 'JSONRPC',
      additionalInterfaces: [{ url: 'https://recipes.example.com/a2a', transport: 'JSONRPC' }],
      protocolVersion: '0.3.0',
      supportsAuthenticatedExtendedCard: false,
      security: [{ oauth: ['read'] }],
      provider: { organization: 'Example', url: 'https://example.com', name: 'Example' },
      capabilities: { streaming: true, stateTransitionHistory: true },
    };
    const r = validateCard(card);
    expect(errors(r)).toEqual([]);
    const legacy = r.problems.filter((p) => /pre-1\.0 field/.test(p.message)).map((p) => p.path);
    expect(legacy.sort()).toEqual(
      [
        'url',
        'preferredTransport',
        'additionalInterfaces',
        'protocolVersion',
        'supportsAuthenticatedExtendedCard',
        'security',
        'provider.name',
        'capabilities.stateTransitionHistory',
      ].sort(),
    );
    expect(AgentCardSchema.safeParse(r.card).success).toBe(true);
    expect(r.card).not.toHaveProperty('url');
    expect(r.card?.provider).toEqual({ organization: 'Example', url: 'https://example.com' });
    // --strict turns them into errors
    const strict = validateCard(card, { strict: true });
    expect(strict.card).toBeUndefined();
    expect(errors(strict).length).toBe(8);
  });

  it('reads the seed card (which still carries the pre-1.0 "security")', () => {
    const r = validateCard(customerSupportCard());
    expect(errors(r)).toEqual([]);
    expect(r.problems.map((p) => p.path)).toEqual(['security']);
  });

  it('the strict card schema rejects pre-1.0 fields that the input schema tolerates', () => {
    const card = { ...minimalCard(), url: 'https://x.example' };
    expect(AgentCardInputSchema.safeParse(card).success).toBe(true);
    expect(AgentCardSchema.safeParse(card).success).toBe(false);
  });
});

describe('validateSpec', () => {
  it('validates a whole spec with spec.-prefixed paths and applies defaults', () => {
    const r = validateSpec({ card: minimalCard(), serving: {}, probe: {} });
    expect(errors(r)).toEqual([]);
    expect(r.spec?.serving?.cacheMaxAgeSeconds).toBe(300);
    expect(r.spec?.probe).toEqual({ enabled: true, interval: '60s', timeout: '5s' });
    expect(r.card?.name).toBe('Recipe Agent');
  });

  it('has no route field: the operator does not manage routes, so one is refused, not ignored', () => {
    const r = validateSpec({ card: minimalCard(), serving: { httpRoute: { parentRefs: [{ name: 'gw' }] } } });
    expect(errors(r)).toEqual([
      { path: 'spec.serving.httpRoute', message: 'unknown field', severity: 'error' },
    ]);
  });

  it('reports spec errors with their full path', () => {
    const card = { ...minimalCard(), signatures: [{ protected: 'eyJ', signature: 'x' }] };
    const r = validateSpec({
      card,
      signing: { keys: [{ secretRef: { name: 'k' }, alg: 'HS256' }], jku: 'http://keys.example.com' },
      serving: { cacheMaxAgeSeconds: 100000 },
      probe: { interval: '5s', timeout: 'soon' },
      extra: 1,
    });
    expect(r.spec).toBeUndefined();
    expect(paths(r)).toEqual(
      expect.arrayContaining([
        'spec.card.signatures',
        'spec.signing.keys[0].secretRef.key',
        'spec.signing.keys[0].alg',
        'spec.signing.jku',
        'spec.serving.cacheMaxAgeSeconds',
        'spec.probe.interval',
        'spec.probe.timeout',
        'spec.extra',
      ]),
    );
  });

  it('lints spec.card with spec.card paths', () => {
    const card = { ...minimalCard(), description: 'Short' };
    const r = validateSpec({ card });
    expect(r.problems).toEqual([
      expect.objectContaining({ path: 'spec.card.description', severity: 'warning' }),
    ]);
  });

  it('checks that probe credentials name an interface url and that explicit kids are unique', () => {
    const r = validateSpec({
      card: minimalCard(),
      signing: {
        keys: [
          { secretRef: { name: 'a', key: 'k' }, kid: 'k1' },
          { secretRef: { name: 'b', key: 'k' }, kid: 'k1' },
        ],
      },
      probe: {
        credentials: [
          { url: 'https://recipes.example.com/a2a', secretRef: { name: 's', key: 't' }, type: 'bearer' },
          { url: 'https://elsewhere.example.com', secretRef: { name: 's', key: 't' }, type: 'apiKey' },
        ],
      },
    });
    expect(errors(r).map((p) => `${p.path}: ${p.message}`)).toEqual([
      'spec.probe.credentials[1].url: not the url of an interface of card.supportedInterfaces or of an audience',
      'spec.signing.keys[1].kid: duplicate kid "k1"',
    ]);
  });

  it('rejects a missing card', () => {
    expect(paths(validateSpec({}))).toEqual(['spec.card']);
    expect(errors(validateSpec(undefined)).length).toBe(1);
  });
});

describe('nesting limit', () => {
  /** `{"a":{"a":...}}` (or `[[...]]`) `depth` levels deep, built without recursion. */
  function nested(depth: number, kind: 'object' | 'array'): unknown {
    let value: unknown = {};
    for (let i = 0; i < depth; i++) value = kind === 'object' ? { a: value } : [value];
    return value;
  }
  const withParams = (params: unknown) => {
    const card = customerSupportCard() as any;
    card.capabilities = { ...card.capabilities, extensions: [{ uri: 'https://x.example/ext', params }] };
    return card;
  };

  it('refuses params nested 1,500 and 100,000 levels deep with one problem, without overflowing', () => {
    for (const depth of [1_500, 100_000]) {
      for (const kind of ['object', 'array'] as const) {
        const params = kind === 'object' ? nested(depth, kind) : { list: nested(depth, kind) };
        const card = validateCard(withParams(params));
        expect(card.card).toBeUndefined();
        expect(card.problems).toHaveLength(1);
        expect(card.problems[0]!.path).toMatch(/^capabilities\.extensions\[0\]\.params\./);
        expect(card.problems[0]!.message).toMatch(/^nested more than 32 levels deep/);
        const spec = validateSpec({ card: withParams(params) });
        expect(spec.spec).toBeUndefined();
        expect(spec.problems[0]!.path).toMatch(/^spec\.card\.capabilities\.extensions\[0\]\.params\./);
      }
    }
  });

  it('names the first place past the limit in document order, by its exact path', () => {
    const card = customerSupportCard() as any;
    card.capabilities = {
      ...card.capabilities,
      extensions: [
        {
          uri: 'https://x.example/a',
          params: { flat: { x: 1 }, list: [1, { y: [2] }, nested(40, 'object')] },
        },
        { uri: 'https://x.example/b', params: nested(40, 'object') },
      ],
    };
    const r = validateCard(card);
    expect(r.problems).toHaveLength(1);
    // list[2] is the object at level 6 (card 0, capabilities 1, extensions 2, [0] 3, params 4,
    // list 5); 26 levels of `a` below it is level 32, the first past the limit.
    expect(r.problems[0]!.path).toBe(`capabilities.extensions[0].params.list[2]${'.a'.repeat(26)}`);
  });

  it('accepts free-form params up to the limit, and refuses one level more', () => {
    // The card root is level 0; params sits at capabilities.extensions[0].params (level 4), so a
    // value nested 27 more levels puts its innermost object at level 31: the last one allowed.
    expect(errors(validateCard(withParams(nested(27, 'object'))))).toEqual([]);
    expect(errors(validateCard(withParams(nested(28, 'object'))))).toEqual([
      expect.objectContaining({ message: expect.stringMatching(/^nested more than 32 levels deep/) }),
    ]);
  });
});
