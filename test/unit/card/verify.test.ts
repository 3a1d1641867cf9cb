/* eslint-disable @typescript-eslint/no-explicit-any -- the tests edit cards as loosely typed JSON */
import { describe, expect, it, beforeAll } from 'vitest';
import { generateSigningJwk } from '../../../operator/card/keygen.ts';
import { renderV1 } from '../../../operator/card/render.ts';
import { importSigningKey, publicJwks, signCard, type SigningKey } from '../../../operator/card/sign.ts';
import { validateCard } from '../../../operator/card/validate.ts';
import { verifyCard, type JWKS } from '../../../operator/card/verify.ts';
import { fullCard } from '../../support/cards.ts';

type Signed = Record<string, any>;
const rendered = () => renderV1(validateCard(fullCard()).card!);

describe('verifyCard', () => {
  let oldKey: SigningKey;
  let newKey: SigningKey;
  let jwks: JWKS;
  beforeAll(async () => {
    oldKey = await importSigningKey(JSON.stringify(await generateSigningJwk('ES256', 'old')));
    newKey = await importSigningKey(JSON.stringify(await generateSigningJwk('EdDSA', 'new')));
    jwks = publicJwks([oldKey, newKey]);
  });

  it('reports the kid that verified', async () => {
    const signed = await signCard(rendered(), [newKey]);
    expect(await verifyCard(signed, jwks)).toEqual({
      verified: true,
      kid: 'new',
      results: [{ kid: 'new', alg: 'EdDSA', ok: true }],
    });
  });

  it('needs only one valid signature from a trusted key (rotation)', async () => {
    const signed = await signCard(rendered(), [oldKey, newKey]);
    const onlyNew = { keys: jwks.keys.filter((k) => k.kid === 'new') };
    const r = await verifyCard(signed, onlyNew);
    expect(r.verified).toBe(true);
    expect(r.kid).toBe('new');
    expect(r.results[0]).toEqual({
      kid: 'old',
      alg: 'ES256',
      ok: false,
      error: 'no trusted key with kid "old" for ES256',
    });
  });

  it('fails when any signed field changes, and ignores the order of keys', async () => {
    const signed: Signed = await signCard(rendered(), [oldKey]);
    const reordered = Object.fromEntries(Object.entries(signed).reverse());
    expect((await verifyCard(reordered, jwks)).verified).toBe(true);
    const tampered: Signed = structuredClone(signed);
    tampered.supportedInterfaces[0].url = 'https://evil.example.com/a2a';
    const r = await verifyCard(tampered, jwks);
    expect(r).toEqual({
      verified: false,
      results: [{ kid: 'old', alg: 'ES256', ok: false, error: 'signature does not match' }],
    });
    // a field outside the v1.0 schema is part of the JCS payload here, so it also breaks the signature
    expect((await verifyCard({ ...signed, extra: true }, jwks)).verified).toBe(false);
  });

  it('rejects a key whose JWKS entry is for another alg or not for signing', async () => {
    const signed = await signCard(rendered(), [oldKey]);
    const wrongAlg = { keys: [{ ...oldKey.publicJwk, alg: 'ES384' }] };
    expect((await verifyCard(signed, wrongAlg)).verified).toBe(false);
    const encryption = { keys: [{ ...oldKey.publicJwk, use: 'enc' }] };
    expect((await verifyCard(signed, encryption)).verified).toBe(false);
    const otherKeySameKid = { keys: [{ ...newKey.publicJwk, kid: 'old', alg: 'EdDSA' }] };
    expect((await verifyCard(signed, otherKeySameKid)).verified).toBe(false);
  });

  it('uses only the public part of a JWK given as trusted key', async () => {
    const jwk = await generateSigningJwk('ES384', 'private-in-jwks');
    const key = await importSigningKey(JSON.stringify(jwk));
    const signed = await signCard(rendered(), [key]);
    expect((await verifyCard(signed, { keys: [jwk] })).verified).toBe(true);
  });

  it('explains malformed cards and signatures', async () => {
    const signed: Signed = await signCard(rendered(), [oldKey]);
    const header = (h: object) => Buffer.from(JSON.stringify(h)).toString('base64url');
    const cases: [unknown, string][] = [
      [null, 'the card is not a JSON object'],
      [{ ...signed, signatures: [] }, 'the card has no signatures'],
      [{ ...signed, signatures: ['x'] }, 'signature entry is not an object'],
      [
        { ...signed, signatures: [{ protected: 1, signature: 'x' }] },
        'signature entry needs "protected" and "signature" strings',
      ],
      [
        { ...signed, signatures: [{ protected: '!!', signature: 'x' }] },
        'protected header is not base64url JSON',
      ],
      [
        { ...signed, signatures: [{ protected: header({ alg: 'none', kid: 'old' }), signature: '' }] },
        'unsupported or missing alg none',
      ],
      [
        { ...signed, signatures: [{ protected: header({ alg: 'HS256', kid: 'old' }), signature: 'x' }] },
        'unsupported or missing alg HS256',
      ],
      [
        { ...signed, signatures: [{ protected: header({ alg: 'ES256' }), signature: 'x' }] },
        'protected header has no kid',
      ],
    ];
    for (const [card, error] of cases) {
      const r = await verifyCard(card, jwks);
      expect(r.verified).toBe(false);
      expect(r.results.at(-1)?.error).toBe(error);
    }
  });

  it('never fetches jku unless given a resolver, and then only when no trusted key matches', async () => {
    const signed = await signCard(rendered(), [newKey], { jku: 'https://keys.example.com/jwks.json' });
    const asked: string[] = [];
    const resolveJku = async (jku: string) => {
      asked.push(jku);
      return publicJwks([newKey]);
    };
    expect((await verifyCard(signed, { keys: [] })).verified).toBe(false);
    expect((await verifyCard(signed, jwks, { resolveJku })).verified).toBe(true);
    expect(asked).toEqual([]);
    expect(await verifyCard(signed, { keys: [] }, { resolveJku })).toMatchObject({
      verified: true,
      kid: 'new',
    });
    expect(asked).toEqual(['https://keys.example.com/jwks.json']);
    const failing = async () => {
      throw new Error('connection refused');
    };
    const r = await verifyCard(signed, { keys: [] }, { resolveJku: failing });
    expect(r.results[0]?.error).toBe('cannot get the jku key set: connection refused');
  });
});
