/* eslint-disable @typescript-eslint/no-explicit-any -- the tests edit specs as loosely typed JSON */
import { describe, expect, it } from 'vitest';
import { allInterfaceUrls, audienceCard, rebaseUrl } from '../../../operator/card/audience.ts';
import { audienceVariants } from '../../../operator/card/variants.ts';
import { validateSpec } from '../../../operator/card/validate.ts';
import { renderV1 } from '../../../operator/card/render.ts';
import { minimalCard } from '../../support/cards.ts';
import { agentCardValidator, missingRequired } from '../../support/conformance.ts';

const errors = (r: { problems: { severity: string; path: string; message: string }[] }) =>
  r.problems.filter((p) => p.severity === 'error');

/** spec.card reached by Service DNS, and a public audience in a few lines. */
function spec(audiences: unknown[]): any {
  const card = minimalCard() as any;
  card.supportedInterfaces = [
    { url: 'http://recipes.food.svc:8080/a2a/jsonrpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    { url: 'http://recipes.food.svc:8080/a2a/rest', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
    { url: 'http://recipes.food.svc:50051', protocolBinding: 'GRPC', protocolVersion: '1.0' },
  ];
  return { card, audiences };
}

const publicAudience = () => ({
  name: 'public',
  hosts: ['Recipes.Example.com'],
  baseURL: 'https://recipes.example.com/agents/recipes',
  securitySchemes: {
    oauth: {
      openIdConnectSecurityScheme: {
        openIdConnectUrl: 'https://login.example.com/.well-known/openid-configuration',
      },
    },
  },
  securityRequirements: [{ schemes: { oauth: { list: ['recipes.read'] } } }],
});

describe('rebaseUrl', () => {
  it('moves an interface onto the base origin and path prefix, keeping its own path and query', () => {
    expect(rebaseUrl('http://a.ns.svc:8080/a2a/v1', 'https://x.example.com/p', 'JSONRPC')).toBe(
      'https://x.example.com/p/a2a/v1',
    );
    expect(rebaseUrl('http://a.ns.svc:8080/a2a?t=1', 'https://x.example.com/p/', 'HTTP+JSON')).toBe(
      'https://x.example.com/p/a2a?t=1',
    );
    expect(rebaseUrl('http://a.ns.svc:8080', 'https://x.example.com/p', 'JSONRPC')).toBe(
      'https://x.example.com/p',
    );
  });
  it('gives a GRPC interface the origin only (gRPC has no path prefix)', () => {
    expect(rebaseUrl('http://a.ns.svc:50051', 'https://x.example.com/p', 'GRPC')).toBe(
      'https://x.example.com',
    );
  });
});

describe('audience cards', () => {
  it('are spec.card with the audience overrides, everything else shared', () => {
    const r = validateSpec(spec([publicAudience()]));
    expect(errors(r)).toEqual([]);
    const variants = audienceVariants(r.spec!, r.card!);
    expect(variants.map((v) => [v.name, v.hosts, v.probed])).toEqual([
      ['default', [], true],
      ['public', ['recipes.example.com'], true],
    ]);
    const pub = variants[1]!.card;
    expect(pub.supportedInterfaces.map((i) => i.url)).toEqual([
      'https://recipes.example.com/agents/recipes/a2a/jsonrpc',
      'https://recipes.example.com/agents/recipes/a2a/rest',
      'https://recipes.example.com',
    ]);
    expect(pub.securityRequirements).toEqual([{ schemes: { oauth: { list: ['recipes.read'] } } }]);
    expect(pub.skills).toEqual(r.card!.skills);
    expect(variants[0]!.card.securityRequirements).toBeUndefined();
    // The default card is not touched by deriving the others.
    expect(r.card!.supportedInterfaces[0]!.url).toBe('http://recipes.food.svc:8080/a2a/jsonrpc');
  });

  it('render to cards that conform to the A2A 1.0 schema, every audience', () => {
    const r = validateSpec(spec([publicAudience()]));
    const conforms = agentCardValidator();
    for (const v of audienceVariants(r.spec!, r.card!)) {
      const rendered = renderV1(v.card);
      expect(conforms(rendered), v.name).toEqual([]);
      expect(missingRequired(rendered), v.name).toEqual([]);
    }
  });

  it('take an explicit interface list, and [] / {} remove the card security', () => {
    const card = minimalCard() as any;
    card.securitySchemes = { key: { apiKeySecurityScheme: { location: 'header', name: 'X-Key' } } };
    card.securityRequirements = [{ schemes: { key: {} } }];
    const own = [{ url: 'http://in.ns.svc/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }];
    const derived = audienceCard(card, {
      supportedInterfaces: own,
      securitySchemes: {},
      securityRequirements: [],
    });
    expect(derived.supportedInterfaces).toEqual(own);
    expect(derived.securityRequirements).toEqual([]);
    expect(card.securityRequirements).toHaveLength(1);
  });

  it('probe: Disabled (or spec.probe.enabled false) marks an audience as not probed', () => {
    const r = validateSpec(
      spec([
        {
          ...publicAudience(),
          securitySchemes: undefined,
          securityRequirements: undefined,
          probe: 'Disabled',
        },
      ]),
    );
    expect(errors(r)).toEqual([]);
    expect(audienceVariants(r.spec!, r.card!).map((v) => v.probed)).toEqual([true, false]);
    const off = validateSpec({
      ...spec([{ name: 'public', hosts: ['a.example.com'] }]),
      probe: { enabled: false },
    });
    expect(audienceVariants(off.spec!, off.card!).map((v) => v.probed)).toEqual([false, false]);
  });

  it('lists every interface URL across audiences (probe credentials may name any)', () => {
    const s = spec([{ name: 'public', hosts: ['a.example.com'], baseURL: 'https://a.example.com' }]);
    expect(allInterfaceUrls(s)).toContain('https://a.example.com/a2a/rest');
    s.probe = {
      credentials: [
        { url: 'https://a.example.com/a2a/rest', type: 'bearer', secretRef: { name: 's', key: 'k' } },
      ],
    };
    expect(errors(validateSpec(s))).toEqual([]);
  });
});

describe('validateSpec: audiences', () => {
  const minimal = (extra: Record<string, unknown>) => ({
    name: 'public',
    hosts: ['a.example.com'],
    ...extra,
  });

  it('refuses a host in two audiences (case-insensitively), naming the field and the other audience', () => {
    const r = validateSpec(
      spec([minimal({}), { name: 'partner', hosts: ['b.example.com', 'A.EXAMPLE.com'] }]),
    );
    expect(r.spec).toBeUndefined();
    expect(errors(r)).toContainEqual({
      path: 'spec.audiences[1].hosts[1]',
      message: 'host "A.EXAMPLE.com" is already in audience "public"; a host belongs to at most one audience',
      severity: 'error',
    });
  });

  it('refuses malformed hosts, duplicate and reserved names, and baseURL with supportedInterfaces', () => {
    const r = validateSpec(
      spec([
        minimal({
          hosts: [
            'a.example.com:443',
            'https://b.example.com',
            'c.example.com.',
            '*.*.example.com',
            'x/../y',
          ],
        }),
        minimal({
          hosts: ['d.example.com'],
          baseURL: 'ftp://x',
          supportedInterfaces: spec([]).card.supportedInterfaces,
        }),
        { name: 'default', hosts: ['e.example.com', 'E.example.com'] },
      ]),
    );
    const byPath = Object.fromEntries(errors(r).map((p) => [p.path, p.message]));
    for (let i = 0; i < 5; i++)
      expect(byPath[`spec.audiences[0].hosts[${i}]`]).toMatch(/must be a host name/);
    expect(byPath['spec.audiences[1].name']).toBe('duplicate audience name "public"');
    expect(byPath['spec.audiences[1].baseURL']).toMatch(
      /http\(s\) URL|either baseURL or supportedInterfaces/,
    );
    expect(byPath['spec.audiences[2].name']).toMatch(/"default" names spec.card itself/);
    expect(byPath['spec.audiences[2].hosts[1]']).toBe('duplicate host "E.example.com"');
  });

  it('refuses a credential anywhere in an audience, without echoing it', () => {
    const token = 'ghp_' + 'a1B2c3D4'.repeat(5);
    const r = validateSpec(spec([minimal({ baseURL: `https://a.example.com/${token}` })]));
    expect(r.spec).toBeUndefined();
    expect(errors(r).map((p) => p.path)).toContain('spec.audiences[0].baseURL');
    expect(JSON.stringify(r.problems)).not.toContain(token);
  });

  it('lints the overrides like the card, at the audience fields', () => {
    const r = validateSpec(spec([minimal({ baseURL: 'http://a.example.com' })]));
    expect(r.spec).toBeDefined();
    const warnings = r.problems.filter((p) => p.path.startsWith('spec.audiences'));
    expect(warnings).toContainEqual({
      path: 'spec.audiences[0].baseURL',
      message: 'gives supportedInterfaces[0].url not an https URL (required in production)',
      severity: 'warning',
    });
    // Fields inherited from spec.card are reported once, at spec.card.
    expect(warnings.every((p) => !/description|name/.test(p.message))).toBe(true);
    const strict = validateSpec(spec([minimal({ baseURL: 'http://a.example.com' })]), { strict: true });
    expect(strict.spec).toBeUndefined();
  });
});
