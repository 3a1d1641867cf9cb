/**
 * `discover` against real peers on 127.0.0.1: @a2a-js/sdk agents serving their own cards (signed
 * by the SDK), our sidecar serving a card signed by our signer, and catalogs served by a plain
 * node:http server, one including the other. Trusted keys are given as a JWKS, as a user would.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { A2A_AGENT_CARD_MEDIA_TYPE, AI_CATALOG_MEDIA_TYPE } from '../../../operator/catalog/document.ts';
import { signCatalog } from '../../../operator/catalog/signature.ts';
import { generateSigningJwk } from '../../../operator/card/keygen.ts';
import { renderV1 } from '../../../operator/card/render.ts';
import {
  importSigningKey,
  publicJwks,
  signCard,
  type JWK,
  type SigningKey,
} from '../../../operator/card/sign.ts';
import { validateCard } from '../../../operator/card/validate.ts';
import { publicPart, type JWKS } from '../../../operator/card/verify.ts';
import { discover, type DiscoverOptions } from '../../../operator/discover/discover.ts';
import type { CardReport } from '../../../operator/discover/report.ts';
import { createAddressPolicy } from '../../../operator/probe/policy.ts';
import { vectors } from '../../support/cards.ts';
import { createTestCa } from '../../support/tls-certs.ts';
import {
  type FileServer,
  type SdkAgent,
  type SidecarServer,
  json,
  startCardSidecar,
  startFileServer,
  startSdkAgent,
} from '../../support/discover-servers.ts';

const policy = createAddressPolicy({ allowCidrs: ['127.0.0.0/8'] });
const cardEntry = (id: string, url: string) => ({ identifier: id, type: A2A_AGENT_CARD_MEDIA_TYPE, url });
const catalogEntry = (id: string, url: string) => ({ identifier: id, type: AI_CATALOG_MEDIA_TYPE, url });

/** A valid card of ours whose one interface is `a2aUrl`. */
function ourCard(name: string, a2aUrl: string): Record<string, unknown> {
  const { card } = validateCard({
    name,
    description: `${name}: plans team schedules and answers questions about them.`,
    supportedInterfaces: [{ url: a2aUrl, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    version: '3.0.0',
    capabilities: { streaming: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      { id: 'plan-schedule', name: 'Plan schedule', description: 'Plans a schedule.', tags: ['planning'] },
    ],
  });
  return renderV1(card!);
}

const byName = (cards: CardReport[], name: string) => {
  const card = cards.find((c) => c.name === name);
  if (!card) throw new Error(`no card named ${name} in ${cards.map((c) => c.name).join(', ')}`);
  return card;
};

let ours: SigningKey;
let sdkJwk: JWK;
let trusted: JWKS;
let recipe: SdkAgent; // SDK-signed with a trusted key
let stranger: SdkAgent; // SDK-signed with a key nobody trusts
let sidecar: SidecarServer; // our signer, served by our sidecar
let files: FileServer;

beforeAll(async () => {
  vi.spyOn(console, 'debug').mockImplementation(() => {}); // the SDK logs failed signatures
  ours = await importSigningKey(JSON.stringify(await generateSigningJwk('EdDSA', 'team-a')));
  sdkJwk = (await generateSigningJwk('ES256', 'sdk-key')) as JWK;
  trusted = { keys: [ours.publicJwk, publicPart(sdkJwk)] };
  const strangerJwk = (await generateSigningJwk('ES256', 'stranger')) as JWK;
  [recipe, stranger, files] = await Promise.all([
    startSdkAgent({
      name: 'Recipe Finder',
      skill: { id: 'find-recipe', tags: ['cooking'] },
      signWith: sdkJwk,
    }),
    startSdkAgent({
      name: 'Stranger Agent',
      skill: { id: 'translate', tags: ['language'] },
      signWith: strangerJwk,
    }),
    startFileServer(),
  ]);
  const scheduler = await signCard(ourCard('Team Scheduler', `${recipe.origin}/a2a`), [ours]);
  sidecar = await startCardSidecar(scheduler, publicJwks([ours]));

  const tampered = {
    ...scheduler,
    name: 'Tampered Scheduler',
    description: 'Now sends your calendar elsewhere.',
  };
  const elsewhereKey = await importSigningKey(JSON.stringify(await generateSigningJwk('ES256', 'elsewhere')));
  const jkuElsewhere = await signCard(ourCard('Jku Elsewhere', `${recipe.origin}/a2a`), [elsewhereKey], {
    jku: 'https://keys.attacker.example/jwks.json',
  });
  const f = files.origin;
  files.routes.set(
    '/catalog.json',
    json({
      specVersion: '1.0',
      host: { displayName: 'Platform team' },
      entries: [
        cardEntry('urn:air:example.com:a2a:recipes', `${recipe.origin}/.well-known/agent-card.json`),
        cardEntry('urn:air:example.com:a2a:scheduler', `${sidecar.origin}/.well-known/agent-card.json`),
        catalogEntry('urn:air:example.com:catalog:team', '/team.json'),
        {
          identifier: 'urn:air:example.com:mcp:weather',
          type: 'application/mcp-server-card+json',
          url: `${f}/mcp.json`,
        },
      ],
    }),
  );
  files.routes.set(
    '/team.json',
    json({
      specVersion: '1.0',
      entries: [
        cardEntry('urn:stranger', `${stranger.origin}/.well-known/agent-card.json`),
        cardEntry('urn:tampered', `${f}/tampered.json`),
        cardEntry('urn:jku', `${f}/jku-elsewhere.json`),
        catalogEntry('urn:back', `${f}/catalog.json`),
      ],
    }),
  );
  files.routes.set('/tampered.json', json(tampered));
  files.routes.set('/jku-elsewhere.json', json(jkuElsewhere));
});

afterAll(async () => {
  vi.restoreAllMocks();
  await Promise.all([recipe?.close(), stranger?.close(), sidecar?.close(), files?.close()]);
});

const run = (opts: Partial<DiscoverOptions> & { urls: string[] }) =>
  discover({ policy, jwks: trusted, ...opts });

describe('discover: a catalog that includes another', () => {
  it('follows the nesting, verifies every card, and reports each failure clearly', async () => {
    const report = await run({ urls: [`${files.origin}/catalog.json`] });
    expect(report.catalogs.map((c) => c.url)).toEqual([
      `${files.origin}/catalog.json`,
      `${files.origin}/team.json`,
    ]);
    expect(report.catalogs[0]).toMatchObject({
      host: 'Platform team',
      entries: { cards: 2, catalogs: 1, other: 1 },
    });
    expect(report.cards.map((c) => c.name).sort()).toEqual([
      'Jku Elsewhere',
      'Recipe Finder',
      'Stranger Agent',
      'Tampered Scheduler',
      'Team Scheduler',
    ]);

    // Signed by @a2a-js/sdk (default values left out of its payload) with a trusted key.
    expect(byName(report.cards, 'Recipe Finder')).toMatchObject({
      ok: true,
      via: [`${files.origin}/catalog.json`],
      entry: { identifier: 'urn:air:example.com:a2a:recipes' },
      signature: { status: 'verified', kid: 'sdk-key', canonicalization: 'defaults-omitted' },
    });
    // Signed by our signer, served by our sidecar.
    expect(byName(report.cards, 'Team Scheduler')).toMatchObject({
      ok: true,
      signature: { status: 'verified', kid: 'team-a', canonicalization: 'jcs' },
    });
    // A key nobody trusts.
    const strangerCard = byName(report.cards, 'Stranger Agent');
    expect(strangerCard).toMatchObject({
      ok: false,
      via: [`${files.origin}/catalog.json`, `${files.origin}/team.json`],
    });
    expect(strangerCard.signature.status).toBe('untrusted');
    expect(strangerCard.signature.message).toContain('no trusted key with kid "stranger"');
    // Changed after signing, with the trusted key's signature left on.
    const tampered = byName(report.cards, 'Tampered Scheduler');
    expect(tampered.signature.status).toBe('invalid');
    expect(tampered.signature.message).toMatch(
      /^the card was changed after it was signed \(kid team-a: signature does not match\)/,
    );
    // Its jku names another host: a hint, never followed.
    const elsewhere = byName(report.cards, 'Jku Elsewhere');
    expect(elsewhere.signature.status).toBe('untrusted');
    expect(elsewhere.signature.message).toContain(
      'its jku points elsewhere (https://keys.attacker.example/jwks.json',
    );
    expect(elsewhere.signature.message).toContain('not followed');
    // team.json lists catalog.json again: a loop, reported with its path.
    expect(report.errors).toEqual([
      {
        url: `${files.origin}/catalog.json`,
        via: [`${files.origin}/catalog.json`, `${files.origin}/team.json`],
        code: 'loop',
        message: `nesting loop: ${files.origin}/catalog.json -> ${files.origin}/team.json -> ${files.origin}/catalog.json`,
      },
    ]);
    expect(report.ok).toBe(false);
    // Other artifact types are counted, not fetched; the loop's target was not fetched again.
    expect(files.seen.map((s) => s.path).filter((p) => p === '/mcp.json' || p === '/catalog.json')).toEqual([
      '/catalog.json',
    ]);
  });

  it('--probe proves every interface with a real A2A call', async () => {
    const report = await run({ urls: [`${files.origin}/catalog.json`], probe: { timeoutMs: 5000 } });
    for (const name of ['Recipe Finder', 'Team Scheduler', 'Stranger Agent']) {
      const card = byName(report.cards, name);
      expect(card.interfaces.length).toBeGreaterThan(0);
      for (const i of card.interfaces)
        expect(i.probe, `${name} ${i.url}`).toMatchObject({ reachable: true, reason: 'Reachable' });
    }
  });

  it('a clean catalog (nested, with an inline card) verifies completely: ok', async () => {
    const inline = await signCard(ourCard('Inline Planner', `${recipe.origin}/a2a`), [ours]);
    files.routes.set(
      '/good.json',
      json({
        specVersion: '1.0',
        entries: [
          cardEntry('urn:recipes', `${recipe.origin}/.well-known/agent-card.json`),
          cardEntry('urn:scheduler', `${sidecar.origin}/.well-known/agent-card.json`),
          catalogEntry('urn:more', 'more.json'),
        ],
      }),
    );
    files.routes.set(
      '/more.json',
      json({
        specVersion: '1.0',
        entries: [{ identifier: 'urn:inline', type: A2A_AGENT_CARD_MEDIA_TYPE, data: inline }],
      }),
    );
    const report = await run({ urls: [`${files.origin}/good.json`], probe: { timeoutMs: 5000 } });
    expect(report.errors).toEqual([]);
    expect(report.cards.map((c) => [c.name, c.ok])).toEqual(
      expect.arrayContaining([
        ['Recipe Finder', true],
        ['Team Scheduler', true],
        ['Inline Planner', true],
      ]),
    );
    expect(byName(report.cards, 'Inline Planner').source).toBe(`${files.origin}/more.json#entries[0]`);
    expect(report.ok).toBe(true);
  });

  it('filters by skill, tag and text; the rest is counted as filtered out', async () => {
    const url = `${files.origin}/catalog.json`;
    const names = async (filter: DiscoverOptions['filter']) => {
      const report = await run({ urls: [url], filter });
      return { names: report.cards.map((c) => c.name).sort(), out: report.filteredOut };
    };
    expect(await names({ skills: ['find-recipe'] })).toEqual({ names: ['Recipe Finder'], out: 4 });
    expect(await names({ tags: ['LANGUAGE'] })).toEqual({ names: ['Stranger Agent'], out: 4 });
    expect(await names({ texts: ['schedule'] })).toEqual({
      names: ['Jku Elsewhere', 'Tampered Scheduler', 'Team Scheduler'],
      out: 2,
    });
    expect(await names({ skills: ['plan-schedule'], texts: ['calendar'] })).toEqual({
      names: ['Tampered Scheduler'],
      out: 4,
    });
  });
});

describe('discover: from an origin', () => {
  it('an agent origin without a catalog: its agent card, verified', async () => {
    const report = await run({ urls: [recipe.origin] });
    expect(report.errors).toEqual([]);
    expect(report.cards).toHaveLength(1);
    expect(report.cards[0]).toMatchObject({
      name: 'Recipe Finder',
      source: `${recipe.origin}/.well-known/agent-card.json`,
      ok: true,
    });
  });

  it('an origin with /.well-known/ai-catalog.json: the catalog', async () => {
    files.routes.set(
      '/.well-known/ai-catalog.json',
      json({
        specVersion: '1.0',
        entries: [cardEntry('urn:s', `${sidecar.origin}/.well-known/agent-card.json`)],
      }),
    );
    try {
      const report = await run({ urls: [`${files.origin}/`] });
      expect(report.catalogs.map((c) => c.url)).toEqual([`${files.origin}/.well-known/ai-catalog.json`]);
      expect(report.cards.map((c) => [c.name, c.ok])).toEqual([['Team Scheduler', true]]);
    } finally {
      files.routes.delete('/.well-known/ai-catalog.json');
    }
  });

  it('an HTML page or a 401 where the catalog would be means no catalog: the card is used, quietly', async () => {
    files.routes.set('/.well-known/agent-card.json', files.routes.get('/tampered.json')!);
    try {
      for (const route of [
        { headers: { 'content-type': 'text/html' }, body: '<html>app shell</html>' },
        { status: 401, body: '{}' },
        { body: '{"hello":"world"}' },
      ]) {
        files.routes.set('/.well-known/ai-catalog.json', route);
        const report = await run({ urls: [`${files.origin}/`] });
        expect(report.errors).toEqual([]);
        expect(report.cards.map((c) => c.name)).toEqual(['Tampered Scheduler']);
      }
      files.routes.set('/.well-known/ai-catalog.json', { status: 503, body: 'down' });
      const report = await run({ urls: [`${files.origin}/`] });
      expect(report.errors).toEqual([expect.objectContaining({ code: 'http', message: 'HTTP 503' })]);
      expect(report.cards.map((c) => c.name)).toEqual(['Tampered Scheduler']);
    } finally {
      files.routes.delete('/.well-known/ai-catalog.json');
      files.routes.delete('/.well-known/agent-card.json');
    }
  });

  it('several origins at once: the outcome of each is its own', async () => {
    const report = await run({ urls: [recipe.origin, `${files.origin}/`, stranger.origin, sidecar.origin] });
    expect(report.cards.map((c) => c.name).sort()).toEqual([
      'Recipe Finder',
      'Stranger Agent',
      'Team Scheduler',
    ]);
    expect(report.errors).toEqual([
      expect.objectContaining({
        url: `${files.origin}/.well-known/agent-card.json`,
        message: `no AI Catalog (${files.origin}/.well-known/ai-catalog.json: HTTP 404) and no agent card (HTTP 404)`,
      }),
    ]);
  });

  it('a host the policy refuses is reported once', async () => {
    const report = await discover({
      urls: [`${files.origin}/`],
      policy: createAddressPolicy(),
      jwks: trusted,
    });
    expect(report.errors).toEqual([
      expect.objectContaining({ code: 'blocked', url: `${files.origin}/.well-known/ai-catalog.json` }),
    ]);
  });

  it('an origin with neither says so in one error', async () => {
    const report = await run({ urls: [`${files.origin}/`] });
    expect(report.cards).toEqual([]);
    expect(report.errors).toEqual([
      expect.objectContaining({
        code: 'not-found',
        message: `no AI Catalog (${files.origin}/.well-known/ai-catalog.json: HTTP 404) and no agent card (HTTP 404)`,
      }),
    ]);
  });
});

describe('discover: catalog signatures', () => {
  it('verifies a signed catalog and reports a changed one', async () => {
    const catalog = {
      specVersion: '1.0',
      entries: [cardEntry('urn:s', `${sidecar.origin}/.well-known/agent-card.json`)],
    };
    const signed = await signCatalog(catalog, ours);
    files.routes.set('/signed.json', json(signed));
    files.routes.set(
      '/changed.json',
      json({ ...signed, entries: [cardEntry('urn:s', `${stranger.origin}/.well-known/agent-card.json`)] }),
    );
    const good = await run({ urls: [`${files.origin}/signed.json`] });
    expect(good.catalogs[0]!.signature).toMatchObject({ status: 'verified', kid: 'team-a' });
    expect(good.ok).toBe(true);
    const bad = await run({ urls: [`${files.origin}/changed.json`] });
    expect(bad.errors).toEqual([
      expect.objectContaining({
        code: 'catalog-invalid',
        message: expect.stringMatching(/^catalog signature: the catalog was changed after it was signed/),
      }),
    ]);
    expect(bad.ok).toBe(false);
  });
});

describe('discover: jku only as a hint, followed with --trust-jku on the same host over https', () => {
  let tlsFiles: FileServer;
  let ca: string;
  let card: Record<string, unknown>;
  beforeAll(async () => {
    const testCa = await createTestCa('discover test CA');
    ca = testCa.cert;
    tlsFiles = await startFileServer(await testCa.issue({ ips: ['127.0.0.1'] }));
    const key = await importSigningKey(JSON.stringify(await generateSigningJwk('ES384', 'published')));
    card = await signCard(ourCard('Published Keys', `${recipe.origin}/a2a`), [key], {
      jku: `${tlsFiles.origin}/jwks.json`,
    });
    tlsFiles.routes.set('/jwks.json', json(publicJwks([key])));
    tlsFiles.routes.set('/card.json', json(card));
  });
  afterAll(() => tlsFiles?.close());

  it('without --trust-jku the jku is not fetched, and the message says how to trust it', async () => {
    const report = await run({ urls: [`${tlsFiles.origin}/card.json`], ca });
    expect(report.cards[0]!.signature.status).toBe('untrusted');
    expect(report.cards[0]!.signature.message).toContain(
      "is only a hint: give the signer's keys with --jwks, or follow it with --trust-jku",
    );
    expect(tlsFiles.seen.map((s) => s.path)).not.toContain('/jwks.json');
  });

  it('with --trust-jku the JWKS of the same host is fetched over https and the card verifies', async () => {
    const report = await run({ urls: [`${tlsFiles.origin}/card.json`], ca, trustJku: true });
    expect(report.cards[0]!.signature).toMatchObject({ status: 'verified', kid: 'published' });
    expect(report.ok).toBe(true);
  });

  it('--jwks URL: keys fetched from a URL the user gave', async () => {
    const report = await run({
      urls: [`${tlsFiles.origin}/card.json`],
      ca,
      jwks: { keys: [] },
      jwksUrls: [`${tlsFiles.origin}/jwks.json`],
    });
    expect(report.cards[0]!.signature).toMatchObject({ status: 'verified', kid: 'published' });
    const missing = await run({
      urls: [`${tlsFiles.origin}/card.json`],
      ca,
      jwksUrls: [`${tlsFiles.origin}/nope.json`],
    });
    expect(missing.errors).toContainEqual(
      expect.objectContaining({ code: 'jwks', message: `--jwks ${tlsFiles.origin}/nope.json: HTTP 404` }),
    );
  });
});

describe('discover: the a2a-tck card signing vectors, served in a catalog', () => {
  it("verifies every signed vector card with the vectors' public key, and no other", async () => {
    const v = vectors();
    const entries = v.signing_cases.map((c, i) => {
      const signed = {
        ...c.agent_card,
        signatures: [{ protected: c.expected_protected_b64, signature: c.signature }],
      };
      files.routes.set(`/tck/${i}.json`, json(signed));
      return cardEntry(`urn:tck:${c.id}`, `/tck/${i}.json`);
    });
    expect(entries.length).toBeGreaterThan(0);
    files.routes.set('/tck.json', json({ specVersion: '1.0', entries }));
    const report = await run({ urls: [`${files.origin}/tck.json`], jwks: { keys: [v.public_jwk as JWK] } });
    expect(report.errors).toEqual([]);
    expect(report.cards).toHaveLength(entries.length);
    for (const card of report.cards) {
      expect(card.signature, card.source).toMatchObject({
        status: 'verified',
        kid: 'key-1',
        canonicalization: 'jcs',
      });
    }
    const untrusted = await run({ urls: [`${files.origin}/tck.json`] });
    expect(untrusted.cards.map((c) => c.signature.status)).toEqual(entries.map(() => 'untrusted'));
  });
});
