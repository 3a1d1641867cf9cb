/** `agentcard discover` as a real process, and `--cache` across runs. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateSigningJwk } from '../../../operator/card/keygen.ts';
import { renderV1 } from '../../../operator/card/render.ts';
import { importSigningKey, publicJwks, signCard, type SigningKey } from '../../../operator/card/sign.ts';
import { validateCard } from '../../../operator/card/validate.ts';
import { DirectoryCache } from '../../../operator/discover/cache.ts';
import { discover } from '../../../operator/discover/discover.ts';
import { createAddressPolicy } from '../../../operator/probe/policy.ts';
import { minimalCard } from '../../support/cards.ts';
import { agentcard, expectOneLineError } from '../../support/cli.ts';
import {
  type FileServer,
  type SidecarServer,
  json,
  startCardSidecar,
  startFileServer,
} from '../../support/discover-servers.ts';

let key: SigningKey;
let sidecar: SidecarServer;
let files: FileServer;
let dir: string;
let jwksFile: string;
const LOOPBACK = ['--allow-cidr', '127.0.0.0/8'];

beforeAll(async () => {
  key = await importSigningKey(JSON.stringify(await generateSigningJwk('ES256', 'cli-key')));
  const card = await signCard(renderV1(validateCard(minimalCard()).card!), [key]);
  [sidecar, files] = await Promise.all([startCardSidecar(card, publicJwks([key])), startFileServer()]);
  dir = await mkdtemp(join(tmpdir(), 'discover-cli-'));
  jwksFile = join(dir, 'trusted.json');
  await writeFile(jwksFile, JSON.stringify(publicJwks([key])));
  files.routes.set('/card.json', json(card));
});
afterAll(async () => {
  await Promise.all([sidecar?.close(), files?.close(), dir && rm(dir, { recursive: true })]);
});

describe('agentcard discover', () => {
  it('exit 0 and a table when every card verifies (the sidecar origin, keys from a file)', async () => {
    const r = await agentcard(['discover', sidecar.origin, '--jwks', jwksFile, ...LOOPBACK]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.stdout).toMatch(/^STATUS +NAME +VERSION +SIGNATURE +INTERFACES +SOURCE\n/);
    expect(r.stdout).toContain(
      `ok      Recipe Agent  1.0.0    verified cli-key  1           ${sidecar.origin}/.well-known/agent-card.json`,
    );
    expect(r.stdout).toMatch(/1 card, 1 ok, 0 catalogs, 0 errors\n$/);
  });

  it('keys from the served JWKS URL, JSON output', async () => {
    const r = await agentcard([
      'discover',
      sidecar.origin,
      '--jwks',
      `${sidecar.origin}/.well-known/jwks.json`,
      '-o',
      'json',
      ...LOOPBACK,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as {
      ok: boolean;
      cards: { name: string; signature: { status: string; kid: string } }[];
    };
    expect(report.ok).toBe(true);
    expect(report.cards).toEqual([
      expect.objectContaining({
        name: 'Recipe Agent',
        signature: expect.objectContaining({ status: 'verified', kid: 'cli-key' }),
      }),
    ]);
  });

  it('exit 1 when a card does not verify, with a hint when no keys were given', async () => {
    const r = await agentcard(['discover', sidecar.origin, ...LOOPBACK]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      'signature untrusted: no signature from a trusted key (kid cli-key: no trusted key with kid "cli-key" for ES256)',
    );
    expect(r.stderr).toBe('agentcard discover: hint: give the keys you trust with --jwks FILE|URL\n');
  });

  it('exit 1 with a hint when loopback is not allowed', async () => {
    const r = await agentcard(['discover', sidecar.origin, '--jwks', jwksFile]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('blocked: refused by the address policy: 127.0.0.1 is loopback');
    expect(r.stderr).toContain('hint: --allow-cidr');
  });

  it.each([
    [[], /nothing to discover: give a URL/],
    [['ftp://a.example/'], /'ftp:\/\/a.example\/' is not an http\(s\) URL/],
    [['https://a.example/', '--output', 'yaml'], /--output must be text or json, not 'yaml'/],
    [['https://a.example/', '--allow-cidr', '300.0.0.0/8'], /--allow-cidr: /],
    [['https://a.example/', '--max-depth', '0'], /--max-depth wants a whole number from 1 to 64, not '0'/],
    [['https://a.example/', '--timeout', 'soon'], /'soon' is not a duration/],
    [['https://a.example/', '--bogus'], /unknown option --bogus/],
    [
      ['https://a.example/', '--ca', '/nonexistent/ca.pem'],
      /--ca \/nonexistent\/ca.pem: cannot read \(ENOENT\)/,
    ],
  ])('usage error %j: exit 2, one line', async (args, pattern) => {
    expectOneLineError(await agentcard(['discover', ...args]), pattern, 2);
  });

  it('credentials in a URL never reach the output', async () => {
    expectOneLineError(
      await agentcard(['discover', 'ftp://user:s3cret@a.example/']),
      /'ftp:\/\/\*\*\*@a.example\/' is not/,
      2,
    );
    const r = await agentcard([
      'discover',
      'https://user:s3cret@a.example/',
      '--jwks',
      'https://k:s3cret@a.example/jwks.json',
      '-o',
      'json',
    ]);
    expect(r.code).toBe(1);
    expect(r.stdout + r.stderr).not.toContain('s3cret');
    expect(r.stdout).toContain('URLs with credentials (user:password@) are not fetched');
  });

  it('an unreadable --jwks file is one clear line', async () => {
    expectOneLineError(
      await agentcard(['discover', 'https://a.example/', '--jwks', join(dir, 'missing.json')]),
      /cannot read .*missing.json: no such file/,
    );
  });

  it('--help prints the usage', async () => {
    const r = await agentcard(['discover', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('usage: agentcard discover URL [URL ...] [options]');
  });
});

describe('--cache DIR', () => {
  const policy = createAddressPolicy({ allowCidrs: ['127.0.0.0/8'] });
  const jwks = () => publicJwks([key]);

  it('revalidates with If-None-Match when max-age has passed, and reuses the 304', async () => {
    const cacheDir = join(dir, 'revalidate');
    files.routes.set('/etag.json', {
      ...json(JSON.parse(files.routes.get('/card.json')!.body!)),
      headers: { etag: '"v1"', 'cache-control': 'max-age=0' },
    });
    const run = () =>
      discover({
        urls: [`${files.origin}/etag.json`],
        policy,
        jwks: jwks(),
        cache: new DirectoryCache(cacheDir),
      });
    const first = await run();
    expect(first.cards[0]).toMatchObject({ ok: true });
    expect(first.cards[0]!.cache).toBeUndefined();
    const before = files.seen.length;
    const second = await run();
    expect(files.seen.slice(before)).toEqual([{ path: '/etag.json', ifNoneMatch: '"v1"' }]);
    expect(second.cards[0]).toMatchObject({ ok: true, cache: 'revalidated' });
    expect(second.stats.bytes).toBe(0);
  });

  it('sends no request while max-age lasts; never stores no-store', async () => {
    const cacheDir = join(dir, 'fresh');
    const body = files.routes.get('/card.json')!.body!;
    files.routes.set('/fresh.json', { body, headers: { 'cache-control': 'public, max-age=300' } });
    files.routes.set('/nostore.json', { body, headers: { 'cache-control': 'no-store', etag: '"n"' } });
    const run = (path: string) =>
      discover({
        urls: [`${files.origin}${path}`],
        policy,
        jwks: jwks(),
        cache: new DirectoryCache(cacheDir),
      });
    await run('/fresh.json');
    await run('/nostore.json');
    const before = files.seen.length;
    const fresh = await run('/fresh.json');
    expect(fresh.cards[0]).toMatchObject({ ok: true, cache: 'fresh' });
    expect(fresh.stats.requests).toBe(0);
    const nostore = await run('/nostore.json');
    expect(nostore.cards[0]!.cache).toBeUndefined();
    expect(files.seen.slice(before)).toEqual([{ path: '/nostore.json' }]);
  });

  it("the CLI flag: the second run reuses the sidecar's card while its max-age lasts", async () => {
    const cacheDir = join(dir, 'cli');
    const args = [
      'discover',
      sidecar.origin,
      '--jwks',
      jwksFile,
      '--cache',
      cacheDir,
      '-o',
      'json',
      ...LOOPBACK,
    ];
    const first = JSON.parse((await agentcard(args)).stdout) as { cards: { cache?: string }[] };
    const second = JSON.parse((await agentcard(args)).stdout) as {
      ok: boolean;
      stats: { requests: number };
      cards: { cache?: string }[];
    };
    expect(first.cards[0]!.cache).toBeUndefined();
    expect(second.ok).toBe(true);
    expect(second.cards[0]!.cache).toBe('fresh'); // the sidecar's max-age (60 s here) has not passed
  });
});
