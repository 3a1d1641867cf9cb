// An import's trust with a JWKS (the x5c path: crawl.test.ts): a card signed by a key of the set
// verifies and names its kid; another key's is SignerNotTrusted; a signed catalog is checked as
// spec.catalogSignature says.
import { beforeAll, describe, expect, it } from 'vitest';
import { generateSigningJwk } from '../../../operator/card/keygen.ts';
import { importSigningKey, publicJwks, signCard, type SigningKey } from '../../../operator/card/sign.ts';
import { signCatalog } from '../../../operator/catalog/signature.ts';
import { loadTrust, type LoadedTrust } from '../../../operator/catalog/trust.ts';
import { checkCatalogSignature, verifyImportedCard } from '../../../operator/federation/verify.ts';
import { minimalCard } from '../../support/cards.ts';

let trusted: SigningKey;
let other: SigningKey;
let trust: LoadedTrust;

beforeAll(async () => {
  trusted = await importSigningKey(JSON.stringify(await generateSigningJwk('ES256', 'spoke-a')));
  other = await importSigningKey(JSON.stringify(await generateSigningJwk('ES256', 'someone-else')));
  const loaded = loadTrust(
    { jwks: { configMap: { name: 'keys', key: 'jwks.json' } } },
    { jwks: { text: JSON.stringify(publicJwks([trusted])) } },
  );
  if (!loaded.ok) throw new Error(loaded.error);
  trust = loaded.trust;
});

describe('verifyImportedCard with a JWKS', () => {
  it('verifies a card signed by a key of the set', async () => {
    const card = await signCard(minimalCard(), [trusted]);
    expect(await verifyImportedCard(card, 'https://a.example/card.json', trust)).toEqual({
      ok: true,
      signer: 'kid spoke-a',
    });
  });

  it('refuses another key, an unsigned card and an invalid one, each with its reason', async () => {
    const foreign = await signCard(minimalCard(), [other]);
    expect(await verifyImportedCard(foreign, 'x', trust)).toMatchObject({
      ok: false,
      reason: 'SignerNotTrusted',
    });
    expect(await verifyImportedCard(minimalCard(), 'x', trust)).toMatchObject({
      ok: false,
      reason: 'Unsigned',
    });
    expect(await verifyImportedCard({ name: 'no interfaces' }, 'x', trust)).toMatchObject({
      ok: false,
      reason: 'Invalid',
    });
  });
});

describe('checkCatalogSignature', () => {
  const catalog = { specVersion: '1.0', entries: [] };

  it('follows spec.catalogSignature', async () => {
    const signed = await signCatalog(catalog, trusted);
    const foreign = await signCatalog(catalog, other);
    expect(await checkCatalogSignature(signed, 'Required', trust)).toEqual({
      ok: true,
      signer: 'kid spoke-a',
    });
    expect(await checkCatalogSignature(catalog, 'Required', trust)).toMatchObject({
      ok: false,
      reason: 'CatalogUnsigned',
    });
    expect(await checkCatalogSignature(catalog, 'IfPresent', trust)).toEqual({ ok: true });
    expect(await checkCatalogSignature(foreign, 'IfPresent', trust)).toMatchObject({
      ok: false,
      reason: 'CatalogSignatureInvalid',
    });
    expect(
      await checkCatalogSignature({ ...signed, entries: [{ identifier: 'x' }] }, 'IfPresent', trust),
    ).toMatchObject({
      ok: false,
      reason: 'CatalogSignatureInvalid',
    });
    expect(await checkCatalogSignature(foreign, 'Ignore', trust)).toEqual({ ok: true });
  });
});
