/** Small pure pieces: credential headers, the concurrency limiter, backoff delays, metric labels. */
import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { credentialHeaders, normalizeInterfaceUrl } from '../../../operator/probe/credentials.ts';
import { ProbeLimiter, hostKey } from '../../../operator/probe/limiter.ts';
import { bindingLabel, createProbeMetrics } from '../../../operator/probe/metrics.ts';
import { backoffRounds, roundDelayMs, settlingRetryMs } from '../../../operator/probe/scheduler.ts';
import type { ProbeResult } from '../../../operator/probe/types.ts';

describe('credentialHeaders', () => {
  const creds = [
    { url: 'https://a.example/rpc', type: 'bearer' as const, value: 'tok-a\n' },
    { url: 'https://a.example/rest', type: 'apiKey' as const, value: 'key-r' },
    { url: 'https://a.example/rest', type: 'apiKey' as const, headerName: 'X-Other', value: 'key-o' },
    { url: 'grpc.example:443', type: 'bearer' as const, value: 'tok-g' },
  ];

  it('gives each interface only its own credentials', () => {
    expect(credentialHeaders('https://a.example/rpc', creds)).toEqual({ Authorization: 'Bearer tok-a' });
    expect(credentialHeaders('https://A.example:443/rpc/', creds)).toEqual({ Authorization: 'Bearer tok-a' });
    expect(credentialHeaders('https://a.example/rest', creds)).toEqual({
      'X-API-Key': 'key-r',
      'X-Other': 'key-o',
    });
    expect(credentialHeaders('GRPC.example:443', creds)).toEqual({ Authorization: 'Bearer tok-g' });
  });

  it('never sends a credential to another origin or path', () => {
    for (const url of [
      'http://a.example/rpc', // other scheme
      'https://a.example:8443/rpc', // other port
      'https://b.example/rpc', // other host
      'https://a.example/rpc/x', // other path on the same origin
      'https://a.example.evil/rpc',
      'https://grpc.example', // https://grpc.example:443 is not the bare grpc.example:443 entry
    ]) {
      expect(credentialHeaders(url, creds), url).toBeUndefined();
    }
  });

  it('rejects unusable values and names without echoing the value', () => {
    const bad = [{ url: 'https://x/', type: 'bearer' as const, value: 'hunter\n2' }];
    expect(() => credentialHeaders('https://x/', bad)).toThrow(/line break/);
    expect(() => credentialHeaders('https://x/', bad)).not.toThrow(/hunter/);
    const badName = [{ url: 'https://x/', type: 'apiKey' as const, headerName: 'X Key', value: 'v' }];
    expect(() => credentialHeaders('https://x/', badName)).toThrow(/'X Key' is not a valid header name/);
    const empty = [{ url: 'https://x/', type: 'apiKey' as const, value: '  ' }];
    expect(() => credentialHeaders('https://x/', empty)).toThrow(/empty/);
  });

  it('normalizes URLs for comparison', () => {
    expect(normalizeInterfaceUrl('HTTPS://Host.Example/a/')).toBe('https://host.example:443/a');
    expect(normalizeInterfaceUrl('http://h:80')).toBe('http://h:80');
    expect(normalizeInterfaceUrl('h.example:50051')).toBe('bare://h.example:50051');
  });
});

describe('ProbeLimiter', () => {
  const tick = () => new Promise((r) => setTimeout(r, 1));

  it('keeps global and per-host limits and serves every task', async () => {
    const limiter = new ProbeLimiter({ global: 3, perHost: 2 });
    let active = 0;
    let maxActive = 0;
    const perHost = new Map<string, number>();
    let maxPerHost = 0;
    const order: string[] = [];
    const task = (host: string, id: string) =>
      limiter.run(host, async () => {
        active++;
        perHost.set(host, (perHost.get(host) ?? 0) + 1);
        maxActive = Math.max(maxActive, active);
        maxPerHost = Math.max(maxPerHost, perHost.get(host)!);
        order.push(id);
        await tick();
        active--;
        perHost.set(host, perHost.get(host)! - 1);
        return id;
      });
    const hosts = ['a', 'a', 'a', 'a', 'a', 'b', 'c', 'b'];
    const results = await Promise.all(hosts.map((h, i) => task(h, `${h}${i}`)));
    expect(results).toEqual(hosts.map((h, i) => `${h}${i}`));
    expect(maxActive).toBe(3);
    expect(maxPerHost).toBe(2);
    // Host b got a turn before host a's queue was drained.
    expect(order.indexOf('b5')).toBeLessThan(order.indexOf('a4'));
    expect(limiter.active).toBe(0);
    expect(limiter.waiting).toBe(0);
  });

  it('releases the slot when a task throws', async () => {
    const limiter = new ProbeLimiter({ global: 1, perHost: 1 });
    await expect(limiter.run('a', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(limiter.run('a', async () => 'ok')).resolves.toBe('ok');
  });

  it('rejects nonsense limits and names hosts from URLs', () => {
    expect(() => new ProbeLimiter({ global: 0, perHost: 1 })).toThrow(/at least 1/);
    expect(hostKey('https://A.example:8443/x')).toBe('a.example');
    expect(hostKey('grpc.example:50051')).toBe('grpc.example');
    expect(hostKey('http://[::1]:80/')).toBe('[::1]');
  });
});

describe('round timing', () => {
  it('spreads first rounds over [0.5, 1.5] x interval and jitters later ones by +-10%', () => {
    expect(roundDelayMs(60_000, 0, true)).toBe(30_000);
    expect(roundDelayMs(60_000, 1, true)).toBe(90_000);
    expect(roundDelayMs(60_000, 0, false)).toBe(54_000);
    expect(roundDelayMs(60_000, 1, false)).toBe(66_000);
    expect(roundDelayMs(60_000, 0.5, false)).toBe(60_000);
  });

  it('retries a key that has not answered after 5, 10, 20, 40 s, while sooner than the planned round', () => {
    expect([0, 1, 2, 3].map((r) => settlingRetryMs(r, 60_000, 0.5))).toEqual([5_000, 10_000, 20_000, 40_000]);
    expect(settlingRetryMs(4, 60_000, 0.5)).toBeUndefined(); // 80 s: the interval's round comes first
    expect(settlingRetryMs(0, 60_000, 0)).toBe(4_500);
    expect(settlingRetryMs(0, 60_000, 1)).toBe(5_500);
    expect(settlingRetryMs(0, 5_000, 0.5)).toBeUndefined(); // a short interval needs no retry
    expect(settlingRetryMs(1, 10_000, 0.5)).toBeUndefined();
  });

  it('backs failures off to 1, 2, 4, then every 8 rounds, within maxBackoffMs', () => {
    expect([0, 1, 2, 3, 4, 5, 20].map((f) => backoffRounds(f, 60_000))).toEqual([0, 0, 1, 3, 7, 7, 7]);
    expect(backoffRounds(4, 60_000, 240_000)).toBe(3); // at most 4 minutes apart
    expect(backoffRounds(4, 60_000, 1000)).toBe(0); // a cap below the interval still probes each round
    expect(backoffRounds(4, 10_000)).toBe(7);
  });
});

describe('probe metrics', () => {
  const result = (reachable: boolean, extra: Partial<ProbeResult> = {}): ProbeResult => ({
    url: 'https://secret-host.example/rpc?token=abc',
    protocolBinding: 'JSONRPC',
    protocolVersion: '1.0',
    reachable,
    reason: reachable ? 'Reachable' : 'Timeout',
    message: '',
    latencyMs: 5,
    phases: { dnsMs: 1, connectMs: 2, tlsMs: 3, requestMs: 4 },
    ...extra,
  });

  it('records success, phases, reasons and notAfter with bounded labels', async () => {
    const registry = new Registry();
    const metrics = createProbeMetrics(registry);
    const card = { namespace: 'ns', name: 'card' };
    metrics.record(card, 0, result(true, { tlsNotAfter: '2030-01-01T00:00:00.000Z' }));
    metrics.record(card, 1, result(false, { protocolBinding: 'my-custom-thing:v9' }));
    const text = await registry.metrics();
    expect(text).toContain(
      'agentcard_probe_success{namespace="ns",name="card",interface="0",binding="JSONRPC"} 1',
    );
    expect(text).toContain(
      'agentcard_probe_success{namespace="ns",name="card",interface="1",binding="custom"} 0',
    );
    expect(text).toContain('agentcard_probes_total{binding="JSONRPC",reason="Reachable"} 1');
    expect(text).toContain('agentcard_probes_total{binding="custom",reason="Timeout"} 1');
    expect(text).toContain(
      'agentcard_probe_tls_not_after_seconds{namespace="ns",name="card",interface="0"} 1893456000',
    );
    for (const phase of ['dns', 'connect', 'tls', 'request']) {
      expect(text).toContain(`agentcard_probe_duration_seconds_count{binding="JSONRPC",phase="${phase}"} 1`);
    }
    expect(text).not.toContain('secret-host');
    expect(text).not.toContain('my-custom-thing');
  });

  it('drops an interface’s certificate series once it answers without TLS, and keeps others', async () => {
    const registry = new Registry();
    const metrics = createProbeMetrics(registry);
    const card = { namespace: 'ns', name: 'card' };
    const tls = { tlsNotAfter: '2030-01-01T00:00:00.000Z' };
    metrics.record(card, 0, result(true, tls));
    metrics.record(card, 1, result(true, tls));
    metrics.record(card, 0, result(false));
    const text = await registry.metrics();
    expect(text).not.toContain(
      'agentcard_probe_tls_not_after_seconds{namespace="ns",name="card",interface="0"}',
    );
    expect(text).toContain(
      'agentcard_probe_tls_not_after_seconds{namespace="ns",name="card",interface="1"} 1893456000',
    );
    // And back once it presents a certificate again.
    metrics.record(card, 0, result(true, tls));
    expect(await registry.metrics()).toContain(
      'agentcard_probe_tls_not_after_seconds{namespace="ns",name="card",interface="0"} 1893456000',
    );
  });

  it('drops a card’s series on forget, and the old binding series when a binding changes', async () => {
    const registry = new Registry();
    const metrics = createProbeMetrics(registry);
    const card = { namespace: 'ns', name: 'card' };
    metrics.record(card, 0, result(true));
    metrics.record(card, 0, result(true, { protocolBinding: 'GRPC' }));
    metrics.record(card, 1, result(true, { tlsNotAfter: '2030-01-01T00:00:00.000Z' }));
    let text = await registry.metrics();
    expect(text).not.toContain('interface="0",binding="JSONRPC"');
    expect(text).toContain('interface="0",binding="GRPC"');
    metrics.forget(card, 1);
    text = await registry.metrics();
    expect(text).toContain('interface="0",binding="GRPC"');
    expect(text).not.toContain('interface="1"');
    // Another card, whose name starts with this one's, keeps its series.
    const other = { namespace: 'ns', name: 'card-2' };
    metrics.record(other, 1, result(true));
    metrics.forget(card);
    text = await registry.metrics();
    expect(text).not.toContain('name="card",');
    expect(text).toContain(
      'agentcard_probe_success{namespace="ns",name="card-2",interface="1",binding="JSONRPC"} 1',
    );
    // Recorded again after a forget: the series come back.
    metrics.record(card, 0, result(false));
    expect(await registry.metrics()).toContain(
      'agentcard_probe_success{namespace="ns",name="card",interface="0",binding="JSONRPC"} 0',
    );
    expect(bindingLabel('HTTP+JSON')).toBe('HTTP+JSON');
  });
});
