import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { bundleProblem, renewBundle, serviceHosts } from '../../../operator/webhook/certs.ts';

const hosts = [...serviceHosts('agentcard-webhook', 'agentcard-system'), '127.0.0.1'];
const DAY = 86_400_000;

describe('webhook certificates', () => {
  it('creates a CA and a serving certificate for the Service names and IPs', async () => {
    const now = new Date();
    const { bundle, changed } = await renewBundle({}, hosts, now);
    expect(changed).toBe(true);
    const ca = new X509Certificate(bundle.caCert);
    const cert = new X509Certificate(bundle.cert);
    expect(ca.ca).toBe(true);
    expect(cert.ca).toBe(false);
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.checkHost('agentcard-webhook.agentcard-system.svc')).toBe(
      'agentcard-webhook.agentcard-system.svc',
    );
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(cert.checkHost('other.example')).toBeUndefined();
    expect(bundle.caBundle).toBe(bundle.caCert);
    expect(bundleProblem(bundle, hosts, now)).toBeUndefined();
    // A good bundle is kept as it is.
    expect((await renewBundle(bundle, hosts, now)).changed).toBe(false);
  });

  it('renews the serving certificate with the same CA before it expires', async () => {
    const now = new Date();
    const { bundle } = await renewBundle({}, hosts, now);
    const later = new Date(now.getTime() + 250 * DAY); // past two thirds of 365 days
    expect(bundleProblem(bundle, hosts, later)).toBe('serving');
    const renewed = (await renewBundle(bundle, hosts, later)).bundle;
    expect(renewed.caCert).toBe(bundle.caCert);
    expect(renewed.cert).not.toBe(bundle.cert);
    expect(new X509Certificate(renewed.cert).verify(new X509Certificate(bundle.caCert).publicKey)).toBe(true);
    expect(bundleProblem(renewed, hosts, later)).toBeUndefined();
  });

  it('rotates the CA before it expires and trusts both CAs during the change', async () => {
    const now = new Date();
    const { bundle } = await renewBundle({}, hosts, now);
    const later = new Date(now.getTime() + 2500 * DAY);
    expect(bundleProblem(bundle, hosts, later)).toBe('ca');
    const rotated = (await renewBundle(bundle, hosts, later)).bundle;
    expect(rotated.caCert).not.toBe(bundle.caCert);
    expect(rotated.caBundle).toBe(rotated.caCert + bundle.caCert);
  });

  it('reissues when the names change or the key does not match, and rebuilds from garbage', async () => {
    const now = new Date();
    const { bundle } = await renewBundle({}, hosts, now);
    expect(bundleProblem(bundle, [...hosts, 'new.example'], now)).toBe('serving');
    const other = (await renewBundle({}, hosts, now)).bundle;
    expect(bundleProblem({ ...bundle, key: other.key }, hosts, now)).toBe('serving');
    expect(bundleProblem({ ...bundle, cert: other.cert }, hosts, now)).toBe('serving');
    expect(bundleProblem({ ...bundle, caKey: other.caKey }, hosts, now)).toBe('ca');
    expect(bundleProblem({ caCert: 'not a pem', caKey: 'x' }, hosts, now)).toBe('ca');
  });
});
