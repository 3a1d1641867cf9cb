/**
 * Interoperability with an independent implementation: @a2a-js/sdk's signer and verifier.
 * Every card this project signs must verify with the SDK; the two known traps (A2A spec 8.4.1
 * presence rules vs. canonicalizers that strip empty values, and non-ASCII text) are pinned here.
 */
import {
  canonicalizeAgentCard,
  generateAgentCardSignature,
  verifyAgentCardSignature,
  type AgentCard as SdkCard,
} from '@a2a-js/sdk';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { signingPayload } from '../../../operator/card/jcs.ts';
import { generateSigningJwk } from '../../../operator/card/keygen.ts';
import { renderV1 } from '../../../operator/card/render.ts';
import { importSigningKey, signCard, type SigningKey } from '../../../operator/card/sign.ts';
import { validateCard, validateSpec } from '../../../operator/card/validate.ts';
import { verifyCard } from '../../../operator/card/verify.ts';
import { fullCard, minimalCard, customerSupportCard } from '../../support/cards.ts';
import { repoRoot } from '../../support/paths.ts';
import { join } from 'node:path';

const ALGS = ['ES256', 'ES384', 'EdDSA', 'RS256', 'PS256'] as const;

/** The SDK verifier, trusting exactly `keys` (looked up by kid). */
const sdkVerify = (keys: SigningKey[]) =>
  verifyAgentCardSignature(async (kid) => {
    const key = keys.find((k) => k.kid === kid);
    if (!key) throw new Error(`unknown kid ${kid}`);
    return key.publicJwk;
  });

function exampleCards(): Record<string, unknown>[] {
  const cards: Record<string, unknown>[] = [];
  for (const file of ['examples/agentcard-minimal.yaml', 'examples/agentcard-signed.yaml']) {
    for (const doc of parseAllDocuments(readFileSync(join(repoRoot, file), 'utf8'))) {
      const obj = doc.toJS() as { kind?: string; spec?: unknown };
      if (obj.kind === 'AgentCard') cards.push(validateSpec(obj.spec).card as Record<string, unknown>);
    }
  }
  return cards;
}

const nonAsciiCard = () => ({
  ...minimalCard(),
  name: 'Café Agent',
  description: 'Réserve des tables — 5 € par personne 😀; 東京の店にも対応します。',
  skills: [{ id: 'réserver', name: 'Réserver', description: 'Réserve une table.', tags: ['café', 'ação'] }],
});

describe('interop with @a2a-js/sdk', () => {
  const keys: SigningKey[] = [];
  beforeAll(async () => {
    for (const alg of ALGS)
      keys.push(await importSigningKey(JSON.stringify(await generateSigningJwk(alg, `k-${alg}`))));
    // the SDK logs every failed signature entry on console.debug
    vi.spyOn(console, 'debug').mockImplementation(() => {});
  });
  afterAll(() => vi.restoreAllMocks());

  const cards: [string, () => Record<string, unknown>][] = [
    ['minimal', minimalCard],
    ['full (every message)', fullCard],
    ['customer support', customerSupportCard],
    ['non-ASCII text', nonAsciiCard],
  ];

  it.each(cards)('the SDK verifies every signature we make: %s card', async (_name, make) => {
    const result = validateCard(make());
    expect(result.card).toBeDefined();
    const rendered = renderV1(result.card!);
    // same canonical payload as the SDK's canonicalizer
    expect(signingPayload(rendered)).toBe(canonicalizeAgentCard(rendered as unknown as SdkCard));
    for (const key of keys) {
      const signed = await signCard(rendered, [key]);
      await expect(sdkVerify(keys)(signed as unknown as SdkCard)).resolves.toBeUndefined();
    }
    // and all five signatures on one card
    const signed = await signCard(rendered, keys, { jku: 'https://keys.example.com/jwks.json' });
    await expect(sdkVerify(keys)(signed as unknown as SdkCard)).resolves.toBeUndefined();
  });

  it('the SDK verifies the cards of examples/', async () => {
    const found = exampleCards();
    expect(found.length).toBeGreaterThanOrEqual(2);
    for (const card of found) {
      const signed = await signCard(renderV1(card as never), [keys[0]!]);
      await expect(sdkVerify(keys)(signed as unknown as SdkCard)).resolves.toBeUndefined();
    }
  });

  it('we verify what the SDK signs', async () => {
    const rendered = renderV1(validateCard(fullCard()).card!);
    const jwk = await generateSigningJwk('ES256', 'sdk-key');
    const key = await importSigningKey(JSON.stringify(jwk));
    const { d: _d, ...publicJwk } = jwk;
    const signed = await generateAgentCardSignature(jwk, { alg: 'ES256', kid: 'sdk-key', typ: 'JOSE' })(
      rendered as unknown as SdkCard,
    );
    expect(await verifyCard(signed, { keys: [publicJwk] })).toMatchObject({ verified: true, kid: 'sdk-key' });
    expect(key.kid).toBe('sdk-key');
  });

  it('trap: an empty required value verifies here but not with the SDK, and lint warns about it', async () => {
    const input = { ...minimalCard(), description: '' };
    const result = validateCard(input);
    expect(result.problems).toContainEqual(
      expect.objectContaining({
        path: 'description',
        severity: 'warning',
        message: expect.stringMatching(/empty value/),
      }),
    );
    const rendered = renderV1(result.card!);
    // spec 8.4.1: a required field is present even when empty, so it is in our payload ...
    expect(signingPayload(rendered)).toContain('"description":""');
    // ... while the SDK strips it before canonicalizing
    expect(JSON.parse(canonicalizeAgentCard(rendered as unknown as SdkCard))).not.toHaveProperty(
      'description',
    );
    const signed = await signCard(rendered, [keys[0]!]);
    expect((await verifyCard(signed, { keys: [keys[0]!.publicJwk] })).verified).toBe(true);
    await expect(sdkVerify(keys)(signed as unknown as SdkCard)).rejects.toThrow(/No valid signatures/);
  });

  it('trap: capabilities {} (all unset) is also an empty required value', async () => {
    const result = validateCard({ ...minimalCard(), capabilities: {} });
    expect(result.problems.map((p) => p.path)).toEqual(['capabilities']);
    const signed = await signCard(renderV1(result.card!), [keys[0]!]);
    await expect(sdkVerify(keys)(signed as unknown as SdkCard)).rejects.toThrow();
  });

  it('trap: non-ASCII text is signed as literal UTF-8 (RFC 8785), which the SDK agrees with', () => {
    const rendered = renderV1(validateCard(nonAsciiCard()).card!);
    const payload = signingPayload(rendered);
    expect(payload).toContain('Café Agent');
    expect(payload).toContain('😀');
    expect(payload).not.toMatch(/\\u[0-9a-f]{4}/i);
    // a canonicalizer that escapes non-ASCII (as a2a-python does) produces other bytes, so its
    // verifier rejects such a card: documented, not something a signer can fix.
    const escaped = payload.replace(
      /[\u0080-\uffff]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
    );
    expect(escaped).not.toBe(payload);
  });
});
