/**
 * From an AgentCard manifest to a card a client trusts, with real components and local
 * processes: the card engine validates, renders and signs the example manifest; its files are
 * laid out as the kubelet lays out the published ConfigMap (keys as the controller writes them);
 * the real `agentcard sidecar` serves them; @a2a-js/sdk's resolver fetches the card and its
 * signature verifier accepts it with the JWKS the sidecar serves.
 *
 * The controller (AgentCard -> ConfigMap on a real API server) is not part of this test.
 */
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { DefaultAgentCardResolver } from '@a2a-js/sdk/client';
import { verifyAgentCardSignature } from '@a2a-js/sdk';
import type { AgentCard as SdkAgentCard } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { renderV03, renderV1 } from '../../../operator/card/render.ts';
import { serializeCard } from '../../../operator/card/serialize.ts';
import { importSigningKey, publicJwks, signCard } from '../../../operator/card/sign.ts';
import { validateCard } from '../../../operator/card/validate.ts';
import { kubeletWrite, tempDir } from '../../support/card-files.ts';
import { spawnSidecar } from '../../support/sidecar-process.ts';
import type { Running } from '../../support/sidecar-process.ts';

// A signed card with its key: the fixture (examples/ leave the key to `agentcard keygen --secret`).
const EXAMPLE = join(import.meta.dirname, '../../fixtures/cards/support-agent.yaml');

describe('published card -> sidecar -> @a2a-js/sdk', () => {
  let dir: string;
  let sidecar: Running;
  let published: Record<string, string>;

  beforeAll(async () => {
    type Manifest = {
      kind: string;
      stringData: Record<string, string>;
      spec: {
        card: unknown;
        signing: { keys: { secretRef: { key: string }; kid?: string; alg?: string }[] };
        serving?: { cacheMaxAgeSeconds?: number };
      };
    };
    const docs = parseAllDocuments(await readFile(EXAMPLE, 'utf8')).map((d) => d.toJS() as Manifest);
    const secret = docs.find((d) => d.kind === 'Secret')!;
    const resource = docs.find((d) => d.kind === 'AgentCard')!;
    const { card, problems } = validateCard(resource.spec.card);
    if (!card) throw new Error(`example card invalid: ${JSON.stringify(problems)}`);
    const keyRef = resource.spec.signing.keys[0]!;
    const key = await importSigningKey(secret.stringData[keyRef.secretRef.key]!, {
      kid: keyRef.kid,
      alg: keyRef.alg,
    });
    // The ConfigMap's keys, as the controller publishes them (see the cross-team contract).
    published = {
      'agent-card.json': serializeCard(await signCard(renderV1(card), [key])),
      'agent.json': serializeCard(renderV03(card)),
      'jwks.json': JSON.stringify(publicJwks([key])),
      'cache-max-age-seconds': String(resource.spec.serving?.cacheMaxAgeSeconds ?? 300),
    };
    dir = await tempDir();
    await kubeletWrite(dir, published);
    sidecar = await spawnSidecar(dir);
  });

  afterAll(async () => {
    sidecar?.child.kill('SIGTERM');
    await sidecar?.exited;
    await rm(dir, { recursive: true, force: true });
  });

  it('serves the published bytes exactly', async () => {
    const res = await fetch(`http://127.0.0.1:${sidecar.port}/.well-known/agent-card.json`);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(await res.text()).toBe(published['agent-card.json']);
  });

  it('gives the SDK a card it resolves and whose signature verifies with the served JWKS', async () => {
    const base = `http://127.0.0.1:${sidecar.port}`;
    const resolved = await new DefaultAgentCardResolver().resolve(base);
    expect(resolved.name).toBe('Customer Support Agent');
    expect(resolved.signatures).toHaveLength(1);
    // The SDK verifier checks the card document as served (JSON). Its resolver returns the SDK's
    // internal message objects (oneofs as `$case`), which the verifier does not accept, so a
    // client verifies the fetched JSON before normalizing it.
    const card = (await (await fetch(`${base}/.well-known/agent-card.json`)).json()) as SdkAgentCard;
    const jwks = (await (await fetch(`${base}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] };
    const lookups: string[] = [];
    const verify = verifyAgentCardSignature(async (kid) => {
      lookups.push(kid);
      const jwk = jwks.keys.find((k) => k.kid === kid);
      if (!jwk) throw new Error(`no key ${kid}`);
      return jwk;
    });
    await expect(verify(card)).resolves.toBeUndefined();
    expect(lookups).toEqual(['example-2026-11']);
    // The check is real: the same signature over a changed card is refused.
    const tampered = { ...card, description: card.description + ' (changed)' } as SdkAgentCard;
    await expect(verify(tampered)).rejects.toThrow('No valid signatures');
  });

  it('serves the v0.3 shape for legacy clients', async () => {
    const legacy = (await (
      await fetch(`http://127.0.0.1:${sidecar.port}/.well-known/agent.json`)
    ).json()) as Record<string, unknown>;
    expect(legacy).toMatchObject({
      protocolVersion: '0.3.0',
      url: 'https://support.example.com/a2a/jsonrpc',
    });
  });
});
