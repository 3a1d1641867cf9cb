/**
 * Trust Manifests of catalog entries (AI Catalog spec "Trust Manifest"): the pure rendering (the
 * identity a signing key proves, the subject binding, the signature kept while nothing changed)
 * and the verification a consumer does (identity against the signing certificate, subject against
 * the entry, digest against the card), including every refusal.
 */
import { createHash } from 'node:crypto';
import * as jose from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../../operator/card/jcs.ts';
import { generateSigningJwk } from '../../../operator/card/keygen.ts';
import {
  importCertificateSigningKey,
  importSigningKey,
  publicJwks,
  signDetached,
  type SigningKey,
} from '../../../operator/card/sign.ts';
import { parseTrustBundle } from '../../../operator/card/x5c.ts';
import { A2A_AGENT_CARD_MEDIA_TYPE, type CatalogEntry } from '../../../operator/catalog/document.ts';
import type { BuiltEntry } from '../../../operator/catalog/entries.ts';
import {
  addTrustManifests,
  identityAligns,
  manifestPayload,
  publisherIdentity,
  verifyTrustManifest,
  withTrustManifest,
  type ManifestInput,
} from '../../../operator/catalog/trust-manifest.ts';
import {
  createIntermediate,
  createRoot,
  tlsSecretEntries,
  type Authority,
} from '../../support/signing-certs.ts';

const CATALOG_ID = 'spiffe://example.org/ns/platform/sa/catalog';
const JKU = 'https://catalog.example.org/.well-known/jwks.json';
const CARD_URL = 'https://agents.example.org/.well-known/agent-card.json';
const CARD_TEXT = '{"name":"Recipes","version":"1.0.0"}';
const NOW = '2026-12-02T04:00:00Z';

let root: Authority;
let certKey: SigningKey;
let jwkKey: SigningKey;
let trust: { certificates: { roots: ReturnType<typeof parseTrustBundle>; identities: string[] } };

const entry = (over: Partial<CatalogEntry> = {}): CatalogEntry => ({
  identifier: 'urn:air:example.org:team-a:recipes',
  type: A2A_AGENT_CARD_MEDIA_TYPE,
  url: CARD_URL,
  version: '1.0.0',
  ...over,
});

const input = (over: Partial<ManifestInput> = {}): ManifestInput => ({
  key: certKey,
  publisher: publisherIdentity(certKey)!,
  now: NOW,
  served: new Map([[entry().identifier, CARD_TEXT]]),
  previous: new Map(),
  ...over,
});

const header = (jws: string) =>
  JSON.parse(Buffer.from(jws.split('.')[0]!, 'base64url').toString('utf8')) as Record<string, unknown>;

beforeAll(async () => {
  root = await createRoot();
  const intermediate = await createIntermediate(root);
  const tls = await tlsSecretEntries({ root, intermediate, uri: CATALOG_ID, commonName: null });
  certKey = await importCertificateSigningKey({
    certificate: tls['tls.crt'],
    privateKey: tls['tls.key'],
    ca: tls['ca.crt'],
  });
  jwkKey = await importSigningKey(JSON.stringify(await generateSigningJwk('ES256', 'catalog-k1')));
  trust = {
    certificates: { roots: parseTrustBundle(root.pem, 'ca.pem'), identities: ['spiffe://example.org/*'] },
  };
});

describe('the identity a catalog signing key proves', () => {
  it('a certificate key: its URI SAN; a JWKS key: the jku URL, or none', () => {
    expect(publisherIdentity(certKey)).toEqual({ identity: CATALOG_ID, identityType: 'spiffe' });
    expect(publisherIdentity(jwkKey, JKU)).toEqual({ identity: JKU, identityType: 'url' });
    expect(publisherIdentity(jwkKey)).toBeUndefined();
    expect(publisherIdentity(undefined, JKU)).toBeUndefined();
  });

  it('aligns with the urn:air publisher domain: the same domain or one below it', () => {
    expect(identityAligns(CATALOG_ID, 'example.org')).toBe(true);
    expect(identityAligns(JKU, 'example.org')).toBe(true);
    expect(identityAligns(CATALOG_ID, 'cluster.local')).toBe(false);
    expect(identityAligns('spiffe://badexample.org/x', 'example.org')).toBe(false);
  });
});

describe('rendering a signed trust manifest', () => {
  it('binds the entry and the served card bytes, signed with the x5c chain', async () => {
    const out = await withTrustManifest(entry(), input());
    const m = out.trustManifest!;
    expect(m).toMatchObject({
      identity: CATALOG_ID,
      identityType: 'spiffe',
      issuedAt: NOW,
      subject: {
        identifier: entry().identifier,
        type: A2A_AGENT_CARD_MEDIA_TYPE,
        version: '1.0.0',
        url: CARD_URL,
        digest: `sha256:${createHash('sha256').update(CARD_TEXT).digest('hex')}`,
      },
    });
    expect(m.signature).toMatch(/^[\w-]+\.\.[\w-]+$/);
    expect(header(m.signature!)).toMatchObject({ alg: 'ES256', kid: certKey.kid, x5c: [...certKey.x5c!] });
    // The signature verifies outside our verifier, with the key of the x5c leaf, over the JCS
    // form of the manifest without "signature" (spec "Trust Manifest Signatures").
    const [protectedHeader, , signature] = m.signature!.split('.');
    const leaf = new (await import('node:crypto')).X509Certificate(Buffer.from(certKey.x5c![0]!, 'base64'));
    const { signature: _s, ...unsigned } = m;
    await jose.flattenedVerify(
      {
        protected: protectedHeader!,
        payload: Buffer.from(canonicalJson(unsigned)).toString('base64url'),
        signature: signature!,
      },
      leaf.publicKey,
    );
  });

  it('inline data: the digest of its JCS form; no known artifact: no manifest', async () => {
    const data = { version: '1.0.0', name: 'Recipes' };
    const inline = await withTrustManifest(entry({ url: undefined, data }), input({ served: new Map() }));
    expect(inline.trustManifest!.subject!.digest).toBe(
      `sha256:${createHash('sha256').update(canonicalJson(data)).digest('hex')}`,
    );
    expect(inline.trustManifest!.subject!.url).toBeUndefined();
    expect((await withTrustManifest(entry(), input({ served: new Map() }))).trustManifest).toBeUndefined();
    const nested = {
      identifier: 'urn:air:example.org:_cluster:all.p0',
      type: 'application/ai-catalog+json',
      url: 'p0.json',
    };
    expect(await withTrustManifest(nested, input())).toEqual(nested);
  });

  it('keeps the published manifest (bytes, issuedAt) while it still holds, re-signs when the card changes', async () => {
    const first = (await withTrustManifest(entry(), input())).trustManifest!;
    const previous = new Map([[entry().identifier, first]]);
    const again = await withTrustManifest(entry(), input({ previous, now: '2026-12-02T05:00:00Z' }));
    expect(again.trustManifest).toEqual(first);
    // A published manifest whose signature was tampered with is not kept.
    const broken = { ...first, signature: `${first.signature!.slice(0, -4)}AAAA` };
    const replaced = await withTrustManifest(
      entry(),
      input({ previous: new Map([[entry().identifier, broken]]), now: '2026-12-02T05:00:00Z' }),
    );
    expect(replaced.trustManifest!.issuedAt).toBe('2026-12-02T05:00:00Z');
    expect(await verifyTrustManifest(replaced, CARD_TEXT, { keys: [] }, trust)).toMatchObject({ ok: true });
    const changed = await withTrustManifest(
      entry(),
      input({ previous, now: '2026-12-02T05:00:00Z', served: new Map([[entry().identifier, '{}']]) }),
    );
    expect(changed.trustManifest!.issuedAt).toBe('2026-12-02T05:00:00Z');
    expect(changed.trustManifest!.subject!.digest).not.toBe(first.subject!.digest);
    // Another key: signed again.
    const jku = await withTrustManifest(
      entry(),
      input({ previous, key: jwkKey, publisher: publisherIdentity(jwkKey, JKU)!, jku: JKU }),
    );
    expect(header(jku.trustManifest!.signature!)).toMatchObject({ kid: 'catalog-k1', jku: JKU });
    expect(jku.trustManifest!.identity).toBe(JKU);
  });

  it('a catalog whose identity is outside spec.publisher, or proves none, says why and adds none', async () => {
    const built: BuiltEntry[] = [{ entry: entry(), facts: {} as BuiltEntry['facts'] }];
    const base = { served: new Map([[entry().identifier, CARD_TEXT]]), previousDocs: [], now: NOW };
    const elsewhere = await addTrustManifests(built, { ...base, key: certKey, publisher: 'cluster.local' });
    expect(elsewhere.entries[0]!.entry.trustManifest).toBeUndefined();
    expect(elsewhere.note).toBe(
      `no trust manifests: the signing identity ${CATALOG_ID} is not in the publisher domain cluster.local (spec.publisher), so consumers would reject them`,
    );
    const none = await addTrustManifests(built, { ...base, key: jwkKey, publisher: 'example.org' });
    expect(none.note).toMatch(/the signing key proves no identity/);
    const unsigned = await addTrustManifests(built, { ...base, key: undefined, publisher: 'example.org' });
    expect(unsigned).toEqual({ entries: built });
    const ok = await addTrustManifests(built, { ...base, key: certKey, publisher: 'example.org' });
    expect(ok.note).toBeUndefined();
    expect(ok.entries[0]!.entry.trustManifest!.identity).toBe(CATALOG_ID);
  });
});

describe('verifying a trust manifest (the consumer side)', () => {
  let signed: CatalogEntry;
  beforeAll(async () => {
    signed = await withTrustManifest(entry(), input());
  });

  it('verified: the identity is the signing certificate, the subject the entry, the digest the card', async () => {
    expect(await verifyTrustManifest(signed, CARD_TEXT, { keys: [] }, trust)).toEqual({
      ok: true,
      identity: CATALOG_ID,
      kid: certKey.kid,
      message: `trust manifest verified: identity ${CATALOG_ID} (its signing certificate)`,
    });
  });

  it('refuses a card that is not the one the manifest binds, and an entry relabelled or moved', async () => {
    expect(await verifyTrustManifest(signed, '{"name":"Evil"}', { keys: [] }, trust)).toMatchObject({
      ok: false,
      invalid: true,
      message: 'the card served at the url does not match subject.digest',
    });
    const moved = { ...signed, url: 'https://evil.example.org/card.json' };
    expect(await verifyTrustManifest(moved, CARD_TEXT, { keys: [] }, trust)).toMatchObject({
      invalid: true,
      message: `subject.url ${CARD_URL} is not the entry's https://evil.example.org/card.json`,
    });
    const renamed = { ...signed, identifier: 'urn:air:example.org:team-a:billing' };
    expect((await verifyTrustManifest(renamed, CARD_TEXT, { keys: [] }, trust)).message).toMatch(
      /^subject\.identifier urn:air:example\.org:team-a:recipes is not the entry's/,
    );
    const older = { ...signed, version: '0.9.0' };
    expect((await verifyTrustManifest(older, CARD_TEXT, { keys: [] }, trust)).message).toBe(
      "subject.version 1.0.0 is not the entry's 0.9.0",
    );
  });

  it('refuses a manifest changed after signing, and one from an untrusted CA or identity', async () => {
    const claimed = {
      ...signed,
      trustManifest: { ...signed.trustManifest!, identity: 'spiffe://example.org/x' },
    };
    expect(await verifyTrustManifest(claimed, CARD_TEXT, { keys: [] }, trust)).toMatchObject({
      ok: false,
      invalid: true,
      message: `signature: kid ${certKey.kid}: signature does not match`,
    });
    const otherRoot = await createRoot('other root');
    const foreign = {
      certificates: { roots: parseTrustBundle(otherRoot.pem, 'x'), identities: ['spiffe://example.org/*'] },
    };
    expect((await verifyTrustManifest(signed, CARD_TEXT, { keys: [] }, foreign)).message).toMatch(
      /certificate chain refused: .* is not issued by a certificate of the trust bundle/,
    );
    const narrow = {
      certificates: { ...trust.certificates, identities: ['spiffe://example.org/ns/team-a/*'] },
    };
    expect((await verifyTrustManifest(signed, CARD_TEXT, { keys: [] }, narrow)).message).toContain(
      `the leaf identity ${CATALOG_ID} matches none of the trusted identities`,
    );
  });

  it('refuses an identity its signing certificate does not carry', async () => {
    // Signed by the catalog key, but naming another identity: the signature is valid, the claim is not.
    const { signature: _s, ...rest } = signed.trustManifest!;
    const lying = { ...rest, identity: 'spiffe://example.org/ns/team-a/sa/recipes' };
    const jws = await signDetached(manifestPayload(lying), certKey);
    const e = { ...signed, trustManifest: { ...lying, signature: `${jws.protected}..${jws.signature}` } };
    expect(await verifyTrustManifest(e, CARD_TEXT, { keys: [] }, trust)).toEqual({
      ok: false,
      invalid: true,
      message: `the manifest names identity spiffe://example.org/ns/team-a/sa/recipes, but its signing certificate is ${CATALOG_ID}`,
    });
  });

  it('a JWKS-signed manifest: an https identity that is its jku; a SPIFFE identity is not proven by a key', async () => {
    const viaJku = await withTrustManifest(
      entry(),
      input({ key: jwkKey, publisher: publisherIdentity(jwkKey, JKU)!, jku: JKU }),
    );
    expect(await verifyTrustManifest(viaJku, CARD_TEXT, publicJwks([jwkKey]))).toMatchObject({
      ok: true,
      identity: JKU,
      message: `trust manifest verified: identity ${JKU} (kid catalog-k1)`,
    });
    expect((await verifyTrustManifest(viaJku, CARD_TEXT, { keys: [] })).message).toBe(
      'signature: kid catalog-k1: no trusted key with kid "catalog-k1" for ES256',
    );
    const spiffeByKey = await withTrustManifest(
      entry(),
      input({ key: jwkKey, publisher: { identity: CATALOG_ID, identityType: 'spiffe' } }),
    );
    expect(await verifyTrustManifest(spiffeByKey, CARD_TEXT, publicJwks([jwkKey]))).toMatchObject({
      ok: false,
      invalid: false,
      message: `identity ${CATALOG_ID} is not proven by a trusted JWKS key (kid catalog-k1); a spiffe identity needs a certificate chain (--trust-bundle and --identity)`,
    });
  });

  it('refuses an identity outside the urn:air publisher domain, a weak digest, a missing subject', async () => {
    const other = await withTrustManifest(entry({ identifier: 'urn:air:example.com:team-a:recipes' }), {
      ...input(),
      served: new Map([['urn:air:example.com:team-a:recipes', CARD_TEXT]]),
    });
    expect((await verifyTrustManifest(other, CARD_TEXT, { keys: [] }, trust)).message).toBe(
      `identity ${CATALOG_ID} does not align with the entry's publisher domain example.com`,
    );
    const { signature: _s, ...rest } = signed.trustManifest!;
    const weak = { ...rest, subject: { ...rest.subject!, digest: `sha1:${'0'.repeat(40)}` } };
    const jws = await signDetached(manifestPayload(weak), certKey);
    const weakEntry = {
      ...signed,
      trustManifest: { ...weak, signature: `${jws.protected}..${jws.signature}` },
    };
    expect((await verifyTrustManifest(weakEntry, CARD_TEXT, { keys: [] }, trust)).message).toBe(
      'subject.digest uses sha1; SHA-256 or stronger is required',
    );
    const bare = {
      ...signed,
      trustManifest: { identity: CATALOG_ID, signature: signed.trustManifest!.signature },
    };
    expect((await verifyTrustManifest(bare, CARD_TEXT, { keys: [] }, trust)).message).toBe(
      'a signed trust manifest needs subject and issuedAt',
    );
  });
});
