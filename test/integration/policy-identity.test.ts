// Issue #35's "Done when" on the real API server, with cert-manager's real controllers and a CA
// Issuer: a ClusterAgentPolicy requires a signature by spiffe://example.org/ns/{namespace}/* and
// https interfaces.
// - Enforce: an http card is refused at `kubectl apply` with the rule's message (the generated
//   ValidatingAdmissionPolicy); a card signed with a certificate the CA issued for another
//   namespace's identity (a Certificate a namespace user may request from a shared issuer,
//   docs/security.md) is never published, and its PolicyCompliant condition names the rule; a
//   card whose identity the operator requested (issuerRef) is published; a self-signed
//   certificate claiming the namespace's own identity proves none, and is held too.
// - Audit: the held card is published, and so is a new one signed for another namespace; only
//   the condition, an Event and the violations metric say they fail.
// What the other policy files prove (every admission detail, the hold keeping the last good
// card, catalogs) is not repeated. The policy is narrowed to this file's namespace.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { configMapName } from '../../operator/api/names.ts';
import {
  caIssuer,
  startCertManager,
  waitForCertificateReady,
  type CertManager,
} from '../support/cert-manager.ts';
import { kubeconfigPath } from '../support/cluster.ts';
import {
  agentCard,
  condition,
  installPolicyCrds,
  metricValue,
  operatorMetrics,
  sampleCard,
  useOperatorInNamespace,
  waitFor,
} from '../support/operator.ts';
import { createRoot, issueLeaf, keyPem } from '../support/signing-certs.ts';
import { runTool } from '../support/tools.ts';
import { useClusterLock } from '../support/cluster-lock.ts';

// Beside any file but the others of its family: see vitest.config.ts.
useClusterLock('cluster-policies');

const tmp = mkdtempSync(join(tmpdir(), 'agentcard-policy-identity-'));
let certManager: CertManager | undefined;
const ISSUER = 'test-ca';

const { kc, api, ns, op } = useOperatorInNamespace('policy-id', {
  flags: ['--policies', '--cluster-policies', '--cert-manager', '--trust-domain', 'example.org'],
  before: async () => {
    await installPolicyCrds(kc);
    certManager = await startCertManager({ namespace: ns.name, logFile: join(tmp, 'cert-manager.log') });
    await caIssuer(ns.name, { name: ISSUER });
  },
  after: async () => {
    await custom
      .deleteClusterCustomObject({ ...GROUP, plural: 'clusteragentpolicies', name: policyName() })
      .catch(() => undefined);
    await certManager?.stop();
    rmSync(tmp, { recursive: true, force: true });
  },
});
const custom = kc.makeApiClient(CustomObjectsApi);
const GROUP = { group: 'agentcard.dev', version: 'v1alpha1' };
const OWN = 'Cards are signed by a workload identity of their own namespace';
const HTTPS = 'Every A2A interface must use https';

const policyName = () => `pi-${ns.name}`.slice(0, 63);
const policy = (mode: string) => ({
  apiVersion: 'agentcard.dev/v1alpha1',
  kind: 'ClusterAgentPolicy',
  metadata: { name: policyName() },
  spec: {
    mode,
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns.name } },
    rules: [
      {
        name: 'own-namespace',
        message: OWN,
        trust: { signerIdentities: ['spiffe://example.org/ns/{namespace}/*'] },
      },
      { name: 'https-only', message: HTTPS, content: { allowedSchemes: ['https'] } },
    ],
  },
});
const apply = (obj: unknown) =>
  runTool('kubectl', ['apply', '--server-side', '-f', '-'], {
    kubeconfig: kubeconfigPath(),
    input: JSON.stringify(obj),
  });

async function ready(): Promise<void> {
  await waitFor('the policy to be Ready for its generation', async () => {
    const p = (await custom.getClusterCustomObject({
      ...GROUP,
      plural: 'clusteragentpolicies',
      name: policyName(),
    })) as {
      metadata: { generation: number };
      status?: { observedGeneration?: number; conditions?: Array<{ type: string; status: string }> };
    };
    return p.status?.observedGeneration === p.metadata.generation &&
      p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
      ? true
      : undefined;
  });
}

const issuerRef = { keys: [{ issuerRef: { name: ISSUER } }] };
const card = (name: string, signing: unknown, url = `https://${name}.example.com/a2a`) =>
  agentCard(ns.name, name, {
    card: sampleCard('1.0.0', {
      supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    }),
    signing,
  });

describe('a ClusterAgentPolicy on signer identity and https', () => {
  it('Enforce refuses and holds; Audit only reports', async () => {
    // A certificate of the namespace's CA for another namespace's identity.
    const foreignIdentity = `spiffe://example.org/ns/${ns.name}-other/sa/default`;
    await custom.createNamespacedCustomObject({
      group: 'cert-manager.io',
      version: 'v1',
      namespace: ns.name,
      plural: 'certificates',
      body: {
        apiVersion: 'cert-manager.io/v1',
        kind: 'Certificate',
        metadata: { name: 'foreign' },
        spec: {
          secretName: 'foreign-tls',
          uris: [foreignIdentity],
          usages: ['digital signature'],
          privateKey: { algorithm: 'ECDSA', size: 256 },
          issuerRef: { name: ISSUER, kind: 'Issuer', group: 'cert-manager.io' },
        },
      },
    });
    expect((await apply(policy('Enforce'))).code).toBe(0);
    await ready();

    // At admission: the API server's plugin loads the generated policy within seconds.
    // A new name each try: a card admitted before the policy loaded would be an unchanged update.
    let tries = 0;
    const refused = await waitFor('the http card to be refused', async () => {
      const r = await apply(card(`plain-${tries++}`, issuerRef, 'http://plain.example.com/a2a'));
      return r.code !== 0 ? r : undefined;
    });
    expect(refused.stderr).toContain(
      `spec.card.supportedInterfaces[0].url: ${HTTPS} (ClusterAgentPolicy ${policyName()}, rule https-only)`,
    );

    // A Secret the namespace user wrote: a self-signed CA's leaf claiming the namespace's own
    // identity, without ca.crt. It signs, but proves no identity.
    const self = await createRoot('self');
    const claimed = await issueLeaf(self, { uri: `spiffe://example.org/ns/${ns.name}/sa/default` });
    await api.core.createNamespacedSecret({
      namespace: ns.name,
      body: {
        metadata: { name: 'claimed-tls' },
        type: 'kubernetes.io/tls',
        stringData: { 'tls.crt': claimed.cert.toString('pem'), 'tls.key': await keyPem(claimed.keys) },
      },
    });
    expect(
      (await apply(card('claimed', { keys: [{ certificate: { secretName: 'claimed-tls' } }] }))).code,
    ).toBe(0);

    await waitForCertificateReady(ns.name, 'foreign');
    expect(
      (await apply(card('foreign', { keys: [{ certificate: { secretName: 'foreign-tls' } }] }))).code,
    ).toBe(0);
    expect((await apply(card('own', issuerRef))).code).toBe(0);

    const own = await waitFor(
      'the own-namespace card to be published',
      async () => {
        const c = await api.getCard(ns.name, 'own');
        return condition(c, 'Published')?.status === 'True' ? c : undefined;
      },
      60_000,
    );
    expect(condition(own, 'PolicyCompliant')).toMatchObject({ status: 'True', reason: 'Compliant' });
    expect(await api.getConfigMap(ns.name, configMapName('own'))).toBeDefined();

    const held = await waitFor('the foreign-signed card to be held', async () => {
      const c = await api.getCard(ns.name, 'foreign');
      return condition(c, 'PolicyCompliant')?.reason === 'PolicyEnforced' ? c : undefined;
    });
    expect(condition(held, 'Signed')?.status).toBe('True');
    expect(condition(held, 'Published')).toMatchObject({ status: 'False', reason: 'PolicyViolation' });
    const enforced = condition(held, 'PolicyCompliant')!.message;
    expect(enforced).toContain(`ClusterAgentPolicy ${policyName()}, rule own-namespace (Enforce): ${OWN}`);
    expect(enforced).toContain(`signed by "${foreignIdentity}"`);
    expect(await api.getConfigMap(ns.name, configMapName('foreign'))).toBeUndefined();
    const unproven = await waitFor('the card with an unproven identity to be held', async () => {
      const c = await api.getCard(ns.name, 'claimed');
      return condition(c, 'PolicyCompliant')?.reason === 'PolicyEnforced' ? c : undefined;
    });
    expect(condition(unproven, 'Signed')?.status).toBe('True');
    expect(condition(unproven, 'PolicyCompliant')!.message).toContain(
      'signed by no verified certificate identity',
    );
    expect(await api.getConfigMap(ns.name, configMapName('claimed'))).toBeUndefined();

    // Audit: only the policy's mode changes. The held card is published, and a new card signed
    // for another namespace is published at once, with its own Event.
    expect((await apply(policy('Audit'))).code).toBe(0);
    await ready();
    const foreignKey = { keys: [{ certificate: { secretName: 'foreign-tls' } }] };
    expect((await apply(card('foreign-audit', foreignKey))).code).toBe(0);
    for (const name of ['foreign', 'foreign-audit']) {
      const published = await waitFor(`${name} published under Audit`, async () => {
        const c = await api.getCard(ns.name, name);
        return condition(c, 'Published')?.status === 'True' ? c : undefined;
      });
      expect(await api.getConfigMap(ns.name, configMapName(name))).toBeDefined();
      expect(condition(published, 'PolicyCompliant')).toMatchObject({
        status: 'False',
        reason: 'PolicyViolation',
      });
      expect(condition(published, 'PolicyCompliant')!.message).toContain('rule own-namespace (Audit)');
    }
    const event = await waitFor('a PolicyViolation Event on the new card', async () =>
      (await api.events(ns.name, 'foreign-audit')).find((e) => e.reason === 'PolicyViolation'),
    );
    expect(event.type).toBe('Warning');
    expect(event.message).toContain(`rule own-namespace (Audit): ${OWN}`);
    const labels = { kind: 'ClusterAgentPolicy', namespace: '', policy: policyName(), rule: 'own-namespace' };
    await waitFor(
      'the violations metric to count the cards',
      async () =>
        // The two cards signed for another namespace, and the one whose identity is not proven.
        metricValue(await operatorMetrics(op.metricsPort()), 'agentcard_policy_violations', labels) === 3,
    );
    // The http card is admitted now: Audit adds no refusal.
    expect((await apply(card('plain-audit', issuerRef, 'http://plain.example.com/a2a'))).code).toBe(0);
  }, 180_000);
});
