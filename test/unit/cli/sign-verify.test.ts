import { verifyAgentCardSignature, type AgentCard as SdkCard } from '@a2a-js/sdk';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderV03, renderV1 } from '../../../operator/card/render.ts';
import { serializeCard } from '../../../operator/card/serialize.ts';
import { validateSpec } from '../../../operator/card/validate.ts';
import { agentcard, expectOneLineError, tempDir } from '../../support/cli.ts';
import { repoRoot } from '../../support/paths.ts';

const { dir, cleanup } = tempDir();
afterAll(cleanup);
const path = (name: string) => join(dir, name);
const b64json = (b64: string) =>
  JSON.parse(Buffer.from(b64, 'base64url').toString()) as Record<string, unknown>;

function exampleSpec(file: string): unknown {
  const docs = parseAllDocuments(readFileSync(join(repoRoot, file), 'utf8')).map((d) => d.toJS());
  return docs.find((d) => d.kind === 'AgentCard').spec;
}

async function keygen(
  alg: string,
  kid: string,
): Promise<{ key: string; jwks: string; jwk: Record<string, string> }> {
  const key = path(`${kid}.jwk`);
  const jwks = path(`${kid}.jwks.json`);
  const r = await agentcard(['keygen', '--alg', alg, '--kid', kid, '--out', key, '--jwks-out', jwks]);
  expect(r.code, r.stderr).toBe(0);
  return { key, jwks, jwk: JSON.parse(readFileSync(key, 'utf8')) };
}

describe('agentcard render', () => {
  it('prints the v1 card of a manifest, the v0.3 shape, and the exact published bytes', async () => {
    const card = validateSpec(exampleSpec('test/fixtures/cards/support-agent.yaml')).card!;
    const v1 = await agentcard(['render', '-f', 'test/fixtures/cards/support-agent.yaml']);
    expect(v1.code, v1.stderr).toBe(0);
    expect(v1.stderr).toBe('');
    expect(JSON.parse(v1.stdout)).toEqual(renderV1(card));
    const v03 = await agentcard([
      'render',
      '-f',
      'test/fixtures/cards/support-agent.yaml',
      '--format',
      'v0.3',
    ]);
    expect(JSON.parse(v03.stdout)).toEqual(renderV03(card));
    const compact = await agentcard(['render', '-f', 'test/fixtures/cards/support-agent.yaml', '--compact']);
    expect(compact.stdout).toBe(serializeCard(renderV1(card)) + '\n');
  });

  it('prints lint warnings on stderr and picks one of several cards with --name', async () => {
    const two = path('two.yaml');
    const minimal = readFileSync(join(repoRoot, 'test/fixtures/cards/recipe-agent.yaml'), 'utf8');
    writeFileSync(
      two,
      `${minimal}---\n${minimal.replace('name: recipe-agent', 'name: other').replace('Finds recipes by ingredients and answers cooking questions.', 'Cooks.')}`,
    );
    expectOneLineError(
      await agentcard(['render', '-f', two]),
      /two\.yaml: 2 cards found; choose one with --name/,
    );
    const other = await agentcard(['render', '-f', two, '--name', 'other']);
    expect(other.code).toBe(0);
    expect(JSON.parse(other.stdout).description).toBe('Cooks.');
    expect(other.stderr).toBe(
      `${two}#2: warning: spec.card.description: shorter than 20 characters; say what the agent does and when to call it\n`,
    );
    expectOneLineError(
      await agentcard(['render', '-f', two, '--name', 'nobody']),
      /no AgentCard manifest or card named "nobody" found/,
    );
  });
});

describe('agentcard keygen, sign and verify', () => {
  let es: Awaited<ReturnType<typeof keygen>>;
  let ed: Awaited<ReturnType<typeof keygen>>;
  beforeAll(async () => {
    es = await keygen('ES256', 'es-1');
    ed = await keygen('EdDSA', 'ed-1');
  });

  it('keygen writes a private JWK with mode 0600 and a public JWKS, and never overwrites the key', async () => {
    expect(es.jwk).toMatchObject({ kty: 'EC', crv: 'P-256', kid: 'es-1', alg: 'ES256', use: 'sig' });
    expect(es.jwk.d).toBeTypeOf('string');
    expect(statSync(es.key).mode & 0o777).toBe(0o600);
    const jwks = JSON.parse(readFileSync(es.jwks, 'utf8'));
    expect(jwks.keys).toHaveLength(1);
    expect(jwks.keys[0]).not.toHaveProperty('d');
    expect(jwks.keys[0]).toMatchObject({ kid: 'es-1', alg: 'ES256', x: es.jwk.x });
    expectOneLineError(
      await agentcard(['keygen', '--alg', 'ES256', '--out', es.key]),
      /cannot write .*es-1\.jwk: it already exists/,
    );
    const toStdout = await agentcard(['keygen', '--alg', 'RS256']);
    expect(JSON.parse(toStdout.stdout)).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig' });
  });

  it('keygen --secret prints a Secret holding the key, which signs what its public JWKS verifies', async () => {
    const jwksFile = path('secret.jwks.json');
    const r = await agentcard([
      'keygen',
      '--alg',
      'ES256',
      '--kid',
      'in-secret',
      '--secret',
      'support-agent-signing',
      '--jwks-out',
      jwksFile,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const secret = JSON.parse(r.stdout) as {
      kind: string;
      metadata: { name: string; labels: Record<string, string> };
      stringData: Record<string, string>;
    };
    expect(secret).toMatchObject({
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: { name: 'support-agent-signing', labels: { 'agentcard.dev/signing-key': 'true' } },
    });
    expect(Object.keys(secret.stringData)).toEqual(['signing.jwk']);
    // The key in the Secret is the private half of the JWKS written next to it.
    const keyFile = path('from-secret.jwk');
    writeFileSync(keyFile, secret.stringData['signing.jwk']!);
    const signed = await agentcard(['sign', '-f', 'test/fixtures/cards/recipe-agent.yaml', '--key', keyFile]);
    expect(signed.code, signed.stderr).toBe(0);
    writeFileSync(path('from-secret.card.json'), signed.stdout);
    const verified = await agentcard(['verify', '-f', path('from-secret.card.json'), '--jwks', jwksFile]);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    expect(verified.stdout).toMatch(/in-secret/);

    const custom = await agentcard(['keygen', '--alg', 'EdDSA', '--secret', 'k', '--secret-key', 'jwk']);
    expect(Object.keys((JSON.parse(custom.stdout) as typeof secret).stringData)).toEqual(['jwk']);
    expectOneLineError(
      await agentcard(['keygen', '--alg', 'ES256', '--secret', 'Not_A_Name']),
      /--secret 'Not_A_Name' is not a valid Secret name/,
      2,
    );
    expectOneLineError(
      await agentcard(['keygen', '--alg', 'ES256', '--secret', 'k', '--secret-key', 'a/b']),
      /--secret-key 'a\/b' is not a valid Secret key/,
      2,
    );
    expectOneLineError(
      await agentcard(['keygen', '--alg', 'ES256', '--secret-key', 'jwk']),
      /--secret-key needs --secret/,
      2,
    );
    // Seven CLI processes in a row; on a loaded machine each start takes seconds.
  }, 120_000);

  it('signs a manifest; verify names the kid; the SDK verifies the output too', async () => {
    const signed = await agentcard(['sign', '-f', 'test/fixtures/cards/support-agent.yaml', '--key', es.key]);
    expect(signed.code, signed.stderr).toBe(0);
    const card = JSON.parse(signed.stdout);
    expect(card.signatures).toHaveLength(1);
    expect(b64json(card.signatures[0].protected)).toEqual({ alg: 'ES256', kid: 'es-1', typ: 'JOSE' });
    await verifyAgentCardSignature(async () => JSON.parse(readFileSync(es.jwks, 'utf8')).keys[0])(
      card as SdkCard,
    );

    const file = path('signed.json');
    writeFileSync(file, signed.stdout);
    const ok = await agentcard(['verify', '-f', file, '--jwks', es.jwks]);
    expect(ok).toEqual({ code: 0, stdout: 'verified: kid es-1\n', stderr: '' });
    const json = await agentcard(['verify', '-f', file, '--jwks', es.jwks, '--output', 'json']);
    expect(JSON.parse(json.stdout)).toEqual({
      verified: true,
      kid: 'es-1',
      results: [{ kid: 'es-1', alg: 'ES256', ok: true }],
    });
  });

  it('signs with several keys in order (rotation), --kid and --jku', async () => {
    const r = await agentcard([
      'sign',
      '-f',
      'test/fixtures/cards/recipe-agent.yaml',
      '--key',
      es.key,
      '--key',
      ed.key,
      '--kid',
      'renamed',
      '--jku',
      'https://keys.example.com/jwks.json',
      '--compact',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const card = JSON.parse(r.stdout);
    expect(r.stdout).toBe(serializeCard(card) + '\n');
    expect(card.signatures.map((s: { protected: string }) => b64json(s.protected))).toEqual([
      { alg: 'ES256', jku: 'https://keys.example.com/jwks.json', kid: 'renamed', typ: 'JOSE' },
      { alg: 'EdDSA', jku: 'https://keys.example.com/jwks.json', kid: 'ed-1', typ: 'JOSE' },
    ]);
    const file = path('rotated.json');
    writeFileSync(file, r.stdout);
    // the old kid "renamed" is unknown to the JWKS, the second signature verifies
    expect((await agentcard(['verify', '-f', file, '--jwks', ed.jwks])).stdout).toBe('verified: kid ed-1\n');
  });

  it('takes kid and alg defaults from spec.signing and reads PEM keys', async () => {
    const pem = path('rsa.pem');
    writeFileSync(
      pem,
      generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }),
    );
    const manifest = path('pss.yaml');
    const text = readFileSync(join(repoRoot, 'test/fixtures/cards/support-agent.yaml'), 'utf8').replace(
      '          key: signing.jwk',
      '          key: signing.jwk\n        kid: from-spec\n        alg: PS256\n    jku: https://keys.example.com/agent.jwks',
    );
    writeFileSync(manifest, text);
    const r = await agentcard(['sign', '-f', manifest, '--key', pem]);
    expect(r.code, r.stderr).toBe(0);
    const header = b64json(JSON.parse(r.stdout).signatures[0].protected);
    expect(header).toEqual({
      alg: 'PS256',
      jku: 'https://keys.example.com/agent.jwks',
      kid: 'from-spec',
      typ: 'JOSE',
    });
  });

  it('signs a bare card read from standard input', async () => {
    const card = renderV1(validateSpec(exampleSpec('test/fixtures/cards/recipe-agent.yaml')).card!);
    const r = await agentcard(['sign', '-f', '-', '--key', ed.key], { input: JSON.stringify(card) });
    expect(r.code, r.stderr).toBe(0);
    const { signatures, ...rest } = JSON.parse(r.stdout);
    expect(rest).toEqual(card);
    expect(signatures).toHaveLength(1);
  });

  it('refuses keys of the wrong type or kind, in one line, never echoing key material', async () => {
    expectOneLineError(
      await agentcard([
        'sign',
        '-f',
        'test/fixtures/cards/recipe-agent.yaml',
        '--key',
        es.key,
        '--alg',
        'ES384',
      ]),
      /key .*es-1\.jwk: the JWK says alg ES256 but alg ES384 was asked for/,
    );
    const { d: _d, alg: _alg, ...noAlg } = es.jwk;
    const publicOnly = path('public.jwk');
    writeFileSync(publicOnly, JSON.stringify(noAlg));
    expectOneLineError(
      await agentcard(['sign', '-f', 'test/fixtures/cards/recipe-agent.yaml', '--key', publicOnly]),
      /key .*public\.jwk: the JWK is a public key; signing needs the private key/,
    );
    const ed25519Pem = path('ed.pem');
    writeFileSync(
      ed25519Pem,
      generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }),
    );
    expectOneLineError(
      await agentcard([
        'sign',
        '-f',
        'test/fixtures/cards/recipe-agent.yaml',
        '--key',
        ed25519Pem,
        '--alg',
        'ES256',
      ]),
      /key .*ed\.pem: alg ES256 needs an EC P-256 key, but the key is Ed25519/,
    );
    const truncated = path('truncated.jwk');
    writeFileSync(truncated, readFileSync(es.key, 'utf8').slice(0, 60));
    const r = await agentcard(['sign', '-f', 'test/fixtures/cards/recipe-agent.yaml', '--key', truncated]);
    expectOneLineError(r, /key .*truncated\.jwk: the key is not valid JSON/);
    expect(r.stderr).not.toContain(es.jwk.x!.slice(0, 10));
    for (const out of [r.stderr]) expect(out).not.toContain(es.jwk.d!);
    expectOneLineError(
      await agentcard(['sign', '-f', 'test/fixtures/cards/recipe-agent.yaml', '--key', path('missing.pem')]),
      /cannot read .*missing\.pem: no such file/,
    );
    expectOneLineError(
      await agentcard([
        'sign',
        '-f',
        'test/fixtures/cards/recipe-agent.yaml',
        '--key',
        es.key,
        '--kid',
        'a',
        '--kid',
        'b',
      ]),
      /2 --kid for 1 --key/,
      2,
    );
  });

  it('verify fails (exit 1) on a tampered card, an untrusted key, and refuses manifests or bad key sets', async () => {
    const signed = JSON.parse(
      (await agentcard(['sign', '-f', 'test/fixtures/cards/recipe-agent.yaml', '--key', es.key])).stdout,
    );
    const tampered = path('tampered.json');
    writeFileSync(tampered, JSON.stringify({ ...signed, version: '9.9.9' }));
    const bad = await agentcard(['verify', '-f', tampered, '--jwks', es.jwks]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toBe(
      `${tampered}: signatures[0] (kid es-1): signature does not match\nagentcard: ${tampered}: no signature verified\n`,
    );

    const good = path('good.json');
    writeFileSync(good, JSON.stringify(signed));
    const untrusted = await agentcard(['verify', '-f', good, '--jwks', ed.jwks]);
    expect(untrusted.code).toBe(1);
    expect(untrusted.stderr).toContain('no trusted key with kid "es-1" for ES256');

    expectOneLineError(
      await agentcard(['verify', '-f', 'test/fixtures/cards/recipe-agent.yaml', '--jwks', es.jwks]),
      /expected one signed card \(JSON as served\), not a manifest/,
    );
    const notJwks = path('not-jwks.json');
    writeFileSync(notJwks, '{"hello": "world"}');
    expectOneLineError(
      await agentcard(['verify', '-f', good, '--jwks', notJwks]),
      /not-jwks\.json: not a JWKS/,
    );
    // a private JWK as the trusted key still works: only its public part is used
    expect((await agentcard(['verify', '-f', good, '--jwks', es.key])).code).toBe(0);
  });
});
