import { generateKeyPairSync } from 'node:crypto';
import * as jose from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { UserError } from '../../../operator/errors.ts';
import { canonicalJson, signingPayload } from '../../../operator/card/jcs.ts';
import { generateSigningJwk } from '../../../operator/card/keygen.ts';
import { renderV1 } from '../../../operator/card/render.ts';
import { importSigningKey, publicJwks, signCard, type SigningKey } from '../../../operator/card/sign.ts';
import { validateCard } from '../../../operator/card/validate.ts';
import { verifyCard } from '../../../operator/card/verify.ts';
import { minimalCard, vectors } from '../../support/cards.ts';

const ALGS = ['ES256', 'ES384', 'EdDSA', 'RS256', 'PS256'] as const;
const b64json = (b64: string) =>
  JSON.parse(Buffer.from(b64, 'base64url').toString('utf8')) as Record<string, unknown>;
const rendered = () => renderV1(validateCard(minimalCard()).card!);

describe('conformance vectors (byte for byte)', () => {
  const v = vectors();

  it.each(v.canonicalization_cases.map((c) => [c.id, c] as const))('%s: canonical payload', (_id, c) => {
    expect(signingPayload(c.agent_card)).toBe(c.expected_jcs_payload);
  });

  it.each(v.signing_cases.map((c) => [c.id, c] as const))(
    '%s: protected header, signing input, signature',
    async (_id, c) => {
      const key = await importSigningKey(JSON.stringify(v.private_jwk));
      expect(key.kid).toBe('key-1');
      expect(key.alg).toBe('EdDSA');
      const signed = await signCard(c.agent_card, [key]);
      const [sig] = signed.signatures as { protected: string; signature: string }[];
      expect(sig!.protected).toBe(c.expected_protected_b64);
      expect(b64json(sig!.protected)).toEqual(c.protected_header);
      expect(`${sig!.protected}.${Buffer.from(signingPayload(signed)).toString('base64url')}`).toBe(
        c.expected_signing_input,
      );
      expect(sig!.signature).toBe(c.signature);
      // the rest of the card is unchanged
      const { signatures: _s, ...rest } = signed;
      expect(rest).toEqual(c.agent_card);
      const result = await verifyCard(signed, { keys: [v.public_jwk] });
      expect(result).toMatchObject({ verified: true, kid: 'key-1' });
    },
  );

  it('JCS rejects what has no canonical form', () => {
    expect(() => canonicalJson({ s: 'lone \ud800 surrogate' })).toThrow(UserError);
    expect(() => canonicalJson({ n: NaN })).toThrow(/cannot canonicalize/);
  });
});

describe('importSigningKey', () => {
  it.each(ALGS)('imports a generated %s JWK with its alg and kid', async (alg) => {
    const jwk = await generateSigningJwk(alg, `k-${alg}`);
    const key = await importSigningKey(JSON.stringify(jwk));
    expect(key).toMatchObject({ kid: `k-${alg}`, alg });
    expect(key.publicJwk).not.toHaveProperty('d');
    expect(key.publicJwk).toMatchObject({ kid: `k-${alg}`, alg, use: 'sig', kty: jwk.kty });
  });

  it('reads PKCS#8 PEM keys and infers alg from the key type', async () => {
    const cases = [
      [generateKeyPairSync('ec', { namedCurve: 'P-256' }), 'ES256'],
      [generateKeyPairSync('ec', { namedCurve: 'P-384' }), 'ES384'],
      [generateKeyPairSync('ed25519'), 'EdDSA'],
      [generateKeyPairSync('rsa', { modulusLength: 2048 }), 'RS256'],
    ] as const;
    for (const [pair, alg] of cases) {
      const pem = pair.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
      const key = await importSigningKey(pem);
      expect(key.alg).toBe(alg);
      // default kid: the RFC 7638 thumbprint of the public key
      expect(key.kid).toBe(
        await jose.calculateJwkThumbprint(pair.publicKey.export({ format: 'jwk' }) as jose.JWK),
      );
    }
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
      format: 'pem',
      type: 'pkcs8',
    });
    expect((await importSigningKey(rsa.toString(), { alg: 'PS256', kid: 'rsa-pss' })).alg).toBe('PS256');
  });

  it('refuses a key whose type does not match alg, naming both', async () => {
    const p256 = await generateSigningJwk('ES256');
    await expect(importSigningKey(JSON.stringify(p256), { alg: 'ES384' })).rejects.toThrow(
      /the JWK says alg ES256 but alg ES384 was asked for/,
    );
    const { alg: _alg, ...noAlg } = p256;
    await expect(importSigningKey(JSON.stringify(noAlg), { alg: 'ES384' })).rejects.toThrow(
      'alg ES384 needs an EC P-384 key, but the key is EC P-256',
    );
    const ed = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    await expect(importSigningKey(ed, { alg: 'RS256' })).rejects.toThrow(
      'alg RS256 needs an RSA key, but the key is Ed25519',
    );
  });

  it('refuses unusable material with a clear error that never quotes the key', async () => {
    const jwk = await generateSigningJwk('ES256');
    const { d, ...publicJwk } = jwk;
    const secp256k1 = generateKeyPairSync('ec', { namedCurve: 'secp256k1' }).privateKey.export({
      format: 'pem',
      type: 'pkcs8',
    });
    const weakRsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({
      format: 'pem',
      type: 'pkcs8',
    });
    const spki = generateKeyPairSync('ed25519').publicKey.export({ format: 'pem', type: 'spki' });
    const cases: [string, RegExp, string?][] = [
      ['', /the key is empty/],
      [`{"kty":"EC","d":"${d}",`, /not valid JSON/, d],
      [JSON.stringify(publicJwk), /is a public key/],
      [JSON.stringify({ keys: [jwk] }), /is a JWKS/],
      [JSON.stringify({ kty: 'oct', k: 'c2VjcmV0' }), /symmetric/],
      [JSON.stringify({ ...jwk, x: 'AAAA' }), /not a usable EC private key/, d],
      [JSON.stringify({ ...jwk, alg: 'HS256' }), /unsupported alg "HS256"/],
      [secp256k1.toString(), /unsupported key type EC secp256k1/],
      [weakRsa.toString(), /shorter than 2048 bits/],
      [spki.toString(), /public key or certificate/],
      ['-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----', /encrypted/],
      [
        '-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----',
        /PEM private key cannot be read/,
        'bm90IGEga2V5',
      ],
      ['just some text', /neither a private JWK/],
    ];
    for (const [material, message, secret] of cases) {
      const err = await importSigningKey(material).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, String(message)).toBeInstanceOf(UserError);
      expect((err as Error).message).toMatch(message);
      expect((err as Error).message).not.toContain('\n');
      if (secret) expect((err as Error).message).not.toContain(secret);
    }
    await expect(importSigningKey(JSON.stringify(jwk), { alg: 'none' })).rejects.toThrow(
      /unsupported alg "none"/,
    );
  });

  it('keeps the private key out of JSON, inspection and enumeration', async () => {
    const jwk = await generateSigningJwk('ES256', 'hidden');
    const key = await importSigningKey(JSON.stringify(jwk));
    const { inspect } = await import('node:util');
    for (const text of [
      JSON.stringify(key),
      inspect(key, { showHidden: true, depth: 5 }),
      JSON.stringify({ ...key }),
    ]) {
      expect(text).not.toContain(jwk.d!);
    }
    expect(JSON.stringify(key)).toBe('{"kid":"hidden","alg":"ES256"}');
  });
});

describe('signCard', () => {
  let keys: SigningKey[];
  beforeAll(async () => {
    keys = await Promise.all(
      ALGS.map(async (alg) => importSigningKey(JSON.stringify(await generateSigningJwk(alg, `k-${alg}`)))),
    );
  });

  it('adds one detached JWS per key, in order, with {alg, kid, typ} (+ jku) protected', async () => {
    const signed = await signCard(rendered(), keys, { jku: 'https://keys.example.com/jwks.json' });
    const sigs = signed.signatures as { protected: string; signature: string; header?: unknown }[];
    expect(sigs).toHaveLength(5);
    sigs.forEach((sig, i) => {
      const header = b64json(sig.protected);
      expect(Object.keys(header)).toEqual(['alg', 'jku', 'kid', 'typ']);
      expect(header).toEqual({
        alg: ALGS[i],
        jku: 'https://keys.example.com/jwks.json',
        kid: `k-${ALGS[i]}`,
        typ: 'JOSE',
      });
      expect(Object.keys(sig)).toEqual(['protected', 'signature']); // detached: no payload member
    });
    const result = await verifyCard(signed, publicJwks(keys));
    expect(result.verified).toBe(true);
    expect(result.results.map((r) => r.ok)).toEqual([true, true, true, true, true]);
  });

  it('signs the canonical card without signatures and replaces existing signatures', async () => {
    const once = await signCard(rendered(), [keys[2]!]);
    const twice = await signCard(once, [keys[2]!]);
    expect(twice.signatures).toEqual(once.signatures); // Ed25519 is deterministic
    expect(signingPayload(twice)).toBe(canonicalJson(rendered()));
  });

  it('refuses a non-https jku and keys not made by importSigningKey', async () => {
    await expect(signCard(rendered(), keys, { jku: 'http://keys.example.com' })).rejects.toThrow(
      /jku must be an https URL/,
    );
    const forged = { kid: 'x', alg: 'ES256' as const, publicJwk: {} };
    await expect(signCard(rendered(), [forged])).rejects.toThrow(/not imported/);
  });

  it('publicJwks lists public keys with kid, alg and use', () => {
    const jwks = publicJwks(keys);
    expect(jwks.keys.map((k) => [k.kid, k.alg, k.use])).toEqual(ALGS.map((a) => [`k-${a}`, a, 'sig']));
    for (const k of jwks.keys)
      for (const priv of ['d', 'p', 'q', 'dp', 'dq', 'qi']) expect(k).not.toHaveProperty(priv);
  });

  it("publicJwks gives each key's own frozen JWK, the same object at every call", () => {
    // The verifier remembers imported keys per JWK object: a copy per call would import the key
    // again for every card a resync checks.
    const first = publicJwks(keys).keys;
    const second = publicJwks(keys).keys;
    expect(first.every((jwk, i) => jwk === second[i] && jwk === keys[i]!.publicJwk)).toBe(true);
    expect(first.every((jwk) => Object.isFrozen(jwk))).toBe(true);
  });
});
