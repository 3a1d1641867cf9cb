import { verifyAgentCardSignature, type AgentCard as SdkCard } from '@a2a-js/sdk';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { audienceCard } from '../../../operator/card/audience.ts';
import { renderV1 } from '../../../operator/card/render.ts';
import { validateSpec } from '../../../operator/card/validate.ts';
import { agentcard, expectOneLineError, tempDir } from '../../support/cli.ts';
import { repoRoot } from '../../support/paths.ts';

const EXAMPLE = 'examples/agentcard-audiences.yaml';
const { dir, cleanup } = tempDir();
afterAll(cleanup);

// The example's signing key, made the way its first line says (`agentcard keygen --secret`).
const key = join(dir, 'example.jwk');
let kid = '';
beforeAll(async () => {
  const made = await agentcard(['keygen', '--alg', 'ES256', '--secret', 'weather-agent-signing']);
  expect(made.code, made.stderr).toBe(0);
  const secret = parseAllDocuments(made.stdout)[0]!.toJS() as { stringData: Record<string, string> };
  writeFileSync(key, secret.stringData['signing.jwk']!);
  kid = (JSON.parse(secret.stringData['signing.jwk']!) as { kid: string }).kid;
});

function example(): { spec: Record<string, unknown>; key: string } {
  const docs = parseAllDocuments(readFileSync(join(repoRoot, EXAMPLE), 'utf8')).map((d) => d.toJS());
  return { spec: docs.find((d) => d.kind === 'AgentCard').spec, key };
}

async function sdkVerifies(card: unknown, jwks: { keys: Array<{ kid: string }> }): Promise<void> {
  await verifyAgentCardSignature(async (kid) => jwks.keys.find((k) => k.kid === kid)!)(card as SdkCard);
}

describe('agentcard and spec.audiences', () => {
  it('render --audience prints that audience card; the default is spec.card', async () => {
    const { spec } = example();
    const valid = validateSpec(spec);
    const pub = await agentcard(['render', '-f', EXAMPLE, '--audience', 'public']);
    expect(pub.code, pub.stderr).toBe(0);
    const expected = renderV1(audienceCard(valid.card!, valid.spec!.audiences![0]!));
    expect(JSON.parse(pub.stdout)).toEqual(expected);
    expect((expected.supportedInterfaces as Array<{ url: string }>)[0]!.url).toBe(
      'https://weather.example.com/agents/weather/a2a/jsonrpc',
    );
    const def = await agentcard(['render', '-f', EXAMPLE, '--audience', 'default']);
    expect(JSON.parse(def.stdout)).toEqual(renderV1(valid.card!));
    expect(JSON.parse(def.stdout)).not.toEqual(expected);
  });

  it('names the audiences when asked for one that does not exist, and refuses --audience on a bare card', async () => {
    // (a copy with https interfaces, so that no lint warning precedes the error line)
    const { spec } = example();
    const card0 = spec.card as { supportedInterfaces: Array<{ url: string }> };
    for (const i of card0.supportedInterfaces) i.url = i.url.replace('http://', 'https://');
    const manifest = join(dir, 'tls.yaml');
    writeFileSync(
      manifest,
      JSON.stringify({
        apiVersion: 'agentcard.dev/v1alpha1',
        kind: 'AgentCard',
        metadata: { name: 'w' },
        spec,
      }),
    );
    expectOneLineError(
      await agentcard(['render', '-f', manifest, '--audience', 'partner']),
      /no audience "partner" \(audiences: default, public\)/,
      2,
    );
    const card = join(dir, 'bare.json');
    writeFileSync(card, (await agentcard(['render', '-f', 'test/fixtures/cards/recipe-agent.yaml'])).stdout);
    expectOneLineError(
      await agentcard(['render', '-f', card, '--audience', 'public']),
      /--audience needs an AgentCard manifest/,
      2,
    );
  });

  it('sign --audience signs one audience; sign --out-dir writes every audience as published, and verify --dir checks them all', async () => {
    const { key } = example();
    const jwksFile = join(dir, 'jwks.json');
    const one = await agentcard(['sign', '-f', EXAMPLE, '--key', key, '--audience', 'public']);
    expect(one.code, one.stderr).toBe(0);
    const out = join(dir, 'published');
    const all = await agentcard(['sign', '-f', EXAMPLE, '--key', key, '--out-dir', out]);
    expect(all.code, all.stderr).toBe(0);
    expect(readdirSync(out).sort()).toEqual([
      'agent-card.json',
      'agent.json',
      'host.weather.example.com.agent-card.json',
      'host.weather.example.com.agent.json',
      'jwks.json',
    ]);
    const jwks = JSON.parse(readFileSync(join(out, 'jwks.json'), 'utf8'));
    writeFileSync(jwksFile, JSON.stringify(jwks));
    for (const file of ['agent-card.json', 'host.weather.example.com.agent-card.json']) {
      await expect(
        sdkVerifies(JSON.parse(readFileSync(join(out, file), 'utf8')), jwks),
      ).resolves.toBeUndefined();
    }
    await expect(sdkVerifies(JSON.parse(one.stdout), jwks)).resolves.toBeUndefined();
    expect(JSON.parse(one.stdout).supportedInterfaces).toEqual(
      JSON.parse(readFileSync(join(out, 'host.weather.example.com.agent-card.json'), 'utf8'))
        .supportedInterfaces,
    );

    const ok = await agentcard(['verify', '--dir', out, '--jwks', jwksFile]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toBe(
      `agent-card.json: verified: kid ${kid}\nhost.weather.example.com.agent-card.json: verified: kid ${kid}\n`,
    );
    // One audience's card edited: verify --dir fails and names it.
    const pubFile = join(out, 'host.weather.example.com.agent-card.json');
    const pub = JSON.parse(readFileSync(pubFile, 'utf8'));
    pub.supportedInterfaces[0].url = 'https://evil.example.com/a2a';
    writeFileSync(pubFile, JSON.stringify(pub));
    const bad = await agentcard(['verify', '--dir', out, '--jwks', jwksFile]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe(`agent-card.json: verified: kid ${kid}\n`);
    expect(bad.stderr).toContain('host.weather.example.com.agent-card.json');
    expect(bad.stderr).toContain('1 of 2 cards did not verify');
  });

  it('validate checks the overrides like the card', async () => {
    const { spec } = example();
    const audiences = spec.audiences as Array<Record<string, unknown>>;
    audiences.push({ name: 'partner', hosts: ['WEATHER.example.com'], baseURL: 'https://x.example.com' });
    audiences[0]!.securityRequirements = [
      { schemes: { oauth2: { list: ['sk-proj-' + 'A1b2C3d4'.repeat(3)] } } },
    ];
    const file = join(dir, 'bad.yaml');
    writeFileSync(
      file,
      JSON.stringify({
        apiVersion: 'agentcard.dev/v1alpha1',
        kind: 'AgentCard',
        metadata: { name: 'w' },
        spec,
      }),
    );
    const r = await agentcard(['validate', '-f', file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      'spec.audiences[1].hosts[0]: host "WEATHER.example.com" is already in audience "public"; a host belongs to at most one audience',
    );
    expect(r.stdout).toMatch(
      /spec\.audiences\[0\]\.securityRequirements\[0\]\.schemes\.oauth2\.list\[0\]: looks like an API secret key/,
    );
    expect(r.stdout).not.toContain('A1b2C3d4');
  });
});
