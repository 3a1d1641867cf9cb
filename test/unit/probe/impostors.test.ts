/**
 * Servers that answer but are not the declared A2A binding must never be called Reachable, and
 * hostile ones (silent, endless, redirecting, resolving to metadata addresses) must cost the
 * probe a bounded amount of time and memory and no request to where they point.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Resolver } from '../../../operator/probe/connect.ts';
import { createAddressPolicy } from '../../../operator/probe/policy.ts';
import { probeInterface } from '../../../operator/probe/probe.ts';
import type { ProbeTarget } from '../../../operator/probe/types.ts';
import { type A2APeers, startA2APeers } from '../../support/a2a-peers.ts';
import * as impostors from '../../support/impostors.ts';
import type { Impostor } from '../../support/impostors.ts';
import { createTestCa, selfSignedCert } from '../../support/tls-certs.ts';

/** Resolves once `done` holds (checked on every turn of the event loop; no fixed sleep). */
async function waitUntil(done: () => boolean, limitMs = 5_000): Promise<void> {
  const until = performance.now() + limitMs;
  while (!done()) {
    if (performance.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

const policy = createAddressPolicy({ allowCidrs: ['127.0.0.0/8'] });
const opts = { timeoutMs: 3000, policy };
const started: { close(): Promise<void> }[] = [];
let agent: A2APeers;

async function start(p: Promise<Impostor>): Promise<Impostor> {
  const impostor = await p;
  started.push(impostor);
  return impostor;
}

beforeAll(async () => {
  agent = await startA2APeers();
  started.push(agent);
});
afterAll(async () => {
  await Promise.all(started.map((s) => s.close()));
});

const httpTargets = (url: string): ProbeTarget[] => [
  { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
  { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
  { url, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
  { url, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', tenant: 't' },
  { url, protocolBinding: 'HTTP+JSON', protocolVersion: '0.3' },
];

describe('impostors', () => {
  it('a server answering 200 {} to everything is not any binding', async () => {
    const server = await start(impostors.okToEverything());
    for (const target of httpTargets(server.url)) {
      const result = await probeInterface(target, opts);
      expect(result, `${target.protocolBinding} ${target.protocolVersion}`).toMatchObject({
        reachable: false,
        reason: 'BindingMismatch',
      });
    }
    expect(server.hits).toBe(5);
  });

  it('a plain 404 server is not HTTP+JSON (nor JSON-RPC)', async () => {
    const server = await start(impostors.plainNotFound());
    for (const target of httpTargets(server.url)) {
      const result = await probeInterface(target, opts);
      expect(result).toMatchObject({ reachable: false, reason: 'BindingMismatch' });
      if (target.protocolBinding === 'HTTP+JSON') expect(result.message).toMatch(/^HTTP 404/);
    }
  });

  it('a JSON-RPC server that is not A2A is BindingMismatch, and so is an answer to another id', async () => {
    const other = await start(impostors.nonA2AJsonRpc());
    for (const version of ['1.0', '0.3']) {
      const result = await probeInterface(
        { url: other.url, protocolBinding: 'JSONRPC', protocolVersion: version },
        opts,
      );
      expect(result).toMatchObject({ reachable: false, reason: 'BindingMismatch' });
      expect(result.message).toMatch(/-32601/);
    }
    const wrongId = await start(impostors.nonA2AJsonRpc('wrong-id'));
    const result = await probeInterface(
      { url: wrongId.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      opts,
    );
    expect(result).toMatchObject({ reachable: false, reason: 'BindingMismatch' });
    expect(result.message).toMatch(/another id/);
  });

  it('a gRPC server with another service is not A2A gRPC (UNIMPLEMENTED)', async () => {
    const server = await start(impostors.otherGrpcService());
    for (const version of ['1.0', '0.3']) {
      const result = await probeInterface(
        { url: server.url, protocolBinding: 'GRPC', protocolVersion: version },
        opts,
      );
      expect(result).toMatchObject({ reachable: false, reason: 'BindingMismatch' });
      expect(result.message).toMatch(/UNIMPLEMENTED/);
    }
    expect(server.hits).toBe(0);
  });

  it('a redirect to a real agent is not followed', async () => {
    const before = agent.seen.length;
    for (const [binding, url] of [
      ['JSONRPC', agent.jsonrpc],
      ['HTTP+JSON', agent.rest],
    ] as const) {
      const redirect = await start(impostors.redirectTo(url));
      const result = await probeInterface(
        { url: redirect.url + new URL(url).pathname, protocolBinding: binding, protocolVersion: '1.0' },
        opts,
      );
      expect(result).toMatchObject({ reachable: false, reason: 'HTTPError' });
      expect(result.message).toMatch(/307 redirect/);
      expect(redirect.hits).toBe(1);
    }
    expect(agent.seen.length).toBe(before);
  });

  it('a server that never answers times out within the deadline, on HTTP and gRPC', async () => {
    const tcp = await start(impostors.silent());
    const h2 = await start(impostors.silentGrpc());
    const cases: ProbeTarget[] = [
      { url: tcp.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: tcp.url, protocolBinding: 'GRPC', protocolVersion: '1.0' },
      { url: h2.url, protocolBinding: 'GRPC', protocolVersion: '1.0' },
    ];
    for (const target of cases) {
      const start = performance.now();
      const result = await probeInterface(target, { ...opts, timeoutMs: 400 });
      const took = performance.now() - start;
      expect(result, target.url).toMatchObject({ reachable: false, reason: 'Timeout' });
      expect(took).toBeGreaterThanOrEqual(350);
      expect(took).toBeLessThan(2500);
    }
    // The probe hangs up: no connection is left open on the silent servers.
    await waitUntil(() => tcp.closedConnections === tcp.hits && h2.closedConnections === h2.hits);
  });

  it('an endless body is cut at the 64 KiB cap and the connection closed', async () => {
    const server = await start(impostors.endlessBody());
    const result = await probeInterface(
      { url: server.url, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
      opts,
    );
    expect(result).toMatchObject({ reachable: false, reason: 'BindingMismatch' });
    expect(result.message).toMatch(/64 KiB cap/);
    await waitUntil(() => server.closedConnections === 1);
    // What was sent before the hang-up is bounded by the cap plus socket buffers, not endless.
    expect(server.bytesSent).toBeLessThan(16 * 1024 * 1024);
  });

  it('headers trickled a byte at a time never complete: Timeout at the deadline, connection closed', async () => {
    const server = await start(impostors.trickleHeaders());
    const began = performance.now();
    const result = await probeInterface(
      { url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { ...opts, timeoutMs: 1_000 },
    );
    const took = performance.now() - began;
    expect(result).toMatchObject({ reachable: false, reason: 'Timeout' });
    expect(took).toBeLessThan(3_000); // the probe's deadline, not the trickle, decides
    await waitUntil(() => server.closedConnections === server.hits);
  });

  it('a compressed bomb is not inflated: the probe reads at most its cap of compressed bytes', async () => {
    const server = await start(impostors.compressedBomb());
    const heapBefore = process.memoryUsage().arrayBuffers;
    const result = await probeInterface(
      { url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      opts,
    );
    // The gzip bytes are not a JSON-RPC answer; nothing near 1 GiB was ever held.
    expect(result).toMatchObject({ reachable: false, reason: 'BindingMismatch' });
    expect(process.memoryUsage().arrayBuffers - heapBefore).toBeLessThan(64 * 1024 * 1024);
    await waitUntil(() => server.closedConnections === server.hits);
  });

  it('an HTTP/0.9 answer (a body without a status line) is not HTTP/1.1', async () => {
    const server = await start(impostors.http09());
    for (const protocolBinding of ['JSONRPC', 'HTTP+JSON']) {
      const result = await probeInterface({ url: server.url, protocolBinding, protocolVersion: '1.0' }, opts);
      expect(result, protocolBinding).toMatchObject({ reachable: false, reason: 'BindingMismatch' });
      expect(result.message, protocolBinding).toMatch(/not HTTP\/1\.1 \(HPE_/);
    }
  });

  it('a self-signed certificate is refused as an unknown authority, even next to a trusted CA', async () => {
    const ca = await createTestCa();
    const server = await start(impostors.selfSignedTls(await selfSignedCert({ ips: ['127.0.0.1'] })));
    for (const extra of [{}, { ca: ca.cert }]) {
      const result = await probeInterface(
        { url: server.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { ...opts, ...extra },
      );
      expect(result).toMatchObject({ reachable: false, reason: 'TLSError' });
      expect(result.message).toMatch(
        /unknown authority \((DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN)\)/,
      );
    }
    expect(server.hits).toBe(0); // no request went over the untrusted connection
  });

  it('a name resolving to 169.254.169.254 is Blocked before any connection', async () => {
    const metadata: Resolver = async () => [{ address: '169.254.169.254', family: 4 }];
    const everything = createAddressPolicy({ allowCidrs: ['0.0.0.0/0', '::/0'] });
    for (const target of httpTargets('http://metadata.attacker.test/').concat({
      url: 'metadata.attacker.test:80',
      protocolBinding: 'GRPC',
      protocolVersion: '1.0',
    })) {
      const result = await probeInterface(target, { ...opts, policy: everything, resolver: metadata });
      expect(result).toMatchObject({ reachable: false, reason: 'Blocked' });
      expect(result.message).toMatch(
        /metadata\.attacker\.test resolves to 169\.254\.169\.254.*always refused/,
      );
      expect(result.phases.connectMs).toBeUndefined();
    }
    // IPv4-mapped IPv6 and the AWS IPv6 metadata address are refused the same way.
    for (const address of ['::ffff:169.254.169.254', 'fd00:ec2::254']) {
      const resolver: Resolver = async () => [{ address, family: 6 }];
      const result = await probeInterface(httpTargets('http://md.test/')[0]!, {
        ...opts,
        policy: everything,
        resolver,
      });
      expect(result, address).toMatchObject({ reachable: false, reason: 'Blocked' });
      expect(result.phases.connectMs).toBeUndefined();
    }
  });

  it('a name with a refused and an allowed address is only ever connected at the allowed one', async () => {
    const port = new URL(agent.jsonrpc).port;
    const resolver: Resolver = async () => [
      { address: '169.254.169.254', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ];
    const result = await probeInterface(
      { url: `http://agent.test:${port}/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { ...opts, resolver },
    );
    expect(result).toMatchObject({ reachable: true, reason: 'Reachable' });
  });

  it('loopback is refused unless an allowed CIDR covers it, whatever the name', async () => {
    const strict = createAddressPolicy();
    const direct = await probeInterface(httpTargets(agent.jsonrpc)[0]!, { ...opts, policy: strict });
    expect(direct).toMatchObject({ reachable: false, reason: 'Blocked' });
    const viaName = await probeInterface(
      {
        url: agent.jsonrpc.replace('127.0.0.1', 'localhost'),
        protocolBinding: 'JSONRPC',
        protocolVersion: '1.0',
      },
      { ...opts, policy: strict },
    );
    expect(viaName).toMatchObject({ reachable: false, reason: 'Blocked' });
    expect(viaName.message).toMatch(/localhost resolves to .*loopback/);
  });

  it('DNS failure and refused connections have their own reasons', async () => {
    const nx: Resolver = async () => {
      throw Object.assign(new Error('nx'), { code: 'ENOTFOUND' });
    };
    const dns = await probeInterface(httpTargets('http://nowhere.test/')[0]!, { ...opts, resolver: nx });
    expect(dns).toMatchObject({ reachable: false, reason: 'DNSFailed' });
    const closed = await start(impostors.okToEverything());
    await closed.close();
    const refused = await probeInterface(httpTargets(closed.url)[0]!, opts);
    expect(refused).toMatchObject({ reachable: false, reason: 'ConnectionFailed' });
  });
});
