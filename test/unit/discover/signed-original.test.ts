/** `agentcard discover URL --signed-original FILE` as a real process, against real HTTP servers. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningJwk } from '../../../operator/card/keygen.ts';
import { renderV1 } from '../../../operator/card/render.ts';
import { importSigningKey, publicJwks, signCard } from '../../../operator/card/sign.ts';
import { validateCard } from '../../../operator/card/validate.ts';
import { minimalCard } from '../../support/cards.ts';
import { agentcard, expectOneLineError } from '../../support/cli.ts';
import {
  type FileServer,
  type SidecarServer,
  json,
  startCardSidecar,
  startFileServer,
} from '../../support/discover-servers.ts';

let sidecar: SidecarServer;
let files: FileServer;
let dir: string;
let original: string;
let jwksFile: string;
const LOOPBACK = ['--allow-cidr', '127.0.0.0/8'];

beforeAll(async () => {
  const key = await importSigningKey(JSON.stringify(await generateSigningJwk('ES256', 'served-key')));
  const card = await signCard(renderV1(validateCard(minimalCard()).card!), [key]);
  [sidecar, files] = await Promise.all([startCardSidecar(card, publicJwks([key])), startFileServer()]);
  dir = await mkdtemp(join(tmpdir(), 'discover-served-'));
  original = join(dir, 'signed.json');
  jwksFile = join(dir, 'jwks.json');
  await writeFile(original, JSON.stringify(card));
  await writeFile(jwksFile, JSON.stringify(publicJwks([key])));
  const rewritten = structuredClone(card) as { supportedInterfaces: Array<{ url: string }> };
  rewritten.supportedInterfaces[0]!.url = 'https://gateway.example.net/a2a';
  files.routes.set('/rewritten.json', json(rewritten));
  const { signatures: _s, ...stripped } = card;
  files.routes.set('/stripped.json', json(stripped));
});
afterAll(async () => {
  await Promise.all([sidecar?.close(), files?.close(), dir && rm(dir, { recursive: true })]);
});

const run = (url: string, ...more: string[]) =>
  agentcard(['discover', url, '--signed-original', original, '--jwks', jwksFile, ...LOOPBACK, ...more]);

describe('agentcard discover --signed-original', () => {
  it('exit 0 when the origin serves the signed card', async () => {
    const r = await run(sidecar.origin);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.stdout).toBe(
      `${sidecar.origin}/.well-known/agent-card.json: ServedAsSigned\n  the published card; its signature verifies (kid served-key)\n`,
    );
  });

  it('exit 1 and the differing paths for a rewritten card', async () => {
    const r = await run(`${files.origin}/rewritten.json`);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe(
      `${files.origin}/rewritten.json: Rewritten\n  differs at supportedInterfaces[0].url; its signatures no longer verify\n  paths: supportedInterfaces[0].url\n`,
    );
  });

  it('JSON output for a card without its signatures', async () => {
    const r = await run(`${files.origin}/stripped.json`, '-o', 'json');
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({
      verdict: 'SignatureBroken',
      paths: ['signatures'],
      ok: false,
      publishedDigest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    });
  });

  it('Unreachable under the address policy (loopback not allowed)', async () => {
    const r = await agentcard([
      'discover',
      sidecar.origin,
      '--signed-original',
      original,
      '--jwks',
      jwksFile,
    ]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(': Unreachable\n  refused by the address policy: 127.0.0.1 is loopback');
  });

  it('usage errors: no keys, an original that is not a card', async () => {
    const noKeys = await agentcard(['discover', sidecar.origin, '--signed-original', original]);
    expectOneLineError(noKeys, /--signed-original needs the card's own public keys as --jwks FILE/, 2);
    await writeFile(join(dir, 'list.json'), '[1]');
    const notCard = await agentcard([
      'discover',
      sidecar.origin,
      '--signed-original',
      join(dir, 'list.json'),
      '--jwks',
      jwksFile,
    ]);
    expectOneLineError(notCard, /--signed-original .*list\.json: not a JSON object/, 2);
  });
});
