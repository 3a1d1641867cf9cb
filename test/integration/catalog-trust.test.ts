// A catalog that requires a trust policy (spec.trust), on the real control plane: AgentCards
// signed by the operator with their own keys, a JWKS and a trust bundle in ConfigMaps (as
// trust-manager distributes bundles), and the catalog listing only the cards that verify,
// counting and naming the others, with the signer on its page.
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateSigningJwk } from '../../operator/card/keygen.ts';
import { publicPart } from '../../operator/card/verify.ts';
import { sampleCard, useOperatorInNamespace, waitFor } from '../support/operator.ts';
import { createRoot } from '../support/x5c-signer.ts';

const { kc, api, ns } = useOperatorInNamespace('cat-trust', {
  catalogs: true,
  flags: ['--resync', '2s'],
});
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const G = { group: 'agentcard.dev', version: 'v1alpha1' };

let trustedJwk: Record<string, unknown>;

interface CatalogStatus {
  entries?: number;
  unverified?: number;
  skipped?: string[];
  conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
}

async function card(name: string, kid: string) {
  const jwk = await generateSigningJwk('ES256', kid);
  await api.putSecret(ns.name, `${name}-key`, { jwk: JSON.stringify(jwk) }, true);
  await custom.createNamespacedCustomObject({
    ...G,
    plural: 'agentcards',
    namespace: ns.name,
    body: {
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'AgentCard',
      metadata: { name, namespace: ns.name },
      spec: {
        card: sampleCard('1.0.0', { name: `Agent ${name}`, description: `The ${name} agent.` }),
        signing: { keys: [{ secretRef: { name: `${name}-key`, key: 'jwk' } }] },
      },
    },
  });
  return jwk;
}

async function putConfigMap(name: string, data: Record<string, string>) {
  await core.deleteNamespacedConfigMap({ namespace: ns.name, name }).catch(() => undefined);
  await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name }, data } });
}

async function applyCatalog(trust: Record<string, unknown>) {
  const body = {
    apiVersion: 'agentcard.dev/v1alpha1',
    kind: 'AgentCatalog',
    metadata: { name: 'verified', namespace: ns.name },
    spec: { publisher: 'example.com', requireReady: true, trust },
  };
  const existing = (await custom
    .getNamespacedCustomObject({ ...G, plural: 'agentcatalogs', namespace: ns.name, name: 'verified' })
    .catch(() => undefined)) as { metadata: { resourceVersion: string } } | undefined;
  if (existing) {
    await custom.replaceNamespacedCustomObject({
      ...G,
      plural: 'agentcatalogs',
      namespace: ns.name,
      name: 'verified',
      body: { ...body, metadata: { ...body.metadata, resourceVersion: existing.metadata.resourceVersion } },
    });
  } else {
    await custom.createNamespacedCustomObject({ ...G, plural: 'agentcatalogs', namespace: ns.name, body });
  }
}

async function catalogStatus(): Promise<CatalogStatus> {
  const obj = (await custom.getNamespacedCustomObject({
    ...G,
    plural: 'agentcatalogs',
    namespace: ns.name,
    name: 'verified',
  })) as { status?: CatalogStatus };
  return obj.status ?? {};
}

const published = (s: CatalogStatus) => s.conditions?.find((c) => c.type === 'Published');

beforeAll(async () => {
  trustedJwk = publicPart(await card('trusted', 'team-k1')) as Record<string, unknown>;
  await card('stranger', 'other-k1');
  await waitFor('both AgentCards Ready', async () => {
    const cards = await Promise.all(['trusted', 'stranger'].map((n) => api.getCard(ns.name, n)));
    return cards.every((c) => c?.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'))
      ? true
      : undefined;
  });
}, 180_000);

describe('a catalog that requires a trust policy', () => {
  it('lists only the cards signed by a trusted key, counts and names the others, shows the signer', async () => {
    await putConfigMap('team-keys', { 'jwks.json': JSON.stringify({ keys: [trustedJwk] }) });
    await applyCatalog({ jwks: { configMap: { name: 'team-keys', key: 'jwks.json' } } });
    const status = await waitFor('the catalog published with one verified entry', async () => {
      const s = await catalogStatus();
      return s.entries === 1 && s.unverified === 1 ? s : undefined;
    });
    expect(published(status)).toMatchObject({ status: 'True', reason: 'Published' });
    expect(published(status)!.message).toContain(
      '1 selected AgentCard(s) left out (1 not verified by spec.trust)',
    );
    expect(status.skipped).toEqual([
      `${ns.name}/stranger: signature not verified (kid other-k1: no trusted key with kid "other-k1" for ES256)`,
    ]);
    const cm = await api.getConfigMap(ns.name, 'verified-ai-catalog');
    const doc = JSON.parse(cm!.data!['ai-catalog.json']!) as { entries: Array<{ identifier: string }> };
    expect(doc.entries.map((e) => e.identifier)).toEqual([`urn:air:example.com:${ns.name}:trusted`]);
    expect(cm!.data!['index.html']).toContain('signed by kid team-k1');
    expect(cm!.data!['index.html']).not.toContain('Agent stranger');
  });

  it('a trust bundle that cannot be read keeps the last good catalog and says why', async () => {
    await applyCatalog({
      trustBundle: { configMap: { name: 'workload-ca', key: 'ca.pem' } },
      identities: [`spiffe://example.org/ns/${ns.name}/*`],
      jwks: { configMap: { name: 'team-keys', key: 'jwks.json' } },
    });
    const status = await waitFor('Published=False TrustPolicyUnavailable', async () => {
      const s = await catalogStatus();
      return published(s)?.reason === 'TrustPolicyUnavailable' ? s : undefined;
    });
    expect(published(status)!.message).toBe(
      `spec.trust cannot be used: trust bundle ConfigMap workload-ca key ca.pem: ConfigMap ${ns.name}/workload-ca not found; no card can be verified, the last good catalog stays published`,
    );
    expect(status.conditions?.find((c) => c.type === 'Ready')?.status).toBe('False');
    const cm = await api.getConfigMap(ns.name, 'verified-ai-catalog');
    expect(cm!.data!['ai-catalog.json']).toContain(`urn:air:example.com:${ns.name}:trusted`);

    // trust-manager (or anyone) writes the bundle: the next resync picks it up. The operator's
    // cards carry no certificate chain, so the JWKS still decides.
    await putConfigMap('workload-ca', { 'ca.pem': (await createRoot('workload CA')).pem });
    const fixed = await waitFor('Published again', async () => {
      const s = await catalogStatus();
      return published(s)?.status === 'True' && s.entries === 1 ? s : undefined;
    });
    expect(fixed.unverified).toBe(1);
  });

  it('a trust bundle alone leaves out every card without a trusted certificate chain', async () => {
    await applyCatalog({
      trustBundle: { configMap: { name: 'workload-ca', key: 'ca.pem' } },
      identities: [`spiffe://example.org/ns/${ns.name}/*`],
    });
    const status = await waitFor('no entry verified', async () => {
      const s = await catalogStatus();
      return s.entries === 0 && s.unverified === 2 ? s : undefined;
    });
    expect(status.skipped).toContain(
      `${ns.name}/trusted: signature not verified (kid team-k1: no trusted key with kid "team-k1" for ES256)`,
    );
  });

  it('the controller refuses a misplaced wildcard in an identity pattern (Accepted=False)', async () => {
    // The CRD schema cannot express the pattern rules: the controller's zod schema reports them.
    await applyCatalog({
      trustBundle: { configMap: { name: 'workload-ca', key: 'ca.pem' } },
      identities: ['spiffe://example.org/*/x'],
    });
    const status = await waitFor('Accepted=False', async () => {
      const s = await catalogStatus();
      const accepted = s.conditions?.find((c) => c.type === 'Accepted');
      return accepted?.status === 'False' ? accepted : undefined;
    });
    expect(status.message).toMatch(
      /spec\.trust\.identities\.0: identity pattern 'spiffe:\/\/example\.org\/\*\/x': '\*' is only allowed as the whole last path segment/,
    );
  });
});
