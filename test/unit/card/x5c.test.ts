/**
 * Trust in certificate chains (x5c, RFC 7515 section 4.1.6) and workload identities: what
 * verifies, what is refused and with which error, and that @a2a-js/sdk's verifier (given the
 * leaf key taken from the chain) accepts the same cards.
 */
import { verifyAgentCardSignature, type AgentCard as SdkCard } from '@a2a-js/sdk';
import { X509Certificate } from 'node:crypto';
import * as jose from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateSigningJwk } from '../../../operator/card/keygen.ts';
import { importSigningKey, signCard } from '../../../operator/card/sign.ts';
import { verifyCard } from '../../../operator/card/verify.ts';
import {
  CLOCK_SKEW_MS,
  MAX_CHAIN_LENGTH,
  identityMatches,
  identityProblem,
  parseIdentityPattern,
  parseTrustBundle,
  type CertificateTrust,
} from '../../../operator/card/x5c.ts';
import { certificateExtensions } from '../../../operator/card/x509-extensions.ts';
import { minimalCard } from '../../support/cards.ts';
import {
  createIntermediate,
  createLeaf,
  createRoot,
  signWithChain,
  x509,
  type TestCert,
} from '../../support/x5c-signer.ts';

const TEAM_A = 'spiffe://example.org/ns/team-a/*';
const AGENT_A = 'spiffe://example.org/ns/team-a/sa/agent';
const AGENT_B = 'spiffe://example.org/ns/team-b/sa/agent';

let root: TestCert;
let intermediate: TestCert;
let leafA: TestCert;
let trust: CertificateTrust;

const bundleOf = (...certs: TestCert[]) =>
  parseTrustBundle(certs.map((c) => c.pem).join('\n'), 'test bundle');
const verify = (card: unknown, t: Partial<CertificateTrust> = {}) =>
  verifyCard(card, { keys: [] }, { certificates: { ...trust, ...t } });
const firstError = async (card: unknown, t: Partial<CertificateTrust> = {}) =>
  (await verify(card, t)).results[0]?.error;

beforeAll(async () => {
  root = await createRoot();
  intermediate = await createIntermediate(root, 'spire intermediate');
  leafA = await createLeaf(intermediate, { uris: [AGENT_A] });
  trust = { roots: bundleOf(root), identities: [TEAM_A] };
});

describe('x5c chains', () => {
  it('verifies a card signed with a chain to the bundle and names the identity', async () => {
    const card = await signWithChain(minimalCard(), leafA, [intermediate]);
    const result = await verify(card);
    expect(result).toMatchObject({ verified: true, kid: 'svid', identity: AGENT_A });
    // An exact identity matches too, and the root may be sent in x5c.
    expect((await verify(card, { identities: [AGENT_A] })).verified).toBe(true);
    const withRoot = await signWithChain(minimalCard(), leafA, [intermediate, root]);
    expect((await verify(withRoot)).identity).toBe(AGENT_A);
  });

  it('verifies a leaf issued directly by the root, and without a kid', async () => {
    const leaf = await createLeaf(root, { uris: [AGENT_A] });
    const card = await signWithChain(minimalCard(), leaf, [], { kid: '' });
    expect(await verify(card)).toMatchObject({ verified: true, identity: AGENT_A });
  });

  it('refuses a card signed for another namespace', async () => {
    const leafB = await createLeaf(intermediate, { uris: [AGENT_B] });
    const card = await signWithChain(minimalCard(), leafB, [intermediate]);
    const result = await verify(card);
    expect(result.verified).toBe(false);
    expect(result.results[0]!.error).toBe(
      `certificate chain refused: the leaf identity ${AGENT_B} matches none of the trusted identities (${TEAM_A})`,
    );
  });

  it('refuses a chain to another root', async () => {
    const other = await createRoot('other root');
    const card = await signWithChain(minimalCard(), leafA, [intermediate]);
    expect(await firstError(card, { roots: bundleOf(other) })).toMatch(
      /x5c\[1\] \(CN=spire intermediate\) is not issued by a certificate of the trust bundle \(issuer CN=test root CA\)/,
    );
  });

  it('refuses a tampered chain: an intermediate that did not sign the leaf', async () => {
    const impostor = await createIntermediate(root, 'spire intermediate'); // same name, other key
    const card = await signWithChain(minimalCard(), leafA, [impostor]);
    expect(await firstError(card)).toMatch(
      /leaf is not signed by x5c\[1\] \(CN=spire intermediate\): the chain is broken/,
    );
  });

  it('refuses a signature made by another key than the leaf of the chain', async () => {
    const other = await createLeaf(intermediate, { uris: [AGENT_A] });
    // Signed by `other`, but x5c names leafA: the chain is fine, the signature is not leafA's.
    const card = await signWithChain(minimalCard(), other, [], { x5c: [leafA.b64, intermediate.b64] });
    const result = await verify(card);
    expect(result.verified).toBe(false);
    expect(result.results[0]).toMatchObject({ identity: AGENT_A, error: 'signature does not match' });
  });

  it('refuses a card changed after signing', async () => {
    const card = await signWithChain(minimalCard(), leafA, [intermediate]);
    expect(await firstError({ ...card, name: 'Changed' })).toBe('signature does not match');
  });

  it('refuses an expired leaf, and allows the stated clock skew', async () => {
    const expired = await createLeaf(intermediate, {
      uris: [AGENT_A],
      notBefore: new Date(Date.now() - 2 * 3600_000),
      notAfter: new Date(Date.now() - 3600_000),
    });
    const card = await signWithChain(minimalCard(), expired, [intermediate]);
    expect(await firstError(card)).toMatch(/^certificate chain refused: leaf expired at \d{4}-/);
    // The same leaf at a time within the skew after its notAfter still verifies.
    const justAfter = new Date(expired.cert.notAfter.getTime() + CLOCK_SKEW_MS - 1000);
    expect((await verify(card, { now: () => justAfter })).verified).toBe(true);
    const beyond = new Date(expired.cert.notAfter.getTime() + CLOCK_SKEW_MS + 1000);
    expect((await verify(card, { now: () => beyond })).verified).toBe(false);
  });

  it('refuses a leaf not valid yet', async () => {
    const future = await createLeaf(intermediate, {
      uris: [AGENT_A],
      notBefore: new Date(Date.now() + 3600_000),
      notAfter: new Date(Date.now() + 7200_000),
    });
    const card = await signWithChain(minimalCard(), future, [intermediate]);
    expect(await firstError(card)).toMatch(/leaf is not valid before/);
  });

  it('refuses a chain longer than the limit', async () => {
    let issuer = root;
    const chain: TestCert[] = [];
    for (let i = 0; i < MAX_CHAIN_LENGTH; i++) {
      issuer = await createIntermediate(issuer, `level ${i}`);
      chain.unshift(issuer);
    }
    const leaf = await createLeaf(issuer, { uris: [AGENT_A] });
    const card = await signWithChain(minimalCard(), leaf, chain);
    expect(await firstError(card)).toBe(
      `certificate chain refused: x5c has ${MAX_CHAIN_LENGTH + 1} certificates; at most ${MAX_CHAIN_LENGTH} are accepted (a leaf and its intermediates)`,
    );
  });

  it('refuses a leaf without KeyUsage or without digitalSignature', async () => {
    const none = await createLeaf(intermediate, { uris: [AGENT_A], keyUsage: null });
    expect(await firstError(await signWithChain(minimalCard(), none, [intermediate]))).toMatch(
      /the leaf has no KeyUsage extension; it must allow digitalSignature/,
    );
    const encipher = await createLeaf(intermediate, {
      uris: [AGENT_A],
      keyUsage: x509.KeyUsageFlags.keyEncipherment,
    });
    expect(await firstError(await signWithChain(minimalCard(), encipher, [intermediate]))).toMatch(
      /the leaf KeyUsage does not allow digitalSignature/,
    );
  });

  it('refuses a CA leaf, two URI SANs, and an intermediate beyond its path length', async () => {
    const caLeaf = await createLeaf(intermediate, { uris: [AGENT_A], ca: true });
    expect(await firstError(await signWithChain(minimalCard(), caLeaf, [intermediate]))).toMatch(
      /the leaf is a CA certificate/,
    );
    const two = await createLeaf(intermediate, { uris: [AGENT_A, 'spiffe://example.org/other'] });
    expect(await firstError(await signWithChain(minimalCard(), two, [intermediate]))).toMatch(
      /the leaf has 2 URI SANs/,
    );
    const limited = await createIntermediate(root, 'limited', { pathLength: 0 });
    const below = await createIntermediate(limited, 'below');
    const leaf = await createLeaf(below, { uris: [AGENT_A] });
    expect(await firstError(await signWithChain(minimalCard(), leaf, [below, limited]))).toMatch(
      /x5c\[2\] \(CN=limited\) allows 0 intermediate\(s\) below it \(pathLenConstraint\), the chain has 1/,
    );
  });

  it('refuses x5c that is not base64 DER', async () => {
    const card = await signWithChain(minimalCard(), leafA, [], { x5c: ['not base64!'] });
    expect(await firstError(card)).toMatch(/x5c\[0\] is not a base64 string/);
    const garbage = await signWithChain(minimalCard(), leafA, [], {
      x5c: [Buffer.from('hello').toString('base64')],
    });
    expect(await firstError(garbage)).toMatch(/x5c\[0\] is not a DER X.509 certificate/);
  });

  it('without a trust bundle, a chain-signed card says so; a JWKS still verifies a combined card', async () => {
    const card = await signWithChain(minimalCard(), leafA, [intermediate]);
    const plain = await verifyCard(card, { keys: [] });
    expect(plain.results[0]!.error).toMatch(
      /certificate chain \(x5c\) is not checked without a trust bundle/,
    );
    // A card with a JWKS signature and a chain signature: either trust source verifies it.
    const key = await importSigningKey(JSON.stringify(await generateSigningJwk('ES256', 'k1')));
    const both = await signWithChain(await signCard(minimalCard(), [key]), leafA, [intermediate]);
    const byKey = await verifyCard(both, { keys: [key.publicJwk] });
    expect(byKey).toMatchObject({ verified: true, kid: 'k1' });
    expect(byKey.identity).toBeUndefined();
    const byChain = await verifyCard(both, { keys: [] }, { certificates: trust });
    expect(byChain).toMatchObject({ verified: true, identity: AGENT_A });
  });

  it('@a2a-js/sdk verifies the chain-signed cards with the key taken from the leaf', async () => {
    const card = await signWithChain(minimalCard(), leafA, [intermediate]);
    const sdk = verifyAgentCardSignature(async () => {
      const sig = (card.signatures as Array<{ protected: string }>)[0]!;
      const header = jose.decodeProtectedHeader({ protected: sig.protected, payload: '', signature: '' });
      const leaf = new X509Certificate(Buffer.from(header.x5c![0]!, 'base64'));
      return leaf.publicKey.export({ format: 'jwk' }) as jose.JWK;
    });
    await expect(sdk(card as unknown as SdkCard)).resolves.toBeUndefined();
    await expect(sdk({ ...card, name: 'Changed' } as unknown as SdkCard)).rejects.toThrow();
  });
});

describe('identity patterns', () => {
  it('match exactly or by a trailing wildcard segment', () => {
    expect(identityMatches(TEAM_A, AGENT_A)).toBe(true);
    expect(identityMatches(TEAM_A, 'spiffe://example.org/ns/team-a')).toBe(false);
    expect(identityMatches(TEAM_A, 'spiffe://example.org/ns/team-ab/sa/x')).toBe(false);
    expect(identityMatches(TEAM_A, AGENT_B)).toBe(false);
    expect(identityMatches(AGENT_A, AGENT_A)).toBe(true);
    expect(identityMatches(AGENT_A, `${AGENT_A}/more`)).toBe(false);
  });

  it('refuse misplaced wildcards and malformed identities with a reason', () => {
    expect(() => parseIdentityPattern('spiffe://example.org/ns/*/sa/x')).toThrow(
      /only allowed as the whole last/,
    );
    expect(() => parseIdentityPattern('spiffe://example.org/ns/team-*')).toThrow(
      /only allowed as the whole last/,
    );
    expect(() => parseIdentityPattern('example.org/ns')).toThrow(/not an absolute URI/);
    expect(() => parseIdentityPattern('spiffe://Example.org/x')).toThrow(/invalid trust domain/);
    expect(parseIdentityPattern(TEAM_A)).toBe(TEAM_A);
    expect(parseIdentityPattern('spiffe://example.org/*')).toBe('spiffe://example.org/*');
    // A wildcard prefix cannot be escaped with .. or percent-encoding.
    expect(identityProblem('spiffe://example.org/ns/team-a/../team-b/sa/x')).toMatch(/\.\. path segment/);
    expect(identityProblem('spiffe://example.org/ns/team-a/%2e%2e/x')).toMatch(/characters other than/);
    expect(identityProblem('spiffe://example.org/ns/team-a/x?y=1')).toMatch(/no query/);
  });

  it('a leaf whose identity escapes with .. is refused even though it starts with the prefix', async () => {
    const sneaky = await createLeaf(intermediate, {
      uris: ['spiffe://example.org/ns/team-a/../team-b/sa/x'],
    });
    expect(await firstError(await signWithChain(minimalCard(), sneaky, [intermediate]))).toMatch(
      /has a \. or \.\. path segment/,
    );
  });
});

describe('trust bundles and extensions', () => {
  it('reads every certificate of a PEM bundle and refuses one without any', () => {
    expect(bundleOf(root, intermediate)).toHaveLength(2);
    expect(() => parseTrustBundle('nothing here', 'ca.pem')).toThrow('ca.pem: no PEM certificate');
    expect(() =>
      parseTrustBundle('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----', 'ca.pem'),
    ).toThrow('ca.pem: certificate 1 of the bundle is not a valid X.509 certificate');
  });

  it('reads KeyUsage, pathLen and URI SANs from DER', async () => {
    const leaf = certificateExtensions(new Uint8Array(leafA.cert.rawData));
    expect([...leaf.keyUsage!]).toEqual(['digitalSignature']);
    expect(leaf.uris).toEqual([AGENT_A]);
    expect(leaf.critical).toContain('2.5.29.15');
    const limited = await createIntermediate(root, 'limited', { pathLength: 2 });
    const ext = certificateExtensions(new Uint8Array(limited.cert.rawData));
    expect(ext.pathLength).toBe(2);
    expect(ext.keyUsage!.has('keyCertSign')).toBe(true);
  });
});
