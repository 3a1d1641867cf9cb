/**
 * Trust bundles and identities on the command line (`agentcard discover` and `agentcard verify`
 * as real processes), and the independent Go verifier (crypto/x509, go-jose, go-spiffe) accepting
 * the same cards and refusing the same bad chains.
 */
import { webcrypto } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderV1 } from '../../../operator/card/render.ts';
import { importCertificateSigningKey, signCard } from '../../../operator/card/sign.ts';
import { verifyCard } from '../../../operator/card/verify.ts';
import { MAX_CHAIN_LENGTH, parseTrustBundle } from '../../../operator/card/x5c.ts';
import { tlsSecretEntries } from '../../support/signing-certs.ts';
import { publisherIdentity, withTrustManifest } from '../../../operator/catalog/trust-manifest.ts';
import { validateCard } from '../../../operator/card/validate.ts';
import { A2A_AGENT_CARD_MEDIA_TYPE } from '../../../operator/catalog/document.ts';
import { minimalCard } from '../../support/cards.ts';
import { agentcard, expectOneLineError } from '../../support/cli.ts';
import { type FileServer, json, startFileServer } from '../../support/discover-servers.ts';
import { goVerifier, goVerify } from '../../support/go-verifier.ts';
import {
  createIntermediate,
  createLeaf,
  createRoot,
  signWithChain,
  type TestCert,
} from '../../support/x5c-signer.ts';

const TEAM_A = 'spiffe://example.org/ns/team-a/*';
const AGENT_A = 'spiffe://example.org/ns/team-a/sa/recipes';
const AGENT_B = 'spiffe://example.org/ns/team-b/sa/billing';
const CATALOG_A = 'spiffe://example.org/ns/team-a/sa/catalog';
const LOOPBACK = ['--allow-cidr', '127.0.0.0/8'];

let files: FileServer;
let dir: string;
let root: TestCert;
let intermediate: TestCert;
let caFile: string;
const cardFiles: Record<string, string> = {};

const agentCard = (name: string) => ({ ...renderV1(validateCard(minimalCard()).card!), name });

async function writeCard(name: string, card: Record<string, unknown>): Promise<string> {
  const file = join(dir, `${name}.json`);
  await writeFile(file, JSON.stringify(card));
  cardFiles[name] = file;
  return file;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'trust-bundle-'));
  root = await createRoot('example.org root');
  intermediate = await createIntermediate(root, 'example.org spire');
  const leafA = await createLeaf(intermediate, { uris: [AGENT_A] });
  const leafB = await createLeaf(intermediate, { uris: [AGENT_B] });
  const cardA = await signWithChain(agentCard('Recipes'), leafA, [intermediate]);
  const cardB = await signWithChain(agentCard('Billing'), leafB, [intermediate]);
  caFile = join(dir, 'ca.pem');
  await writeFile(caFile, root.pem);
  await writeCard('a', cardA);
  await writeCard('b', cardB);
  files = await startFileServer();
  files.routes.set('/a.json', json(cardA));
  files.routes.set('/b.json', json(cardB));
  files.routes.set('/ca.pem', { headers: { 'content-type': 'application/x-pem-file' }, body: root.pem });
  files.routes.set(
    '/catalog.json',
    json({
      specVersion: '1.0',
      entries: [
        { identifier: 'urn:air:example.org:team-a:recipes', type: A2A_AGENT_CARD_MEDIA_TYPE, url: '/a.json' },
        { identifier: 'urn:air:example.org:team-b:billing', type: A2A_AGENT_CARD_MEDIA_TYPE, url: '/b.json' },
      ],
    }),
  );
  // A catalog whose entries carry trust manifests signed by the catalog's own certificate: one
  // binds the card served, the other a card that is not the one served.
  const catalogLeaf = await createLeaf(intermediate, { uris: [CATALOG_A] });
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', catalogLeaf.keys.privateKey));
  const catalogKey = await importCertificateSigningKey({
    certificate: catalogLeaf.pem + intermediate.pem,
    privateKey: `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString('base64')}\n-----END PRIVATE KEY-----\n`,
  });
  const manifested = async (identifier: string, url: string, servedText: string) =>
    withTrustManifest(
      { identifier, type: A2A_AGENT_CARD_MEDIA_TYPE, url },
      {
        key: catalogKey,
        publisher: publisherIdentity(catalogKey)!,
        now: '2026-12-02T04:00:00Z',
        served: new Map([[identifier, servedText]]),
        previous: new Map(),
      },
    );
  files.routes.set('/a-copy.json', json(cardA));
  files.routes.set(
    '/manifests.json',
    json({
      specVersion: '1.0',
      entries: [
        await manifested(
          'urn:air:example.org:team-a:recipes',
          `${files.origin}/a.json`,
          JSON.stringify(cardA),
        ),
        await manifested('urn:air:example.org:team-a:copy', `${files.origin}/a-copy.json`, '{"not":"it"}'),
      ],
    }),
  );
  // Bad chains for the Go verifier's refusals.
  const other = await createRoot('other root');
  await writeFile(join(dir, 'other.pem'), other.pem);
  const expired = await createLeaf(intermediate, {
    uris: [AGENT_A],
    notBefore: new Date(Date.now() - 7200_000),
    notAfter: new Date(Date.now() - 3600_000),
  });
  await writeCard('expired', await signWithChain(agentCard('Expired'), expired, [intermediate]));
  const noUsage = await createLeaf(intermediate, { uris: [AGENT_A], keyUsage: 0x10 /* keyEncipherment */ });
  await writeCard('no-usage', await signWithChain(agentCard('No usage'), noUsage, [intermediate]));
  const impostor = await createIntermediate(root, 'example.org spire');
  await writeCard('tampered', await signWithChain(agentCard('Tampered'), leafA, [impostor]));
  await writeCard('changed', { ...cardA, description: 'changed after signing' });
  // An identity that only shares a string prefix with the pattern (team-a vs team-ab).
  const neighbour = await createLeaf(intermediate, { uris: ['spiffe://example.org/ns/team-ab/sa/recipes'] });
  await writeCard('neighbour', await signWithChain(agentCard('Neighbour'), neighbour, [intermediate]));
  // A leaf under MAX_CHAIN_LENGTH intermediates: x5c carries one certificate more than the limit.
  let issuer = root;
  const levels: TestCert[] = [];
  for (let i = 0; i < MAX_CHAIN_LENGTH; i++) {
    issuer = await createIntermediate(issuer, `level ${i}`);
    levels.unshift(issuer);
  }
  const deep = await createLeaf(issuer, { uris: [AGENT_A] });
  await writeCard('too-long', await signWithChain(agentCard('Too long'), deep, levels));
});
afterAll(async () => {
  await Promise.all([files?.close(), dir && rm(dir, { recursive: true })]);
});

describe('agentcard discover --trust-bundle --identity', () => {
  it('verifies the card of team-a by its workload identity and refuses the one of team-b', async () => {
    const r = await agentcard([
      'discover',
      `${files.origin}/catalog.json`,
      '--trust-bundle',
      caFile,
      '--identity',
      TEAM_A,
      ...LOOPBACK,
    ]);
    expect(r.code, r.stderr + r.stdout).toBe(1);
    expect(r.stdout).toMatch(
      new RegExp(`^ok +Recipes +1\\.0\\.0 +verified ${AGENT_A} +1 +${files.origin}/a\\.json$`, 'm'),
    );
    expect(r.stdout).toMatch(
      new RegExp(`^FAIL +Billing +1\\.0\\.0 +untrusted +1 +${files.origin}/b\\.json$`, 'm'),
    );
    expect(r.stdout).toContain(
      `signature untrusted: no signature from a trusted key (kid svid: certificate chain refused: the leaf identity ${AGENT_B} matches none of the trusted identities (${TEAM_A}))`,
    );
    expect(r.stdout).toMatch(/2 cards, 1 ok, 1 catalog, 0 errors\n$/);
  });

  it("checks each entry's trust manifest against its signing certificate and the card served", async () => {
    const r = await agentcard([
      'discover',
      `${files.origin}/manifests.json`,
      '--trust-bundle',
      caFile,
      '--identity',
      TEAM_A,
      ...LOOPBACK,
    ]);
    expect(r.code, r.stderr + r.stdout).toBe(1);
    expect(r.stdout).toMatch(
      new RegExp(
        `^ok +Recipes +1\\.0\\.0 +verified ${AGENT_A} +1 +${files.origin}/a\\.json\n +trust manifest verified: identity ${CATALOG_A} \\(its signing certificate\\)$`,
        'm',
      ),
    );
    expect(r.stdout).toMatch(
      new RegExp(
        `^FAIL +Recipes +1\\.0\\.0 +verified ${AGENT_A} +1 +${files.origin}/a-copy\\.json\n +trust manifest invalid: the card served at the url does not match subject\\.digest$`,
        'm',
      ),
    );
    // A pattern that leaves the catalog's identity out: the manifest is not trusted.
    const narrow = await agentcard([
      'discover',
      `${files.origin}/manifests.json`,
      '--trust-bundle',
      caFile,
      '--identity',
      'spiffe://example.org/ns/team-a/sa/recipes',
      '-o',
      'json',
      ...LOOPBACK,
    ]);
    const report = JSON.parse(narrow.stdout) as {
      cards: { source: string; ok: boolean; trustManifest?: Record<string, unknown> }[];
    };
    const recipes = report.cards.find((c) => c.source.endsWith('/a.json'))!;
    expect(recipes.ok).toBe(false);
    expect(recipes.trustManifest).toMatchObject({ status: 'untrusted', identity: CATALOG_A });
    expect(recipes.trustManifest!.message).toContain(
      `the leaf identity ${CATALOG_A} matches none of the trusted identities`,
    );
  }, 120_000);

  it('takes the bundle from a URL, and names the identity in the JSON report', async () => {
    const r = await agentcard([
      'discover',
      `${files.origin}/a.json`,
      '--trust-bundle',
      `${files.origin}/ca.pem`,
      '--identity',
      AGENT_A,
      '-o',
      'json',
      ...LOOPBACK,
    ]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    const report = JSON.parse(r.stdout) as { cards: { signature: Record<string, unknown> }[] };
    expect(report.cards[0]!.signature).toMatchObject({
      status: 'verified',
      identity: AGENT_A,
      kid: 'svid',
      message: `verified: identity ${AGENT_A} (kid svid)`,
    });
  });

  it('a bundle URL without certificates is an error of the run', async () => {
    const r = await agentcard([
      'discover',
      `${files.origin}/a.json`,
      '--trust-bundle',
      `${files.origin}/a.json`,
      '--identity',
      TEAM_A,
      ...LOOPBACK,
    ]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      `trust-bundle: --trust-bundle ${files.origin}/a.json: the response: no PEM certificate`,
    );
  });

  // Each CLI run starts a Node.js process: seconds each on a loaded machine.
  it(
    'usage errors: a bundle without identities, a bad pattern, a file without PEM',
    { timeout: 120_000 },
    async () => {
      expectOneLineError(
        await agentcard(['discover', `${files.origin}/a.json`, '--trust-bundle', caFile]),
        /--trust-bundle needs --identity PATTERN/,
        2,
      );
      expectOneLineError(
        await agentcard([
          'verify',
          '-f',
          cardFiles.a!,
          '--trust-bundle',
          caFile,
          '--identity',
          'spiffe://example.org/*/x',
        ]),
        /--identity: identity pattern 'spiffe:\/\/example.org\/\*\/x': '\*' is only allowed as the whole last path segment/,
        2,
      );
      expectOneLineError(
        await agentcard(['verify', '-f', cardFiles.a!, '--trust-bundle', cardFiles.a!, '--identity', TEAM_A]),
        /--trust-bundle .*a\.json: no PEM certificate/,
        2,
      );
    },
  );
});

describe('agentcard verify --trust-bundle --identity', () => {
  it(
    'prints the identity that signed, and refuses another namespace with the reason',
    { timeout: 120_000 },
    async () => {
      const ok = await agentcard([
        'verify',
        '-f',
        cardFiles.a!,
        '--trust-bundle',
        caFile,
        '--identity',
        TEAM_A,
      ]);
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout).toBe(`verified: identity ${AGENT_A} (kid svid)\n`);
      const bad = await agentcard([
        'verify',
        '-f',
        cardFiles.b!,
        '--trust-bundle',
        caFile,
        '--identity',
        TEAM_A,
      ]);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain(
        `signatures[0] (kid svid): certificate chain refused: the leaf identity ${AGENT_B} matches none of the trusted identities`,
      );
      const expired = await agentcard([
        'verify',
        '-f',
        cardFiles.expired!,
        '--trust-bundle',
        caFile,
        '--identity',
        TEAM_A,
      ]);
      expect(expired.code).toBe(1);
      expect(expired.stderr).toMatch(/certificate chain refused: leaf expired at /);
    },
  );
});

describe('the independent Go verifier', () => {
  beforeAll(async () => {
    await goVerifier(); // builds it once per machine (modules from the Go module proxy)
  }, 600_000);

  it('accepts the cards our verifier accepts, with the same identity', async () => {
    expect(await goVerify({ card: cardFiles.a!, bundle: caFile, identity: TEAM_A })).toEqual({
      verified: true,
      identity: AGENT_A,
    });
    expect(
      await goVerify({ card: cardFiles.b!, bundle: caFile, identity: 'spiffe://example.org/ns/team-b/*' }),
    ).toEqual({ verified: true, identity: AGENT_B });
  });

  it('refuses what ours refuses: another namespace, another root, expired, no digitalSignature, tampered, changed, too long', async () => {
    const refuse = async (card: string, pattern: RegExp, bundle = caFile) => {
      const verdict = await goVerify({ card: cardFiles[card]!, bundle, identity: TEAM_A });
      expect(verdict.verified, card).toBe(false);
      expect(verdict.error, card).toMatch(pattern);
    };
    await refuse('b', /identity spiffe:\/\/example.org\/ns\/team-b\/sa\/billing does not match/);
    await refuse('neighbour', /identity spiffe:\/\/example.org\/ns\/team-ab\/sa\/recipes does not match/);
    await refuse('a', /chain: x509: certificate signed by unknown authority/, join(dir, 'other.pem'));
    await refuse('expired', /chain: x509: certificate has expired or is not yet valid/);
    await refuse('no-usage', /KeyUsage does not allow digitalSignature/);
    await refuse('tampered', /chain: x509: certificate signed by unknown authority/);
    await refuse('changed', /signature: go-jose\/go-jose: error in cryptographic primitive/);
    await refuse(
      'too-long',
      new RegExp(
        `chain: x5c has ${MAX_CHAIN_LENGTH + 1} certificates, more than the limit of ${MAX_CHAIN_LENGTH}`,
      ),
    );
    // The same chain within a raised limit validates: the refusal is the length, nothing else.
    expect(
      await goVerify({ card: cardFiles['too-long']!, bundle: caFile, identity: TEAM_A, maxChain: 6 }),
    ).toEqual({ verified: true, identity: AGENT_A });
    // Ours refuses it too, for the same reason.
    const ours = await agentcard([
      'verify',
      '-f',
      cardFiles['too-long']!,
      '--trust-bundle',
      caFile,
      '--identity',
      TEAM_A,
    ]);
    expect(ours.code).toBe(1);
    expect(ours.stderr).toContain(
      `x5c has ${MAX_CHAIN_LENGTH + 1} certificates; at most ${MAX_CHAIN_LENGTH}`,
    );
  }, 120_000);

  it("accepts a card signed by the operator's certificate signer, as ours does", async () => {
    // A cert-manager style kubernetes.io/tls Secret: tls.crt = leaf + intermediate, ca.crt = root.
    const tls = await tlsSecretEntries({ uri: AGENT_A });
    const key = await importCertificateSigningKey({
      certificate: tls['tls.crt'],
      privateKey: tls['tls.key'],
      ca: tls['ca.crt'],
    });
    const signed = await signCard(agentCard('Operator signed'), [key]);
    const file = await writeCard('operator-signed', signed);
    const bundle = join(dir, 'operator-ca.pem');
    await writeFile(bundle, tls['ca.crt']);
    const ours = await verifyCard(
      signed,
      { keys: [] },
      { certificates: { roots: parseTrustBundle(tls['ca.crt'], 'ca.crt'), identities: [TEAM_A] } },
    );
    expect(ours).toMatchObject({ verified: true, identity: AGENT_A, kid: key.kid });
    expect(await goVerify({ card: file, bundle, identity: TEAM_A })).toEqual({
      verified: true,
      identity: AGENT_A,
    });
    expect(
      await goVerify({ card: file, bundle, identity: 'spiffe://example.org/ns/team-b/*' }),
    ).toMatchObject({ verified: false });
  });
});
