/**
 * The change classification engine (operator/change/), on a corpus: the repository's examples and
 * modified versions of them, cards that @a2a-js/sdk builds and serializes (and serves in its v0.3
 * shape), a card as a2a-go v0.3 serves it, converted, and a card that uses every message of the
 * model, changed one rule at a time. The last case checks that every rule of the table was
 * produced by some case of this file.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { AgentCard as SdkAgentCard } from '@a2a-js/sdk';
import { validateCard, validateResource } from '../../../operator/card/validate.ts';
import type { AgentCard } from '../../../operator/card/schema.ts';
import { diffCards, type CardDiff } from '../../../operator/change/diff.ts';
import { ruleIds, RULES, type RuleId } from '../../../operator/change/rules.ts';
import { toV1 } from '../../../operator/source/convert.ts';
import { fullCard, minimalCard } from '../../support/cards.ts';
import { fixturePath, repoRoot } from '../../support/paths.ts';

const seen = new Set<RuleId>();

/** The diff of two card JSON values (validated as a served card first). */
function diff(before: unknown, after: unknown): CardDiff {
  const result = diffCards(card(before), card(after));
  for (const c of result.changes) seen.add(c.rule);
  return result;
}

function card(value: unknown): AgentCard {
  const checked = validateCard(value);
  if (!checked.card) throw new Error(JSON.stringify(checked.problems));
  return checked.card;
}

/** The card of a manifest file (spec.card, as the operator renders it). */
function manifestCard(file: string): AgentCard {
  const checked = validateResource(parse(readFileSync(file, 'utf8')));
  if (!checked.card) throw new Error(`${file}: ${JSON.stringify(checked.problems)}`);
  return checked.card;
}

/** The rule, path and item of each change: what most cases assert. */
const brief = (d: CardDiff) => d.changes.map((c) => [c.rule, c.path, c.item]);

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const change = (base: () => Json, edit: (c: Json) => void): Json => {
  const c = base();
  edit(c);
  return c;
};

describe('the rule table', () => {
  it('gives every change the class of its rule', () => {
    const d = diff(
      fullCard(),
      change(fullCard, (c) => {
        c.skills.pop();
        c.description = 'Plans routes.';
        c.capabilities.pushNotifications = true;
      }),
    );
    expect(d.changes.length).toBe(3);
    for (const c of d.changes) expect(c.class).toBe(RULES[c.rule].class);
    expect(d.counts).toEqual({ breaking: 1, compatible: 1, descriptive: 1 });
    expect(d.highest).toBe('breaking');
    // The most severe first.
    expect(d.changes.map((c) => c.class)).toEqual(['breaking', 'compatible', 'descriptive']);
  });

  it('finds nothing between a card and itself, or a copy with every list reordered', () => {
    expect(diff(fullCard(), fullCard())).toEqual({
      changes: [],
      counts: { breaking: 0, compatible: 0, descriptive: 0 },
    });
    const shuffled = change(fullCard, (c) => {
      c.skills.reverse();
      c.defaultInputModes.reverse();
      c.securityRequirements.reverse();
      c.skills[0].tags.reverse();
      c.securitySchemes = Object.fromEntries(Object.entries(c.securitySchemes).reverse());
      // Interfaces after the first: only the first one's place means something.
      c.supportedInterfaces = [c.supportedInterfaces[0], ...c.supportedInterfaces.slice(1).reverse()];
    });
    expect(diff(fullCard(), shuffled).changes).toEqual([]);
  });

  it('ignores signatures', () => {
    const signed = { ...fullCard(), signatures: [{ protected: 'eyJhbGciOiJFUzI1NiJ9', signature: 'c2ln' }] };
    expect(diff(fullCard(), signed).changes).toEqual([]);
  });
});

describe('interfaces', () => {
  it('an interface gone while its binding stays, and a binding gone', () => {
    const d = diff(
      fullCard(),
      change(fullCard, (c) => {
        c.supportedInterfaces.splice(3, 1); // the JSONRPC 0.3 one; JSONRPC 1.0 stays
        c.supportedInterfaces.splice(2, 1); // the only GRPC one
      }),
    );
    expect(brief(d)).toEqual([
      ['binding-removed', 'supportedInterfaces[2]', 'GRPC https://grpc.geo.example.com'],
      ['interface-removed', 'supportedInterfaces[3]', 'JSONRPC https://geo.example.com/a2a/legacy'],
    ]);
    expect(d.changes.every((c) => c.side === 'old')).toBe(true);
  });

  it('a URL that moved is one change, with the old and new URL', () => {
    const d = diff(
      fullCard(),
      change(fullCard, (c) => {
        c.supportedInterfaces[0].url = 'https://geo.example.com/a2a/v2';
      }),
    );
    expect(d.changes).toEqual([
      {
        rule: 'interface-url-changed',
        class: 'breaking',
        path: 'supportedInterfaces[0].url',
        side: 'new',
        item: 'JSONRPC https://geo.example.com/a2a/v1',
        message: 'JSONRPC interface moved: https://geo.example.com/a2a/v1 -> https://geo.example.com/a2a/v2',
        before: 'https://geo.example.com/a2a/v1',
        after: 'https://geo.example.com/a2a/v2',
      },
    ]);
  });

  it('protocol versions: another major is breaking, a lower minor too, a higher minor is not', () => {
    const major = diff(
      fullCard(),
      change(fullCard, (c) => {
        c.supportedInterfaces[2].protocolVersion = '2.0';
      }),
    );
    expect(brief(major)).toEqual([
      [
        'protocol-major-changed',
        'supportedInterfaces[2].protocolVersion',
        'GRPC https://grpc.geo.example.com',
      ],
    ]);
    const raised = change(fullCard, (c) => {
      c.supportedInterfaces[0].protocolVersion = '1.1';
    });
    expect(brief(diff(fullCard(), raised))).toEqual([
      [
        'protocol-minor-raised',
        'supportedInterfaces[0].protocolVersion',
        'JSONRPC https://geo.example.com/a2a/v1',
      ],
    ]);
    expect(brief(diff(raised, fullCard()))).toEqual([
      [
        'protocol-minor-lowered',
        'supportedInterfaces[0].protocolVersion',
        'JSONRPC https://geo.example.com/a2a/v1',
      ],
    ]);
  });

  it('one binding at one URL in two versions: dropping one version is an interface removed', () => {
    const both = change(fullCard, (c) => {
      c.supportedInterfaces.push({ ...c.supportedInterfaces[0], protocolVersion: '0.3' });
    });
    expect(brief(diff(both, fullCard()))).toEqual([
      ['interface-removed', 'supportedInterfaces[4]', 'JSONRPC https://geo.example.com/a2a/v1'],
    ]);
  });

  it('tenant, additions and the preferred interface', () => {
    const d = diff(
      fullCard(),
      change(fullCard, (c) => {
        c.supportedInterfaces[1].tenant = 'us';
        c.supportedInterfaces.push({
          url: 'https://geo.example.com/a2a/eu',
          protocolBinding: 'JSONRPC',
          protocolVersion: '1.0',
        });
        c.supportedInterfaces.push({
          url: 'wss://geo.example.com/a2a',
          protocolBinding: 'WEBSOCKET',
          protocolVersion: '1.0',
        });
        c.supportedInterfaces.unshift(c.supportedInterfaces.splice(2, 1)[0]); // GRPC first
      }),
    );
    expect(brief(d)).toEqual([
      [
        'interface-tenant-changed',
        'supportedInterfaces[2].tenant',
        'HTTP+JSON https://geo.example.com/a2a/rest',
      ],
      ['interface-added', 'supportedInterfaces[4]', 'JSONRPC https://geo.example.com/a2a/eu'],
      ['binding-added', 'supportedInterfaces[5]', 'WEBSOCKET wss://geo.example.com/a2a'],
      ['preferred-interface-changed', 'supportedInterfaces[0]', 'GRPC https://grpc.geo.example.com'],
    ]);
    expect(d.changes[0]).toMatchObject({ before: 'eu', after: 'us' });
    const untenanted = diff(
      fullCard(),
      change(fullCard, (c) => {
        delete c.supportedInterfaces[1].tenant;
      }),
    );
    expect(untenanted.changes).toMatchObject([
      { rule: 'interface-tenant-changed', path: 'supportedInterfaces[1].tenant', side: 'old', before: 'eu' },
    ]);
    expect(untenanted.changes[0]).not.toHaveProperty('after');
  });
});

describe('skills and media types', () => {
  it('a skill removed, added, reworded, retagged; modes of the card and of a skill', () => {
    const d = diff(
      fullCard(),
      change(fullCard, (c) => {
        const removed = c.skills.splice(1, 1)[0];
        c.skills.push({ ...removed, id: 'route-planner-v2' });
        c.skills[0].name = 'Route optimizer';
        c.skills[0].examples = ['Plan a route.'];
        c.skills[0].tags = ['maps', 'routing', 'live'];
        c.skills[0].inputModes = ['text/plain'];
        c.skills[0].outputModes.push('application/geo+json');
        c.defaultOutputModes = ['image/png'];
        c.defaultInputModes.push('audio/wav');
      }),
    );
    expect(brief(d)).toEqual([
      ['output-mode-removed', 'defaultOutputModes', 'application/json'],
      ['skill-removed', 'skills[1]', 'custom-map'],
      ['input-mode-removed', 'skills[0].inputModes', 'application/json'],
      ['input-mode-added', 'defaultInputModes', 'audio/wav'],
      ['input-mode-added', 'skills[0].inputModes', 'text/plain'],
      ['output-mode-added', 'skills[0].outputModes', 'application/geo+json'],
      ['skill-added', 'skills[1]', 'route-planner-v2'],
      ['skill-text-changed', 'skills[0].name', 'route-optimizer-traffic'],
      ['skill-text-changed', 'skills[0].examples', 'route-optimizer-traffic'],
      ['skill-tags-changed', 'skills[0].tags', 'route-optimizer-traffic'],
    ]);
    expect(d.changes.find((c) => c.rule === 'skill-tags-changed')?.message).toBe(
      'skill route-optimizer-traffic: tags added live; removed traffic',
    );
  });

  it("a skill that drops its own modes falls back to the card's defaults, and is compared with them", () => {
    const d = diff(
      fullCard(),
      change(fullCard, (c) => {
        delete c.skills[0].outputModes; // was [application/json, image/png]; the defaults are the same
        delete c.skills[0].inputModes; // was [application/json]; defaults add text/plain
      }),
    );
    expect(brief(d)).toEqual([['input-mode-added', 'defaultInputModes', 'text/plain']]);
    expect(d.changes[0]!.message).toBe('skill route-optimizer-traffic: input mode text/plain added');
  });
});

describe('security', () => {
  it('a requirement where there was none is breaking, for the card and for a skill', () => {
    const d = diff(
      minimalCard(),
      change(minimalCard, (c) => {
        c.securitySchemes = { key: { apiKeySecurityScheme: { location: 'header', name: 'X-Key' } } };
        c.securityRequirements = [{ schemes: { key: { list: [] } } }];
        c.skills[0].securityRequirements = [{ schemes: { key: { list: ['cook'] } } }];
      }),
    );
    expect(brief(d)).toEqual([
      ['security-required', 'securityRequirements', 'key'],
      ['security-required', 'skills[0].securityRequirements', 'key (cook)'],
      ['security-scheme-added', 'securitySchemes.key', 'key'],
    ]);
  });

  it('tightened per scheme name and scope; a looser alternative is compatible', () => {
    const d = diff(
      fullCard(),
      change(fullCard, (c) => {
        c.securityRequirements[0].schemes.oauthCode.list.push('route:write'); // a scope more
        c.securityRequirements[1].schemes.bearer = { list: [] }; // a scheme more
        c.skills[0].securityRequirements.push({ schemes: { bearer: { list: [] } } }); // an alternative more
      }),
    );
    expect(brief(d)).toEqual([
      ['security-tightened', 'securityRequirements[0].schemes.oauthCode.list', 'oauthCode route:write'],
      ['security-tightened', 'securityRequirements[1].schemes.bearer', 'bearer'],
      ['security-relaxed', 'skills[0].securityRequirements[1]', 'bearer'],
    ]);
    expect(d.changes[0]!.message).toBe(
      'oauthCode (route:read) no longer suffices: scope route:write of oauthCode now required',
    );
  });

  it('an alternative dropped is breaking; every requirement dropped is compatible', () => {
    const dropped = diff(
      fullCard(),
      change(fullCard, (c) => {
        c.securityRequirements.splice(1, 1);
      }),
    );
    expect(brief(dropped)).toEqual([
      ['security-tightened', 'securityRequirements[0].schemes.oauthCode', 'oauthCode'],
    ]);
    const open = diff(
      fullCard(),
      change(fullCard, (c) => {
        delete c.securityRequirements;
      }),
    );
    expect(brief(open)).toEqual([['security-relaxed', 'securityRequirements', 'no authentication']]);
    expect(open.changes[0]!.side).toBe('old');
  });

  it('schemes by name: removed, kind changed, settings, URLs, PKCE, scopes, descriptions', () => {
    const d = diff(
      fullCard(),
      change(fullCard, (c) => {
        const s = c.securitySchemes;
        delete s.oauthPassword;
        s.bearer = { apiKeySecurityScheme: { location: 'header', name: 'Authorization' } };
        s.apiKey.apiKeySecurityScheme.location = 'query';
        s.apiKey.apiKeySecurityScheme.description = 'Partner key (query)';
        const code = s.oauthCode.oauth2SecurityScheme.flows.authorizationCode;
        code.tokenUrl = 'https://login.example.com/token';
        delete code.pkceRequired;
        code.scopes = { 'route:read': 'Read your routes', 'route:write': 'Write routes' };
        s.oauthClient.oauth2SecurityScheme.flows.clientCredentials.scopes = {};
        s.oauthImplicit.oauth2SecurityScheme.flows = {
          authorizationCode: {
            authorizationUrl: 'https://a.example.com/a',
            tokenUrl: 'https://a.example.com/t',
            scopes: {},
            pkceRequired: true,
          },
        };
      }),
    );
    expect(brief(d)).toEqual([
      ['security-scheme-removed', 'securitySchemes.oauthPassword', 'oauthPassword'],
      ['security-scheme-changed', 'securitySchemes.apiKey.apiKeySecurityScheme.location', 'apiKey'],
      ['security-scheme-changed', 'securitySchemes.bearer', 'bearer'],
      [
        'security-scheme-changed',
        'securitySchemes.oauthCode.oauth2SecurityScheme.flows.authorizationCode.tokenUrl',
        'oauthCode',
      ],
      [
        'oauth-scope-removed',
        'securitySchemes.oauthClient.oauth2SecurityScheme.flows.clientCredentials.scopes["agent.invoke"]',
        'oauthClient agent.invoke',
      ],
      [
        'security-scheme-changed',
        'securitySchemes.oauthImplicit.oauth2SecurityScheme.flows',
        'oauthImplicit',
      ],
      [
        'security-scheme-relaxed',
        'securitySchemes.oauthCode.oauth2SecurityScheme.flows.authorizationCode.pkceRequired',
        'oauthCode',
      ],
      [
        'oauth-scope-added',
        'securitySchemes.oauthCode.oauth2SecurityScheme.flows.authorizationCode.scopes["route:write"]',
        'oauthCode route:write',
      ],
      ['security-scheme-text-changed', 'securitySchemes.apiKey.apiKeySecurityScheme.description', 'apiKey'],
      [
        'security-scheme-text-changed',
        'securitySchemes.oauthCode.oauth2SecurityScheme.flows.authorizationCode.scopes["route:read"]',
        'oauthCode route:read',
      ],
    ]);
    expect(d.changes.find((c) => c.path.endsWith('tokenUrl'))).toMatchObject({
      before: 'https://auth.example.com/token',
      after: 'https://login.example.com/token',
    });
  });

  it('PKCE turned on is breaking', () => {
    const d = diff(
      change(fullCard, (c) => {
        delete c.securitySchemes.oauthCode.oauth2SecurityScheme.flows.authorizationCode.pkceRequired;
      }),
      fullCard(),
    );
    expect(brief(d)).toEqual([
      [
        'security-scheme-changed',
        'securitySchemes.oauthCode.oauth2SecurityScheme.flows.authorizationCode.pkceRequired',
        'oauthCode',
      ],
    ]);
  });
});

describe('capabilities and extensions', () => {
  it('a capability turned off (false or absent) is breaking, on is compatible', () => {
    const d = diff(
      fullCard(),
      change(fullCard, (c) => {
        c.capabilities.streaming = false;
        delete c.capabilities.extendedAgentCard;
        c.capabilities.pushNotifications = true;
      }),
    );
    expect(brief(d)).toEqual([
      ['capability-removed', 'capabilities.streaming', 'streaming'],
      ['capability-removed', 'capabilities.extendedAgentCard', 'extendedAgentCard'],
      ['capability-added', 'capabilities.pushNotifications', 'pushNotifications'],
    ]);
  });

  it('extensions by URI: required added or turned on is breaking, optional added is not', () => {
    const base = fullCard;
    const uri = 'https://example.com/ext/geo/v1';
    const d = diff(
      base(),
      change(base, (c) => {
        const ext = c.capabilities.extensions;
        ext[0].params.units = 'imperial';
        ext[0].description = 'Geo hints, imperial';
        ext.push({ uri: 'https://example.com/ext/trace/v1' });
        ext.push({ uri: 'https://example.com/ext/pay/v1', required: true });
      }),
    );
    expect(brief(d)).toEqual([
      ['extension-params-changed', 'capabilities.extensions[0].params', uri],
      ['extension-required', 'capabilities.extensions[2]', 'https://example.com/ext/pay/v1'],
      ['extension-added', 'capabilities.extensions[1]', 'https://example.com/ext/trace/v1'],
      ['extension-text-changed', 'capabilities.extensions[0].description', uri],
    ]);
    const optional = change(base, (c) => {
      c.capabilities.extensions[0].required = false;
    });
    expect(brief(diff(base(), optional))).toEqual([
      ['extension-optional', 'capabilities.extensions[0].required', uri],
    ]);
    expect(brief(diff(optional, base()))).toEqual([
      ['extension-required', 'capabilities.extensions[0].required', uri],
    ]);
    expect(
      brief(
        diff(
          base(),
          change(base, (c) => delete c.capabilities.extensions),
        ),
      ),
    ).toEqual([['extension-removed', 'capabilities.extensions[0]', uri]]);
  });
});

describe("the card's text", () => {
  it('name, description, version, provider and links are descriptive', () => {
    const d = diff(
      fullCard(),
      change(fullCard, (c) => {
        c.name = 'Route Planner';
        c.version = '1.3.0';
        c.provider.url = 'https://geo.example.com';
        delete c.documentationUrl;
        c.iconUrl = 'https://geo.example.com/icon-2.png';
      }),
    );
    expect(brief(d)).toEqual([
      ['card-text-changed', 'name', 'name'],
      ['version-changed', 'version', 'version'],
      ['provider-changed', 'provider', 'provider'],
      ['link-changed', 'documentationUrl', 'documentationUrl'],
      ['link-changed', 'iconUrl', 'iconUrl'],
    ]);
    expect(d.highest).toBe('descriptive');
    expect(d.changes[0]!.message).toBe('name "GeoSpatial Route Planner" -> "Route Planner"');
  });

  it('keeps a message to one line whatever a hostile card says', () => {
    const d = diff(
      minimalCard(),
      change(minimalCard, (c) => {
        c.skills.push({ id: 'x\n::error::owned\r', name: 'X\u2028Y', description: 'd', tags: [] });
      }),
    );
    expect(d.changes[0]!.message).toBe('skill x?::error::owned? (X?Y) added');
    expect(d.changes[0]!.item).toBe('x\n::error::owned\r'); // the data itself, for JSON
  });
});

describe('the corpus', () => {
  it("examples/: the signed example's card against modified versions of it (test/fixtures/changes)", () => {
    const v2 = manifestCard(join(repoRoot, 'examples/agentcard-signed.yaml'));
    const v3 = manifestCard(fixturePath('changes/support-agent-2.2.0.yaml'));
    const v4 = manifestCard(fixturePath('changes/support-agent-3.0.0.yaml'));
    const minor = diffCards(v2, v3);
    minor.changes.forEach((c) => seen.add(c.rule));
    expect(minor.highest).toBe('compatible');
    expect(brief(minor)).toEqual([
      [
        'oauth-scope-added',
        'securitySchemes.oauth2.oauth2SecurityScheme.flows.clientCredentials.scopes["orders.read"]',
        'oauth2 orders.read',
      ],
      ['skill-added', 'skills[1]', 'track-order'],
      ['version-changed', 'version', 'version'],
    ]);
    const major = diffCards(v3, v4);
    major.changes.forEach((c) => seen.add(c.rule));
    expect(brief(major)).toEqual([
      ['security-tightened', 'securityRequirements[0].schemes.oauth2.list', 'oauth2 orders.read'],
      ['skill-removed', 'skills[0]', 'resolve-support-request'],
      ['version-changed', 'version', 'version'],
    ]);
  });

  it('examples/: the minimal example against the signed one (another agent: nearly everything differs)', () => {
    const d = diffCards(
      manifestCard(join(repoRoot, 'examples/agentcard-minimal.yaml')),
      manifestCard(join(repoRoot, 'examples/agentcard-signed.yaml')),
    );
    expect(d.changes.filter((c) => c.class === 'breaking').map((c) => c.rule)).toEqual([
      'security-required',
      'skill-removed',
    ]);
    expect(d.changes.map((c) => c.rule)).toContain('binding-added');
  });

  /** A card built with @a2a-js/sdk's own types and serialized by it, as its card handler serves it. */
  const sdkCard = (edit: (c: Json) => void = () => {}): unknown => {
    const json: Json = {
      name: 'SDK Agent',
      description: 'Built with @a2a-js/sdk',
      version: '1.0.0',
      supportedInterfaces: [
        { url: 'https://sdk.example.com/a2a/jsonrpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url: 'https://sdk.example.com/a2a/rest', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
      ],
      capabilities: { streaming: true, pushNotifications: false },
      securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'JWT' } } },
      securityRequirements: [{ schemes: { bearer: { list: [] } } }],
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [
        { id: 'echo', name: 'Echo', description: 'Echoes', tags: ['echo'] },
        {
          id: 'shout',
          name: 'Shout',
          description: 'Echoes loudly',
          tags: ['echo'],
          inputModes: ['text/plain'],
        },
      ],
    };
    edit(json);
    return SdkAgentCard.toJSON(SdkAgentCard.fromJSON(json));
  };

  it('@a2a-js/sdk: serialized cards, a skill and a binding removed', () => {
    const before = sdkCard();
    expect(diff(before, sdkCard()).changes).toEqual([]);
    const after = sdkCard((c) => {
      c.skills.pop();
      c.supportedInterfaces.pop();
      c.capabilities.streaming = false;
    });
    expect(brief(diff(before, after))).toEqual([
      ['binding-removed', 'supportedInterfaces[1]', 'HTTP+JSON https://sdk.example.com/a2a/rest'],
      ['capability-removed', 'capabilities.streaming', 'streaming'],
      ['skill-removed', 'skills[1]', 'shout'],
    ]);
  });

  it("a2a-go v0.3's card, converted, against the agent's 1.0 card: the major version of each interface", () => {
    const served = JSON.parse(readFileSync(fixturePath('changes/a2a-go-0.3.json'), 'utf8')) as Json;
    const old = toV1(served);
    expect(old.protocolVersion).toBe('0.3');
    const upgraded = manifestCard(fixturePath('changes/go-agent-1.0.yaml'));
    const d = diffCards(card(old.card), upgraded);
    d.changes.forEach((c) => seen.add(c.rule));
    expect(brief(d)).toEqual([
      [
        'protocol-major-changed',
        'supportedInterfaces[0].protocolVersion',
        'JSONRPC http://agent.test/invoke',
      ],
      ['protocol-major-changed', 'supportedInterfaces[1].protocolVersion', 'GRPC agent.test:50051'],
      ['capability-removed', 'capabilities.extendedAgentCard', 'extendedAgentCard'],
      ['security-tightened', 'securityRequirements[0].schemes.bearer', 'bearer'],
      ['version-changed', 'version', 'version'],
    ]);
  });
});

/** The file's tasks, to know in afterAll whether every case ran. */
let file: { tasks?: unknown[] } | undefined;
beforeEach(({ task }) => {
  file = task.file;
});

afterAll(() => {
  // Each rule of the table is produced by at least one case above (when they all ran: a run of
  // some cases, -t, checks those cases only).
  const tasks = (t: { mode?: string; tasks?: unknown[] }): { mode?: string }[] =>
    t.tasks ? (t.tasks as (typeof t)[]).flatMap(tasks) : [t];
  if (!file || tasks(file).some((t) => t.mode !== 'run')) return;
  expect(ruleIds().filter((id) => !seen.has(id))).toEqual([]);
});
