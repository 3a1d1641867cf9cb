/**
 * The operator trusts the CA bundle of --probe-ca-file (the Helm value probes.caBundle mounts a
 * ConfigMap's key there): an AgentCard whose https interface has a certificate of a private CA
 * reaches Ready=True, on the real control plane, against a real TLS A2A peer.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startA2APeers, type A2APeers } from '../support/a2a-peers.ts';
import { condition, sampleCard, useOperatorInNamespace, waitFor } from '../support/operator.ts';
import { createTestCa } from '../support/tls-certs.ts';

let peers: A2APeers;
const work = mkdtempSync(join(tmpdir(), 'agentcard-probe-ca-'));
const bundle = join(work, 'ca.crt');

const { api, ns } = useOperatorInNamespace('probe-ca', {
  probes: true,
  flags: ['--probe-ca-file', bundle],
  before: async () => {
    const ca = await createTestCa('internal CA');
    writeFileSync(bundle, ca.cert);
    peers = await startA2APeers({ tls: await ca.issue({ ips: ['127.0.0.1'] }) });
  },
  after: async () => {
    await peers?.close();
    rmSync(work, { recursive: true, force: true });
  },
});

describe('--probe-ca-file', () => {
  it('an https interface signed by the private CA is reachable, and the card Ready', async () => {
    await api.createCard(ns.name, 'private-ca', {
      card: sampleCard('1.0.0', {
        supportedInterfaces: [{ url: peers.jsonrpc, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      }),
    });
    const card = await waitFor('probed', async () => {
      const live = await api.getCard(ns.name, 'private-ca');
      const c = condition(live, 'InterfacesReachable');
      return c && c.status !== 'Unknown' ? live : undefined;
    });
    expect(condition(card, 'InterfacesReachable')).toMatchObject({ status: 'True' });
    expect((card.status as { interfaces: unknown[] }).interfaces[0]).toMatchObject({
      reachable: true,
      tlsNotAfter: expect.any(String),
    });
    await waitFor(
      'Ready',
      async () => condition(await api.getCard(ns.name, 'private-ca'), 'Ready')?.status === 'True',
    );
  }, 60_000);
});
