// A catalog that requires a trust policy (spec.trust), on the real control plane: AgentCards
// signed by the operator with their own keys, a JWKS and a trust bundle in ConfigMaps (as
// trust-manager distributes bundles), and the catalog listing only the cards that verify,
// counting and naming the others, with the signer on its page.
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
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

interface CatalogStatus {
  entries?: number;
  unverified?: number;
  skipped?: string[];
  conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
}

/** An AgentCard signed with a key of its own, labelled for the catalog of one case. */
async function card(name: string, kid: string, caseLabel: string) {
  const jwk = await generateSigningJwk('ES256', kid);
  await api.putSecret(ns.name, `${name}-key`, { jwk: JSON.stringify(jwk) }, true);
  await custom.createNamespacedCustomObject({
    ...G,
    plural: 'agentcards',
    namespace: ns.name,
    body: {
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'AgentCard',
      metadata: { name, namespace: ns.name, labels: { 'test.agentcard.dev/case': caseLabel } },
      spec: {
        card: sampleCard('1.0.0', { name: `Agent ${name}`, description: `The ${name} agent.` }),
        signing: { keys: [{ secretRef: { name: `${name}-key`, key: 'jwk' } }] },
      },
    },
  });
  return jwk;
}

/**
 * What one case works on, all named after it so that any case can run alone: two Ready
 * AgentCards (`<c>-trusted`, signed with kid team-k1, and `<c>-stranger`, kid other-k1), a
 * catalog named `<c>` that selects only those two (by label), and ConfigMap names for its trust
 * policy.
 */
interface Case {
  catalog: string;
  trusted: string;
  stranger: string;
  trustedJwk: Record<string, unknown>;
  keysConfigMap: string;
  caConfigMap: string;
  apply(trust: Record<string, unknown>): Promise<void>;
  status(): Promise<CatalogStatus>;
}

async function catalogCase(c: string, opts: { cards?: boolean } = {}): Promise<Case> {
  const trusted = `${c}-trusted`;
  const stranger = `${c}-stranger`;
  let trustedJwk: Record<string, unknown> = {};
  if (opts.cards !== false) {
    trustedJwk = publicPart(await card(trusted, 'team-k1', c)) as Record<string, unknown>;
    await card(stranger, 'other-k1', c);
    await waitFor('both AgentCards Ready', async () => {
      const cards = await Promise.all([trusted, stranger].map((n) => api.getCard(ns.name, n)));
      return cards.every((x) => x?.status?.conditions?.some((y) => y.type === 'Ready' && y.status === 'True'))
        ? true
        : undefined;
    });
  }
  return {
    catalog: c,
    trusted,
    stranger,
    trustedJwk,
    keysConfigMap: `${c}-team-keys`,
    caConfigMap: `${c}-workload-ca`,
    apply: (trust) => applyCatalog(c, trust),
    status: () => catalogStatus(c),
  };
}

async function putConfigMap(name: string, data: Record<string, string>) {
  await core.deleteNamespacedConfigMap({ namespace: ns.name, name }).catch(() => undefined);
  await core.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name }, data } });
}

async function applyCatalog(name: string, trust: Record<string, unknown>) {
  const body = {
    apiVersion: 'agentcard.dev/v1alpha1',
    kind: 'AgentCatalog',
    metadata: { name, namespace: ns.name },
    spec: {
      publisher: 'example.com',
      requireReady: true,
      selector: { matchLabels: { 'test.agentcard.dev/case': name } },
      trust,
    },
  };
  const existing = (await custom
    .getNamespacedCustomObject({ ...G, plural: 'agentcatalogs', namespace: ns.name, name })
    .catch(() => undefined)) as { metadata: { resourceVersion: string } } | undefined;
  if (existing) {
    await custom.replaceNamespacedCustomObject({
      ...G,
      plural: 'agentcatalogs',
      namespace: ns.name,
      name,
      body: { ...body, metadata: { ...body.metadata, resourceVersion: existing.metadata.resourceVersion } },
    });
  } else {
    await custom.createNamespacedCustomObject({ ...G, plural: 'agentcatalogs', namespace: ns.name, body });
  }
}

async function catalogStatus(name: string): Promise<CatalogStatus> {
  const obj = (await custom.getNamespacedCustomObject({
    ...G,
    plural: 'agentcatalogs',
    namespace: ns.name,
    name,
  })) as { status?: CatalogStatus };
  return obj.status ?? {};
}

const published = (s: CatalogStatus) => s.conditions?.find((c) => c.type === 'Published');

/** The trust policy of the first case: the JWKS that holds the trusted card's public key. */
async function trustByJwks(c: Case): Promise<CatalogStatus> {
  await putConfigMap(c.keysConfigMap, { 'jwks.json': JSON.stringify({ keys: [c.trustedJwk] }) });
  await c.apply({ jwks: { configMap: { name: c.keysConfigMap, key: 'jwks.json' } } });
  return waitFor('the catalog published with one verified entry', async () => {
    const s = await c.status();
    return s.entries === 1 && s.unverified === 1 ? s : undefined;
  });
}

describe('a catalog that requires a trust policy', () => {
  it('lists only the cards signed by a trusted key, counts and names the others, shows the signer', async () => {
    const c = await catalogCase('jwks');
    const status = await trustByJwks(c);
    expect(published(status)).toMatchObject({ status: 'True', reason: 'Published' });
    expect(published(status)!.message).toContain(
      '1 selected AgentCard(s) left out (1 not verified by spec.trust)',
    );
    expect(status.skipped).toEqual([
      `${ns.name}/${c.stranger}: signature not verified (kid other-k1: no trusted key with kid "other-k1" for ES256)`,
    ]);
    const cm = await api.getConfigMap(ns.name, `${c.catalog}-ai-catalog`);
    const doc = JSON.parse(cm!.data!['ai-catalog.json']!) as { entries: Array<{ identifier: string }> };
    expect(doc.entries.map((e) => e.identifier)).toEqual([`urn:air:example.com:${ns.name}:${c.trusted}`]);
    expect(cm!.data!['index.html']).toContain('signed by kid team-k1');
    expect(cm!.data!['index.html']).not.toContain(`Agent ${c.stranger}`);
  });

  it('a trust bundle that cannot be read keeps the last good catalog and says why', async () => {
    const c = await catalogCase('unreadable');
    await trustByJwks(c); // the last good catalog
    await c.apply({
      trustBundle: { configMap: { name: c.caConfigMap, key: 'ca.pem' } },
      identities: [`spiffe://example.org/ns/${ns.name}/*`],
      jwks: { configMap: { name: c.keysConfigMap, key: 'jwks.json' } },
    });
    const status = await waitFor('Published=False TrustPolicyUnavailable', async () => {
      const s = await c.status();
      return published(s)?.reason === 'TrustPolicyUnavailable' ? s : undefined;
    });
    expect(published(status)!.message).toBe(
      `spec.trust cannot be used: trust bundle ConfigMap ${c.caConfigMap} key ca.pem: ConfigMap ${ns.name}/${c.caConfigMap} not found; no card can be verified, the last good catalog stays published`,
    );
    expect(status.conditions?.find((x) => x.type === 'Ready')?.status).toBe('False');
    const cm = await api.getConfigMap(ns.name, `${c.catalog}-ai-catalog`);
    expect(cm!.data!['ai-catalog.json']).toContain(`urn:air:example.com:${ns.name}:${c.trusted}`);

    // trust-manager (or anyone) writes the bundle: the next resync picks it up. The operator's
    // cards carry no certificate chain, so the JWKS still decides.
    await putConfigMap(c.caConfigMap, { 'ca.pem': (await createRoot('workload CA')).pem });
    const fixed = await waitFor('Published again', async () => {
      const s = await c.status();
      return published(s)?.status === 'True' && s.entries === 1 ? s : undefined;
    });
    expect(fixed.unverified).toBe(1);
  });

  it('a trust bundle alone leaves out every card without a trusted certificate chain', async () => {
    const c = await catalogCase('bundle-only');
    await putConfigMap(c.caConfigMap, { 'ca.pem': (await createRoot('workload CA')).pem });
    await c.apply({
      trustBundle: { configMap: { name: c.caConfigMap, key: 'ca.pem' } },
      identities: [`spiffe://example.org/ns/${ns.name}/*`],
    });
    const status = await waitFor('no entry verified', async () => {
      const s = await c.status();
      return s.entries === 0 && s.unverified === 2 ? s : undefined;
    });
    expect(status.skipped).toContain(
      `${ns.name}/${c.trusted}: signature not verified (kid team-k1: no trusted key with kid "team-k1" for ES256)`,
    );
  });

  it('the controller refuses a misplaced wildcard in an identity pattern (Accepted=False)', async () => {
    // The CRD schema cannot express the pattern rules: the controller's zod schema reports them.
    // No card is needed: the pattern is refused before any card is looked at.
    const c = await catalogCase('wildcard', { cards: false });
    await c.apply({
      trustBundle: { configMap: { name: c.caConfigMap, key: 'ca.pem' } },
      identities: ['spiffe://example.org/*/x'],
    });
    const status = await waitFor('Accepted=False', async () => {
      const s = await c.status();
      const accepted = s.conditions?.find((x) => x.type === 'Accepted');
      return accepted?.status === 'False' ? accepted : undefined;
    });
    expect(status.message).toMatch(
      /spec\.trust\.identities\.0: identity pattern 'spiffe:\/\/example\.org\/\*\/x': '\*' is only allowed as the whole last path segment/,
    );
  });
});
