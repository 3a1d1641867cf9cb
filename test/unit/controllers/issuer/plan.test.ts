/**
 * The pure parts of spec.signing.keys[].issuerRef: the issuer read from a spec, the identity, the
 * Certificate the operator owns, drift, and the card controller's signing key resolution while
 * the certificate is pending, refused, or issued.
 */
import { describe, expect, it } from 'vitest';
import { signingCertificateName } from '../../../../operator/api/names.ts';
import { DEFAULT_IDENTITY_TEMPLATE } from '../../../../operator/card/identity.ts';
import { AgentCardResourceSpecSchema } from '../../../../operator/card/resource.ts';
import { planReconcile, type PlanInput } from '../../../../operator/controllers/agentcard/plan.ts';
import { type AgentCardObject } from '../../../../operator/api/objects.ts';
import { disabledVerdict } from '../../../../operator/controllers/agentcard/probes.ts';
import { referencedSecretNames } from '../../../../operator/signing/secret-index.ts';
import {
  cardIdentity,
  certificateDrift,
  desiredCertificate,
  issuanceFromCertificate,
  issuerRefOf,
  serviceAccountOf,
  type CertificateObject,
} from '../../../../operator/controllers/issuer/plan.ts';
import { sampleCard } from '../../../support/cards.ts';
import { tlsSecretEntries } from '../../../support/signing-certs.ts';

const policy = { trustDomain: 'example.org', template: DEFAULT_IDENTITY_TEMPLATE };
const card = { namespace: 'team-a', name: 'recipes', uid: 'uid-1' };
const want = () =>
  desiredCertificate({
    card,
    identity: 'spiffe://example.org/ns/team-a/sa/default',
    issuerRef: { name: 'ca', kind: 'Issuer', group: 'cert-manager.io' },
  });

describe('the issuerRef of a spec', () => {
  it('is read with cert-manager defaults, leniently', () => {
    expect(issuerRefOf({ signing: { keys: [{ secretRef: {} }, { issuerRef: { name: 'ca' } }] } })).toEqual({
      name: 'ca',
      kind: 'Issuer',
      group: 'cert-manager.io',
    });
    expect(
      issuerRefOf({
        signing: { keys: [{ issuerRef: { name: 'c', kind: 'ClusterIssuer', group: 'x.io' } }] },
      }),
    ).toEqual({ name: 'c', kind: 'ClusterIssuer', group: 'x.io' });
    expect(issuerRefOf({ signing: { keys: [{ issuerRef: { name: '' } }] } })).toBeUndefined();
    expect(issuerRefOf({ signing: { keys: 'x' } })).toBeUndefined();
    expect(issuerRefOf(undefined)).toBeUndefined();
  });

  it('the schema takes exactly one kind of key, and one issuerRef per card', () => {
    const spec = (keys: unknown[]) =>
      AgentCardResourceSpecSchema.safeParse({ card: sampleCard(), signing: { keys } });
    const ok = spec([{ issuerRef: { name: 'ca' } }]);
    expect(ok.success).toBe(true);
    expect(ok.data?.signing?.keys[0]?.issuerRef).toEqual({
      name: 'ca',
      kind: 'Issuer',
      group: 'cert-manager.io',
    });
    expect(spec([{ issuerRef: { name: 'ca' }, certificate: { secretName: 'x' } }]).error?.message).toContain(
      'set exactly one of secretRef, certificate and issuerRef',
    );
    expect(spec([{ issuerRef: { name: 'a' } }, { issuerRef: { name: 'b' } }]).error?.message).toContain(
      'at most one key may name an issuerRef',
    );
    // A JWKS key and an issued certificate side by side (a migration).
    expect(spec([{ secretRef: { name: 'k', key: 'jwk' } }, { issuerRef: { name: 'ca' } }]).success).toBe(
      true,
    );
  });

  it("its Secret is referenced under the card's derived name, so a renewal re-queues the card", () => {
    const spec = {
      signing: { keys: [{ issuerRef: { name: 'ca' } }, { secretRef: { name: 'jwk', key: 'k' } }] },
    };
    expect(referencedSecretNames(spec, 'recipes').sort()).toEqual(['jwk', 'recipes-signing']);
    expect(referencedSecretNames(spec)).toEqual(['jwk']);
  });

  it('derives a name that fits, for any card name', () => {
    expect(signingCertificateName('recipes')).toBe('recipes-signing');
    const long = signingCertificateName('a'.repeat(253));
    expect(long.length).toBeLessThanOrEqual(253);
    expect(long).toMatch(/^a+-[0-9a-f]{16}-signing$/);
    expect(signingCertificateName('a'.repeat(253))).not.toBe(signingCertificateName(`${'a'.repeat(252)}b`));
  });
});

describe('the identity', () => {
  it("comes from the administrator's template, the namespace and the workload's service account", () => {
    expect(cardIdentity(policy, card, serviceAccountOf(undefined))).toEqual({
      ok: true,
      identity: 'spiffe://example.org/ns/team-a/sa/default',
    });
    const workload = { spec: { template: { spec: { serviceAccountName: 'recipes-sa' } } } };
    expect(cardIdentity(policy, card, serviceAccountOf(workload))).toEqual({
      ok: true,
      identity: 'spiffe://example.org/ns/team-a/sa/recipes-sa',
    });
    expect(
      cardIdentity(
        { trustDomain: 'example.org', template: 'spiffe://{trustDomain}/{namespace}/agent/{name}' },
        card,
        'x',
      ),
    ).toEqual({ ok: true, identity: 'spiffe://example.org/team-a/agent/recipes' });
  });

  it('refuses values that would change the path', () => {
    const bad = cardIdentity(policy, card, 'a/../../ns/other');
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.message).toContain('serviceAccount');
  });
});

describe('the owned Certificate', () => {
  it('has the URI SAN only, the digital signature usage, a new P-256 key on each renewal, and the watch label', () => {
    const cert = want();
    expect(cert).toMatchObject({
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: {
        name: 'recipes-signing',
        namespace: 'team-a',
        labels: { 'app.kubernetes.io/managed-by': 'agentcard-operator', 'agentcard.dev/card': 'recipes' },
        ownerReferences: [{ kind: 'AgentCard', name: 'recipes', uid: 'uid-1', controller: true }],
      },
      spec: {
        secretName: 'recipes-signing',
        uris: ['spiffe://example.org/ns/team-a/sa/default'],
        usages: ['digital signature'],
        duration: '24h',
        renewBefore: '8h',
        privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
        secretTemplate: { labels: { 'agentcard.dev/signing-key': 'true' } },
      },
    });
    expect(cert.spec.commonName).toBeUndefined();
    expect(cert.spec.dnsNames).toBeUndefined();
  });

  it('detects drift: changed fields, a SAN added by hand, another issuer, a missing label', () => {
    const live = (): CertificateObject => structuredClone(want());
    expect(certificateDrift(live(), want())).toEqual([]);
    // Defaults cert-manager fills in are not drift.
    const defaulted = live();
    delete (defaulted.spec!.issuerRef as Record<string, unknown>).kind;
    delete (defaulted.spec!.privateKey as Record<string, unknown>).encoding;
    expect(certificateDrift(defaulted, want())).toEqual([]);

    const edited = live();
    edited.spec!.dnsNames = ['evil.example.org'];
    edited.spec!.uris = ['spiffe://example.org/ns/kube-system/sa/admin'];
    (edited.spec!.privateKey as Record<string, unknown>).rotationPolicy = 'Never';
    (edited.spec!.issuerRef as Record<string, unknown>).name = 'other';
    edited.metadata.labels = {};
    expect(certificateDrift(edited, want())).toEqual([
      'uris',
      'issuerRef',
      'privateKey.rotationPolicy',
      'dnsNames',
      'metadata.labels',
    ]);
  });

  it('tells the card controller what cert-manager says', () => {
    const cert = live({
      conditions: [
        { type: 'Ready', status: 'False', reason: 'DoesNotExist', message: 'Issuer "ca" not found' },
      ],
    });
    const state = issuanceFromCertificate(cert, 'spiffe://example.org/ns/team-a/sa/default');
    expect(state).toMatchObject({ sign: true, reason: 'CertificatePending' });
    expect(state.message).toContain('is not issued yet (DoesNotExist: Issuer "ca" not found)');
    expect(issuanceFromCertificate(live({}), 'x').message).toContain('(no status yet)');
  });
});

function live(status: CertificateObject['status']): CertificateObject {
  return { ...structuredClone(want()), status };
}

describe('signing with the issued certificate (controller/plan.ts)', () => {
  const resource: AgentCardObject = {
    metadata: { name: 'recipes', namespace: 'team-a', uid: 'uid-1', generation: 1 },
    spec: { card: sampleCard(), signing: { keys: [{ issuerRef: { name: 'ca' }, kid: 'svid' }] } },
  };
  const input = (over: Partial<PlanInput>): PlanInput => ({
    resource,
    secrets: new Map(),
    liveConfigMap: undefined,
    interfaces: () => disabledVerdict(1, 'probes are off'),
    now: new Date(),
    ...over,
  });
  const signed = (plan: Awaited<ReturnType<typeof planReconcile>>) =>
    plan.status.conditions?.find((c) => c.type === 'Signed');

  it('without --cert-manager: CertificateNotRequested, nothing published', async () => {
    const plan = await planReconcile(input({ issued: { secretName: 'recipes-signing', enabled: false } }));
    expect(signed(plan)).toMatchObject({ status: 'False', reason: 'CertificateNotRequested' });
    expect(signed(plan)!.message).toContain('start it with --cert-manager');
    expect(plan.configMap).toBeUndefined();
  });

  it("not issued yet: CertificatePending with cert-manager's words, nothing published unsigned", async () => {
    const state = issuanceFromCertificate(live({}), 'spiffe://example.org/ns/team-a/sa/default');
    const plan = await planReconcile(
      input({ issued: { secretName: 'recipes-signing', enabled: true, state } }),
    );
    expect(signed(plan)).toMatchObject({ status: 'False', reason: 'CertificatePending' });
    expect(signed(plan)!.message).toContain('Certificate "recipes-signing"');
    expect(signed(plan)!.message).toContain('nothing is published yet');
    expect(plan.configMap).toBeUndefined();
  });

  it("a refused Certificate (not the card's own) never signs, even with a Secret present", async () => {
    const entries = await tlsSecretEntries({ uri: 'spiffe://example.org/ns/team-a/sa/default' });
    const data = Object.fromEntries(
      (['tls.crt', 'tls.key', 'ca.crt'] as const).map((k) => [k, Buffer.from(entries[k]).toString('base64')]),
    );
    const secrets = new Map([['recipes-signing', { data, labelled: true }]]);
    const refused = await planReconcile(
      input({
        secrets,
        issued: {
          secretName: 'recipes-signing',
          enabled: true,
          state: {
            sign: false,
            reason: 'CertificateNotRequested',
            message: 'a Certificate "recipes-signing" exists and is not owned by this AgentCard',
          },
        },
      }),
    );
    expect(signed(refused)).toMatchObject({ status: 'False', reason: 'CertificateNotRequested' });
    expect(refused.configMap).toBeUndefined();

    // Issued: signed with the x5c chain, whatever the issuer controller has said so far.
    const ok = await planReconcile(
      input({ secrets, issued: { secretName: 'recipes-signing', enabled: true } }),
    );
    expect(signed(ok)).toMatchObject({ status: 'True', reason: 'Signed' });
    const card = JSON.parse(ok.configMap!.data!['agent-card.json']!) as {
      signatures: { protected: string }[];
    };
    const header = JSON.parse(Buffer.from(card.signatures[0]!.protected, 'base64url').toString()) as {
      x5c: string[];
      kid: string;
    };
    expect(header.kid).toBe('svid');
    expect(header.x5c).toHaveLength(2);
    expect(ok.status.signatures?.[0]?.certificate?.identities).toEqual([
      'spiffe://example.org/ns/team-a/sa/default',
    ]);

    // A certificate that names another identity (a template or service account changed, a hand
    // edit not yet undone) does not sign: the issuer controller says which identity it wants.
    const stale = await planReconcile(
      input({
        secrets,
        issued: {
          secretName: 'recipes-signing',
          enabled: true,
          state: {
            sign: true,
            reason: 'CertificatePending',
            message: 'issued',
            identity: 'spiffe://example.org/ns/team-a/sa/recipes',
          },
        },
      }),
    );
    expect(signed(stale)).toMatchObject({ status: 'False', reason: 'CertificatePending' });
    expect(signed(stale)!.message).toContain(
      "names spiffe://example.org/ns/team-a/sa/default, not only the card's identity spiffe://example.org/ns/team-a/sa/recipes",
    );
    expect(stale.configMap).toBeUndefined();
  });
});
