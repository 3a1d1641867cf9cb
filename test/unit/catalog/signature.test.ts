/* eslint-disable @typescript-eslint/no-explicit-any -- the tests edit catalogs as loosely typed JSON */
import canonicalize from 'canonicalize';
import * as jose from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { AI_CATALOG_MEDIA_TYPE, A2A_AGENT_CARD_MEDIA_TYPE } from '../../../operator/catalog/document.ts';
import { catalogPayload, signCatalog, verifyCatalog } from '../../../operator/catalog/signature.ts';
import { generateSigningJwk } from '../../../operator/card/keygen.ts';
import { importSigningKey, publicJwks, type SigningKey } from '../../../operator/card/sign.ts';
import type { JWKS } from '../../../operator/card/verify.ts';

const catalog = (): Record<string, unknown> => ({
  specVersion: '1.0',
  host: { displayName: 'Acme', identifier: 'did:web:acme.example' },
  entries: [
    {
      identifier: 'urn:air:acme.example:a2a:recipes',
      type: A2A_AGENT_CARD_MEDIA_TYPE,
      url: 'https://acme.example/.well-known/agent-card.json',
    },
    {
      identifier: 'urn:air:acme.example:catalog:team',
      type: AI_CATALOG_MEDIA_TYPE,
      url: 'https://acme.example/team.json',
    },
  ],
  extensions: { 'com.example.note': { weight: 1.0, zero: -0 } },
});

describe('signCatalog / verifyCatalog', () => {
  const keys: Record<string, SigningKey> = {};
  let jwks: JWKS;
  beforeAll(async () => {
    for (const alg of ['ES256', 'EdDSA', 'RS256', 'PS256', 'ES384'] as const)
      keys[alg] = await importSigningKey(JSON.stringify(await generateSigningJwk(alg, `k-${alg}`)));
    jwks = publicJwks(Object.values(keys));
  });

  it.each(['ES256', 'EdDSA', 'RS256', 'PS256', 'ES384'])(
    '%s: signs a compact detached JWS that verifies',
    async (alg) => {
      const signed = await signCatalog(catalog(), keys[alg]!);
      expect(signed.signature).toMatch(/^[\w-]+\.\.[\w-]+$/);
      expect(await verifyCatalog(signed, jwks)).toEqual({
        verified: true,
        kid: `k-${alg}`,
        results: [{ kid: `k-${alg}`, alg, ok: true }],
      });
    },
  );

  it('signs the RFC 8785 form of the catalog without `signature`, checked by jose directly', async () => {
    const signed = await signCatalog(catalog(), keys.ES256!);
    const [header, , signature] = (signed.signature as string).split('.');
    const { signature: _s, ...unsigned } = signed;
    // An independent check: the canonicalize package and jose's compact verification, the payload re-attached.
    const payload = canonicalize(unsigned)!;
    expect(catalogPayload(signed)).toBe(payload);
    expect(payload).toContain('"weight":1,"zero":0');
    const compact = `${header}.${Buffer.from(payload).toString('base64url')}.${signature}`;
    const key = await jose.importJWK(keys.ES256!.publicJwk, 'ES256');
    const { protectedHeader } = await jose.compactVerify(compact, key);
    expect(protectedHeader).toEqual({ alg: 'ES256', kid: 'k-ES256', typ: 'JOSE' });
  });

  it('verifies a signature made by jose alone over the canonical form (another signer)', async () => {
    const { privateKey, publicKey } = await jose.generateKeyPair('ES256', { extractable: true });
    const doc = catalog();
    const jws = await new jose.CompactSign(new TextEncoder().encode(canonicalize(doc)!))
      .setProtectedHeader({ alg: 'ES256', kid: 'other' })
      .sign(privateKey);
    const [h, , s] = jws.split('.');
    const trusted = { keys: [{ ...(await jose.exportJWK(publicKey)), kid: 'other' }] };
    expect(await verifyCatalog({ ...doc, signature: `${h}..${s}` }, trusted)).toMatchObject({
      verified: true,
      kid: 'other',
    });
  });

  it('does not depend on key order or whitespace (the payload is canonical)', async () => {
    const signed = await signCatalog(catalog(), keys.EdDSA!);
    const reordered = Object.fromEntries(
      Object.entries(JSON.parse(JSON.stringify(signed, null, 2))).reverse(),
    );
    expect((await verifyCatalog(reordered, jwks)).verified).toBe(true);
  });

  it('replaces an existing signature instead of signing over it', async () => {
    const once = await signCatalog(catalog(), keys.ES256!);
    const twice = await signCatalog(once, keys.EdDSA!);
    expect(await verifyCatalog(twice, jwks)).toMatchObject({ verified: true, kid: 'k-EdDSA' });
  });

  it('detects a changed entry, an added entry and a changed host', async () => {
    const signed = await signCatalog(catalog(), keys.ES256!);
    const tamper = async (edit: (doc: Record<string, any>) => void) => {
      const copy = structuredClone(signed) as Record<string, any>;
      edit(copy);
      return verifyCatalog(copy, jwks);
    };
    for (const edit of [
      (d: Record<string, any>) => (d.entries[0].url = 'https://evil.example/card.json'),
      (d: Record<string, any>) =>
        d.entries.push({
          identifier: 'urn:x',
          type: A2A_AGENT_CARD_MEDIA_TYPE,
          url: 'https://evil.example/',
        }),
      (d: Record<string, any>) => (d.host.displayName = 'Not Acme'),
    ]) {
      expect(await tamper(edit)).toEqual({
        verified: false,
        results: [{ kid: 'k-ES256', alg: 'ES256', ok: false, error: 'signature does not match' }],
      });
    }
  });

  it('refuses keys the caller does not trust, and names the kid', async () => {
    const signed = await signCatalog(catalog(), keys.ES256!);
    const others = { keys: jwks.keys.filter((k) => k.kid !== 'k-ES256') };
    expect(await verifyCatalog(signed, others)).toEqual({
      verified: false,
      results: [
        { kid: 'k-ES256', alg: 'ES256', ok: false, error: 'no trusted key with kid "k-ES256" for ES256' },
      ],
    });
  });

  it('treats jku as a hint: it is followed only through resolveJku', async () => {
    const signed = await signCatalog(catalog(), keys.ES256!, { jku: 'https://acme.example/jwks.json' });
    expect((await verifyCatalog(signed, { keys: [] })).verified).toBe(false);
    const asked: string[] = [];
    const result = await verifyCatalog(
      signed,
      { keys: [] },
      {
        resolveJku: async (url) => {
          asked.push(url);
          return jwks;
        },
      },
    );
    expect(asked).toEqual(['https://acme.example/jwks.json']);
    expect(result.verified).toBe(true);
    await expect(
      signCatalog(catalog(), keys.ES256!, { jku: 'http://acme.example/jwks.json' }),
    ).rejects.toThrow('jku must be an https URL');
  });

  it('rejects alg none, HS256 and malformed signatures with a clear reason', async () => {
    const doc = catalog();
    const header = (h: object) => Buffer.from(JSON.stringify(h)).toString('base64url');
    const verify = async (signature: unknown) =>
      (await verifyCatalog({ ...doc, signature }, jwks)).results[0]!.error;
    expect(await verify(`${header({ alg: 'none', kid: 'k-ES256' })}..AAAA`)).toBe(
      'unsupported or missing alg none',
    );
    expect(await verify(`${header({ alg: 'HS256', kid: 'k-ES256' })}..AAAA`)).toBe(
      'unsupported or missing alg HS256',
    );
    expect(await verify('not-a-jws')).toBe(
      'the catalog signature is not a detached compact JWS (<header>..<signature>)',
    );
    expect(await verify(`${header({ alg: 'ES256' })}.cGF5bG9hZA.AAAA`)).toMatch(/not a detached compact JWS/);
    expect(await verify(17)).toBe('the catalog signature is not a string');
    expect(await verify(undefined)).toBe('the catalog is not signed');
    expect((await verifyCatalog([], jwks)).results[0]!.error).toBe('the catalog is not a JSON object');
  });
});
