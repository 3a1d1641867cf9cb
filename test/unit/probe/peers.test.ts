/**
 * probeInterface against real A2A peers (@a2a-js/sdk on all three bindings, 1.0 and 0.3) on
 * 127.0.0.1, with and without tenant and bearer auth, over plain HTTP and TLS.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAddressPolicy } from '../../../operator/probe/policy.ts';
import { RoundConnection } from '../../../operator/probe/http.ts';
import { probeInterface } from '../../../operator/probe/probe.ts';
import type { Resolver } from '../../../operator/probe/connect.ts';
import type { ProbeTarget } from '../../../operator/probe/types.ts';
import { type A2APeers, startA2APeers, startH2JsonRpcPeer } from '../../support/a2a-peers.ts';
import { type TestCa, createTestCa } from '../../support/tls-certs.ts';

const policy = createAddressPolicy({ allowCidrs: ['127.0.0.0/8'] });
const opts = { timeoutMs: 5000, policy };

let plain: A2APeers;
let authed: A2APeers;
const TOKEN = 'probe-test-token-1234';

beforeAll(async () => {
  [plain, authed] = await Promise.all([startA2APeers(), startA2APeers({ bearer: TOKEN })]);
});
afterAll(async () => {
  await Promise.all([plain?.close(), authed?.close()]);
});

function targets(p: A2APeers, tenant?: string): ProbeTarget[] {
  const t = tenant ? { tenant } : {};
  return [
    { url: p.jsonrpc, protocolBinding: 'JSONRPC', protocolVersion: '1.0', ...t },
    { url: p.rest, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0', ...t },
    { url: p.grpc, protocolBinding: 'GRPC', protocolVersion: '1.0', ...t },
    { url: p.grpcBare, protocolBinding: 'GRPC', protocolVersion: '1.0', ...t },
    { url: p.jsonrpc, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    { url: p.rest, protocolBinding: 'HTTP+JSON', protocolVersion: '0.3' },
    { url: p.grpc, protocolBinding: 'GRPC', protocolVersion: '0.3' },
  ];
}

const label = (t: ProbeTarget) =>
  `${t.protocolBinding} ${t.protocolVersion}${t.tenant ? ' tenant' : ''} ${t.url}`;

describe('real @a2a-js/sdk peers', () => {
  it('proves every binding at 1.0 and through the 0.3 compatibility layer', async () => {
    for (const target of targets(plain)) {
      const result = await probeInterface(target, opts);
      expect(result, label(target)).toMatchObject({ reachable: true, reason: 'Reachable', url: target.url });
      expect(result.latencyMs).toBeGreaterThanOrEqual(0);
      expect(result.phases.connectMs).toBeGreaterThanOrEqual(0);
      expect(result.phases.requestMs).toBeGreaterThanOrEqual(0);
      expect(result.tlsNotAfter).toBeUndefined();
    }
  });

  it('proves the 1.0 bindings with a tenant (JSON-RPC params, REST path prefix, gRPC field 1)', async () => {
    const before = plain.seen.length;
    for (const target of targets(plain, 'team-a').slice(0, 4)) {
      const result = await probeInterface(target, opts);
      expect(result, label(target)).toMatchObject({ reachable: true, reason: 'Reachable' });
    }
    const restPaths = plain.seen.slice(before).map((s) => s.path);
    expect(restPaths.some((p) => /^\/rest\/team-a\/tasks\/[0-9a-f-]{36}$/.test(p))).toBe(true);
  });

  it('uses a fresh random task id for every probe and sends no credentials unless given', async () => {
    const before = plain.seen.length;
    const target = targets(plain)[1]!;
    await probeInterface(target, opts);
    await probeInterface(target, opts);
    const seen = plain.seen.slice(before);
    expect(seen).toHaveLength(2);
    expect(seen[0]!.path).not.toBe(seen[1]!.path);
    expect(seen.every((s) => s.auth === undefined)).toBe(true);
  });

  it('reports Unauthenticated on every binding when the agent requires a token the probe lacks', async () => {
    for (const target of targets(authed)) {
      const result = await probeInterface(target, opts);
      expect(result, label(target)).toMatchObject({ reachable: false, reason: 'Unauthenticated' });
    }
  });

  it('proves every binding of an authenticated agent when given its bearer token', async () => {
    const headers = { Authorization: `Bearer ${TOKEN}` };
    const cleartextBare = (t: ProbeTarget) => t.url === authed.grpcBare;
    for (const target of [...targets(authed), ...targets(authed, 'team-b').slice(0, 4)].filter(
      (t) => !cleartextBare(t),
    )) {
      const result = await probeInterface(target, { ...opts, headers });
      expect(result, label(target)).toMatchObject({ reachable: true, reason: 'Reachable' });
      expect(result.message).not.toContain(TOKEN);
    }
  });

  it('does not send credentials in cleartext to a bare host:port that has no TLS', async () => {
    const headers = { Authorization: `Bearer ${TOKEN}` };
    const result = await probeInterface(
      { url: authed.grpcBare, protocolBinding: 'GRPC', protocolVersion: '1.0' },
      { ...opts, headers },
    );
    expect(result).toMatchObject({ reachable: false, reason: 'Unauthenticated' });
    // The peer accepts the token, so Unauthenticated proves it was not sent.
    expect(result.message).toMatch(/credentials withheld/);
    // With an explicit http:// the owner asked for cleartext, and gets it.
    const explicit = await probeInterface(
      { url: authed.grpc, protocolBinding: 'GRPC', protocolVersion: '1.0' },
      { ...opts, headers },
    );
    expect(explicit.reason).toBe('Reachable');
  });

  it('tells a binding declared at the wrong URL or version apart from a reachable one', async () => {
    const cases: [ProbeTarget, string][] = [
      // gRPC declared at the JSON-RPC URL: HTTP/1.1 server, no HTTP/2.
      [{ url: plain.jsonrpc, protocolBinding: 'GRPC', protocolVersion: '1.0' }, 'BindingMismatch'],
      // JSON-RPC declared at the gRPC port: an HTTP/2-only server.
      [{ url: plain.grpc, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }, 'BindingMismatch'],
      // HTTP+JSON declared at the JSON-RPC endpoint: Express' HTML 404.
      [{ url: plain.jsonrpc, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' }, 'BindingMismatch'],
      // JSON-RPC declared at the REST base URL.
      [{ url: plain.rest, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }, 'BindingMismatch'],
      // A version the agent does not serve.
      [{ url: plain.jsonrpc, protocolBinding: 'JSONRPC', protocolVersion: '1.1' }, 'VersionMismatch'],
      [{ url: plain.rest, protocolBinding: 'HTTP+JSON', protocolVersion: '1.1' }, 'VersionMismatch'],
      [{ url: plain.grpc, protocolBinding: 'GRPC', protocolVersion: '1.1' }, 'VersionMismatch'],
      // Not probeable at all.
      [{ url: plain.jsonrpc, protocolBinding: 'WEBSOCKET', protocolVersion: '1.0' }, 'Unsupported'],
      [{ url: plain.jsonrpc, protocolBinding: 'JSONRPC', protocolVersion: '2.0' }, 'Unsupported'],
    ];
    for (const [target, reason] of cases) {
      const result = await probeInterface(target, opts);
      expect(result, label(target)).toMatchObject({ reachable: false, reason });
    }
  });
});

describe('TLS peers', () => {
  let ca: TestCa;
  let good: A2APeers;
  let expired: A2APeers;
  let wrongName: A2APeers;
  const resolver: Resolver = async (host) => {
    if (host.endsWith('.test')) return [{ address: '127.0.0.1', family: 4 }];
    throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  };
  const expiredAt = new Date(Date.now() - 2 * 86_400_000);

  beforeAll(async () => {
    ca = await createTestCa();
    const [goodPem, expiredPem, otherPem] = await Promise.all([
      ca.issue({ dns: ['agent.test'] }),
      ca.issue({
        dns: ['agent.test'],
        notBefore: new Date(Date.now() - 10 * 86_400_000),
        notAfter: expiredAt,
      }),
      ca.issue({ dns: ['other.test'] }),
    ]);
    [good, expired, wrongName] = await Promise.all([
      startA2APeers({ tls: goodPem, host: 'agent.test' }),
      startA2APeers({ tls: expiredPem, host: 'agent.test' }),
      startA2APeers({ tls: otherPem, host: 'agent.test' }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([good?.close(), expired?.close(), wrongName?.close()]);
  });

  it('proves HTTPS and gRPC-over-TLS interfaces and reports the certificate notAfter', async () => {
    for (const target of targets(good)) {
      const result = await probeInterface(target, { ...opts, resolver, ca: ca.cert });
      expect(result, label(target)).toMatchObject({ reachable: true, reason: 'Reachable' });
      expect(Date.parse(result.tlsNotAfter!)).toBeGreaterThan(Date.now());
      expect(result.phases.tlsMs).toBeGreaterThanOrEqual(0);
      expect(result.phases.dnsMs).toBeGreaterThanOrEqual(0);
    }
  });

  it('reports the certificate of a round connection to every probe that uses it', async () => {
    const before = { connections: good.connections, seen: good.seen.length };
    const roundConnection = new RoundConnection();
    try {
      const [jsonRpc, rest] = targets(good).filter(
        (t) => t.protocolVersion === '1.0' && t.protocolBinding !== 'GRPC',
      );
      const first = await probeInterface(jsonRpc!, { ...opts, resolver, ca: ca.cert, roundConnection });
      const second = await probeInterface(rest!, { ...opts, resolver, ca: ca.cert, roundConnection });
      for (const result of [first, second])
        expect(result).toMatchObject({ reachable: true, reason: 'Reachable' });
      expect(second.phases.tlsMs).toBeUndefined(); // no handshake of its own
      expect(second.tlsNotAfter).toBe(first.tlsNotAfter);
      expect(Date.parse(second.tlsNotAfter!)).toBeGreaterThan(Date.now());
      expect(good.connections - before.connections).toBe(1);
      expect(good.seen.slice(before.seen).map((s) => s.connection)).toEqual([
        good.connections,
        good.connections,
      ]);
    } finally {
      roundConnection.close();
    }
  });

  it('speaks HTTP/2 to a TLS server that offers only h2 (ALPN)', async () => {
    const h2 = await startH2JsonRpcPeer(await ca.issue({ dns: ['agent.test'] }), 'agent.test');
    try {
      const target = { url: h2.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' };
      const result = await probeInterface(target, { ...opts, resolver, ca: ca.cert });
      expect(result).toMatchObject({ reachable: true, reason: 'Reachable' });
      // And an h2-only server is not mistaken for gRPC.
      const asGrpc = await probeInterface(
        { ...target, protocolBinding: 'GRPC' },
        { ...opts, resolver, ca: ca.cert },
      );
      expect(asGrpc).toMatchObject({ reachable: false, reason: 'BindingMismatch' });
    } finally {
      await h2.close();
    }
  });

  it('refuses an expired certificate with TLSError (expired) and its notAfter', async () => {
    for (const target of targets(expired).slice(0, 4)) {
      const result = await probeInterface(target, { ...opts, resolver, ca: ca.cert });
      expect(result, label(target)).toMatchObject({ reachable: false, reason: 'TLSError' });
      expect(result.message).toMatch(/expired/);
      expect(Math.abs(Date.parse(result.tlsNotAfter!) - expiredAt.getTime())).toBeLessThan(1000);
    }
  });

  it('refuses an unknown authority and a name mismatch, saying which', async () => {
    const unknown = await probeInterface(targets(good)[0]!, { ...opts, resolver });
    expect(unknown).toMatchObject({ reachable: false, reason: 'TLSError' });
    expect(unknown.message).toMatch(/unknown authority/);
    const mismatch = await probeInterface(targets(wrongName)[0]!, { ...opts, resolver, ca: ca.cert });
    expect(mismatch).toMatchObject({ reachable: false, reason: 'TLSError' });
    expect(mismatch.message).toMatch(/name mismatch/);
  });
});
