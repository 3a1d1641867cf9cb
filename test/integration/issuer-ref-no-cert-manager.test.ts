/**
 * spec.signing.keys[].issuerRef on a cluster without cert-manager, on a private control plane
 * (the shared one has cert-manager's CRDs installed by other files): the operator started with
 * --cert-manager keeps running and reconciling, the card says CertificateNotRequested and is not
 * published unsigned, a JWKS-signed card beside it is published; once the CRDs are installed, the
 * operator requests the Certificate without a restart.
 */
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlPlaneInstance } from '../controlplane/instance.ts';
import { installCertManagerCrds } from '../support/cert-manager.ts';
import { testNamespace } from '../support/cluster.ts';
import {
  Api,
  condition,
  installCrd,
  privateJwk,
  sampleCard,
  startOperator,
  waitFor,
  type InProcessOperator,
} from '../support/operator.ts';

let instance: ControlPlaneInstance;
let kc: KubeConfig;
let api: Api;
let op: InProcessOperator | undefined;
let ns: ReturnType<typeof testNamespace>;

beforeAll(async () => {
  instance = await ControlPlaneInstance.start((line) =>
    process.stderr.write(`[private control plane] ${line}\n`),
  );
  kc = new KubeConfig();
  kc.loadFromFile(instance.kubeconfig);
  await installCrd(kc);
  api = new Api(kc);
  ns = testNamespace('no-cert-manager', kc);
  await ns.create();
  op = await startOperator(ns.name, ['--cert-manager', '--trust-domain', 'example.org'], {
    kubeconfig: instance.kubeconfig,
  });
}, 600_000);

afterAll(async () => {
  await op?.stop();
  await instance?.destroy();
});

describe('issuerRef without cert-manager', () => {
  it('the API server refuses a key with two kinds, and two issuerRef keys (CEL)', async () => {
    const refused = async (keys: unknown[]) => {
      try {
        await api.createCard(ns.name, 'bad', { card: sampleCard(), signing: { keys } });
      } catch (err) {
        return String((err as { body?: unknown }).body ?? err);
      }
      throw new Error('the API server accepted it');
    };
    expect(await refused([{ issuerRef: { name: 'ca' }, certificate: { secretName: 'x' } }])).toContain(
      'set exactly one of secretRef, certificate and issuerRef',
    );
    expect(await refused([{ issuerRef: { name: 'a' } }, { issuerRef: { name: 'b' } }])).toContain(
      'at most one key may name an issuerRef',
    );
  });

  it('says CertificateNotRequested, publishes nothing unsigned, and keeps the operator working', async () => {
    await api.createCard(ns.name, 'recipes', {
      card: sampleCard(),
      signing: { keys: [{ issuerRef: { name: 'ca' } }] },
    });
    await api.putSecret(ns.name, 'key', { jwk: await privateJwk('k1') }, true);
    await api.createCard(ns.name, 'weather', {
      card: sampleCard(),
      signing: { keys: [{ secretRef: { name: 'key', key: 'jwk' } }] },
    });
    const signed = await waitFor('CertificateNotRequested', async () => {
      const s = condition(await api.getCard(ns.name, 'recipes'), 'Signed');
      return s?.reason === 'CertificateNotRequested' ? s : undefined;
    });
    expect(signed.status).toBe('False');
    expect(signed.message).toContain("cert-manager's Certificate API is not served in this cluster");
    expect(await api.getConfigMap(ns.name, 'recipes-agent-card')).toBeUndefined();
    // The rest of the operator works: the JWKS card is signed and published.
    await waitFor(
      'the JWKS card published',
      async () => (await api.getConfigMap(ns.name, 'weather-agent-card'))?.data,
    );
  }, 120_000);

  it('requests the Certificate once cert-manager is installed, without a restart', async () => {
    await installCertManagerCrds(instance.kubeconfig);
    const custom = kc.makeApiClient(CustomObjectsApi);
    // Looked for again every 30 s.
    const cert = await waitFor(
      'the Certificate created',
      async () =>
        (await custom.getNamespacedCustomObject({
          group: 'cert-manager.io',
          version: 'v1',
          plural: 'certificates',
          namespace: ns.name,
          name: 'recipes-signing',
        })) as { spec: { uris: string[] } },
      90_000,
    );
    expect(cert.spec.uris).toEqual([`spiffe://example.org/ns/${ns.name}/sa/default`]);
    const signed = await waitFor('CertificatePending', async () => {
      const s = condition(await api.getCard(ns.name, 'recipes'), 'Signed');
      return s?.reason === 'CertificatePending' ? s : undefined;
    });
    expect(signed.message).toContain('Certificate "recipes-signing"');
  }, 150_000);
});
