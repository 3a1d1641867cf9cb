/**
 * The cert-manager the trust tests run on: its real controllers, built from the release's module,
 * issue a certificate with a SPIFFE URI SAN from a CA Issuer they bootstrapped themselves, and
 * re-issue it on a manual renewal. If this file fails, the signing tests that name an issuer
 * cannot pass either, so its failure points at the harness rather than at the operator.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeConfig, useTestNamespace } from '../support/cluster.ts';
import {
  caIssuer,
  renewCertificate,
  startCertManager,
  waitForCertificateReady,
  type CaIssuer,
  type CertManager,
} from '../support/cert-manager.ts';

const ns = useTestNamespace('cert-manager');
const tmp = mkdtempSync(join(tmpdir(), 'agentcard-cert-manager-'));
let certManager: CertManager | undefined;
let issuer: CaIssuer;

beforeAll(async () => {
  certManager = await startCertManager({ namespace: ns.name, logFile: join(tmp, 'cert-manager.log') });
  issuer = await caIssuer(ns.name);
}, 1_800_000); // a cold build of the controller takes minutes

afterAll(async () => {
  await certManager?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

async function issuedLeaf(secretName: string): Promise<{ leaf: X509Certificate; chain: string }> {
  const secret = await kubeConfig()
    .makeApiClient(CoreV1Api)
    .readNamespacedSecret({ name: secretName, namespace: ns.name });
  const chain = Buffer.from(secret.data!['tls.crt']!, 'base64').toString();
  return { leaf: new X509Certificate(chain), chain };
}

describe('cert-manager on the test control plane', () => {
  it('issues a certificate with a SPIFFE URI SAN from the CA Issuer, and re-issues it on renewal', async () => {
    const identity = `spiffe://example.org/ns/${ns.name}/sa/agent`;
    await kubeConfig()
      .makeApiClient(CustomObjectsApi)
      .createNamespacedCustomObject({
        group: 'cert-manager.io',
        version: 'v1',
        namespace: ns.name,
        plural: 'certificates',
        body: {
          apiVersion: 'cert-manager.io/v1',
          kind: 'Certificate',
          metadata: { name: 'agent' },
          spec: {
            secretName: 'agent-signing',
            uris: [identity],
            usages: ['digital signature'],
            privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
            issuerRef: { name: issuer.name, kind: 'Issuer', group: 'cert-manager.io' },
          },
        },
      });
    const first = await waitForCertificateReady(ns.name, 'agent');
    const { leaf } = await issuedLeaf('agent-signing');
    expect(leaf.subjectAltName).toBe(`URI:${identity}`);
    expect(leaf.verify(new X509Certificate(issuer.caPem).publicKey)).toBe(true);

    await renewCertificate(ns.name, 'agent');
    await waitForCertificateReady(ns.name, 'agent', { revision: (first.revision ?? 1) + 1 });
    const renewed = await issuedLeaf('agent-signing');
    expect(renewed.leaf.serialNumber).not.toBe(leaf.serialNumber);
    expect(renewed.leaf.publicKey.export({ format: 'jwk' })).not.toEqual(
      leaf.publicKey.export({ format: 'jwk' }),
    );
  }, 120_000);
});
