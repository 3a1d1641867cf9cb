/**
 * A trust rule's signer identity (operator/signing/identity.ts, operator/policy/signer.ts): only an identity whose x5c chain
 * verifies to its Secret's ca.crt counts. The signing key checks (certificate.ts) accept every
 * certificate below, so each case is one a namespace user could sign with.
 */
import { describe, expect, it } from 'vitest';
import { importCertificateSigningKey, type SigningKey } from '../../../operator/card/sign.ts';
import { evaluatePolicy, type Subject } from '../../../operator/policy/evaluate.ts';
import { parsePolicy } from '../../../operator/policy/parse.ts';
import { signerFacts } from '../../../operator/policy/signer.ts';
import { verifySignerIdentity } from '../../../operator/signing/identity.ts';
import {
  createIntermediate,
  createRoot,
  issueLeaf,
  keyPem,
  tlsSecretEntries,
} from '../../support/signing-certs.ts';

const now = new Date();
const OWN = 'spiffe://example.org/ns/agents/sa/default';
const OTHER = 'spiffe://example.org/ns/payments/sa/default';

const importKey = (e: { 'tls.crt': string; 'tls.key': string; 'ca.crt'?: string }) =>
  importCertificateSigningKey(
    { certificate: e['tls.crt'], privateKey: e['tls.key'], ...(e['ca.crt'] ? { ca: e['ca.crt'] } : {}) },
    { now },
  );

function ownNamespacePolicy() {
  const parsed = parsePolicy({
    apiVersion: 'agentcard.dev/v1alpha1',
    kind: 'ClusterAgentPolicy',
    metadata: { name: 'p' },
    spec: {
      mode: 'Enforce',
      rules: [
        {
          name: 'own-namespace',
          message: 'Signed by its own namespace',
          trust: { signerIdentities: ['spiffe://example.org/ns/{namespace}/*'] },
        },
      ],
    },
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed.policy;
}

function judge(keys: SigningKey[]) {
  const subject: Subject = {
    name: 'weather',
    namespace: 'agents',
    adopted: false,
    facts: signerFacts(keys, now),
  };
  return evaluatePolicy(ownNamespacePolicy(), subject).rules[0]!;
}

describe('signer identities for trust rules', () => {
  it('counts an identity whose chain verifies to the Secret ca.crt', async () => {
    const key = await importKey(await tlsSecretEntries({ uri: OWN }));
    expect(verifySignerIdentity(key, now)).toEqual({ identity: OWN });
    expect(judge([key])).toMatchObject({ verdict: 'Pass' });
  });

  it('a verified identity of another namespace fails the rule and is named', async () => {
    const key = await importKey(await tlsSecretEntries({ uri: OTHER }));
    const rule = judge([key]);
    expect(rule.verdict).toBe('Fail');
    expect(rule.violations[0]!.detail).toBe(
      `signed by "${OTHER}"; expected "spiffe://example.org/ns/agents/*"`,
    );
  });

  it('an identity "issued" by an end-entity certificate is not proven, though the key signs', async () => {
    // A namespace user holds a genuine leaf of the CA (another identity, issued without a key
    // usage extension, so OpenSSL's issuer check does not stop it) and mints a leaf claiming the
    // wanted identity with its key: each certificate is signed by the next and the top one by
    // the CA, which the signing key checks accept, but no CA certified the claim.
    const root = await createRoot();
    const intermediate = await createIntermediate(root);
    const genuine = await issueLeaf(intermediate, { uri: OTHER, usages: null, commonName: 'genuine' });
    const forged = await issueLeaf(
      { cert: genuine.cert, keys: genuine.keys, pem: genuine.cert.toString('pem') },
      { uri: OWN },
    );
    const key = await importKey({
      'tls.crt': [forged.cert, genuine.cert, intermediate.cert].map((c) => c.toString('pem')).join('\n'),
      'tls.key': await keyPem(forged.keys),
      'ca.crt': root.pem,
    });
    expect(key.certificate!.identities).toEqual([OWN]);
    const result = verifySignerIdentity(key, now);
    expect(result).toMatchObject({ unverified: { kid: key.kid, claimed: OWN } });
    expect(JSON.stringify(result)).toContain('is not a CA certificate');

    const rule = judge([key]);
    expect(rule.verdict).toBe('Fail');
    expect(rule.violations[0]!.detail).toContain('signed by no verified certificate identity');
    expect(rule.violations[0]!.detail).toContain(
      `the certificate of kid "${key.kid}" claims "${OWN}", but does not prove it: the chain does not verify to its Secret's ca.crt`,
    );
  });

  it('a self-signed certificate without ca.crt proves no identity', async () => {
    const self = await createRoot('self');
    const leaf = await issueLeaf(self, { uri: OWN });
    const key = await importKey({ 'tls.crt': leaf.cert.toString('pem'), 'tls.key': await keyPem(leaf.keys) });
    const rule = judge([key]);
    expect(rule.verdict).toBe('Fail');
    expect(rule.violations[0]!.detail).toContain('its Secret has no ca.crt');
  });

  it('a chain anchored to a ca.crt that did not issue it proves nothing', async () => {
    const entries = await tlsSecretEntries({ uri: OWN });
    // Leaf and intermediate of one CA, ca.crt of another: the signing checks refuse this pair, so
    // the key is built with the right anchor and judged later against the wrong one.
    const key = await importKey(entries);
    const other = await createRoot('another CA');
    const swapped: SigningKey = { ...key, anchors: [other.cert.toString('base64')] };
    expect(verifySignerIdentity(swapped, now)).toMatchObject({
      unverified: { reason: expect.stringContaining('is not issued by a certificate of the trust bundle') },
    });
  });

  it('one verified identity that matches is enough; a JWKS key proves none', async () => {
    const good = await importKey(await tlsSecretEntries({ uri: OWN }));
    const self = await createRoot('self');
    const leaf = await issueLeaf(self, { uri: OWN });
    const bad = await importKey({ 'tls.crt': leaf.cert.toString('pem'), 'tls.key': await keyPem(leaf.keys) });
    expect(judge([bad, good]).verdict).toBe('Pass');
    const facts = signerFacts([bad, good], now);
    expect(facts.signerIdentities).toEqual([OWN]);
    expect(facts.unverifiedSigners).toHaveLength(1);
  });

  it('a chain verified at one time is judged again at another', async () => {
    const key = await importKey(await tlsSecretEntries({ uri: OWN }));
    const later = new Date(now.getTime() + 400 * 86_400_000); // past the root's year
    expect(verifySignerIdentity(key, later)).toMatchObject({
      unverified: { reason: expect.stringContaining('expired') },
    });
  });
});
