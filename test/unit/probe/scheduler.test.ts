/**
 * ProbeScheduler against real @a2a-js/sdk peers on 127.0.0.1, with short intervals (the 10 s
 * minimum is a spec validation rule; the scheduler itself takes any interval).
 */
import { createServer, connect, type AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { credentialHeaders } from '../../../operator/probe/credentials.ts';
import { createAddressPolicy } from '../../../operator/probe/policy.ts';
import { httpOrigin } from '../../../operator/probe/calls.ts';
import { ProbeScheduler, roundGroups } from '../../../operator/probe/scheduler.ts';
import {
  nextInterfacesStatus,
  type InterfaceStatus,
  type Condition,
} from '../../../operator/probe/status.ts';
import type { ProbeResult, ProbeTarget } from '../../../operator/probe/types.ts';
import { type A2APeers, startA2APeers } from '../../support/a2a-peers.ts';
import { type Impostor, silent } from '../../support/impostors.ts';

const policy = createAddressPolicy({ allowCidrs: ['127.0.0.0/8'] });
let peers: A2APeers;
let authed: A2APeers;
let hang: Impostor;
let scheduler: ProbeScheduler | undefined;

beforeAll(async () => {
  [peers, authed, hang] = await Promise.all([startA2APeers(), startA2APeers({ bearer: 'tkn' }), silent()]);
});
afterEach(async () => {
  await scheduler?.stop();
  scheduler = undefined;
});
afterAll(async () => {
  await Promise.all([peers?.close(), authed?.close(), hang?.close()]);
});

/** Collects onResults calls per key and lets a test wait for the n-th one. */
function collector() {
  const calls = new Map<string, ProbeResult[][]>();
  const waiters: { key: string; n: number; resolve: () => void }[] = [];
  return {
    calls,
    onResults(key: string, results: ProbeResult[]) {
      const list = calls.get(key) ?? [];
      list.push(results.map((r) => ({ ...r })));
      calls.set(key, list);
      for (const w of waiters.filter((w) => w.key === key && list.length >= w.n)) w.resolve();
    },
    until(key: string, n: number, timeoutMs = 10_000): Promise<void> {
      if ((calls.get(key)?.length ?? 0) >= n) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`${key}: ${n} rounds not reached`)), timeoutMs);
        waiters.push({ key, n, resolve: () => (clearTimeout(t), resolve()) });
      });
    },
  };
}

/** Resolves once `check` holds (polled on each turn of the event loop, at most 5 s). */
async function waitUntil(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not reached in ${timeoutMs} ms: ${check.toString()}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const ifaces = (p: A2APeers): ProbeTarget[] => [
  { url: p.jsonrpc, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
  { url: p.rest, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
  { url: p.grpc, protocolBinding: 'GRPC', protocolVersion: '1.0' },
];

describe('ProbeScheduler', () => {
  it('probes a new key at once, then again on its interval, with full ordered results and metrics', async () => {
    const c = collector();
    const registry = new Registry();
    scheduler = new ProbeScheduler({ policy, onResults: c.onResults, registry });
    const started = Date.now();
    scheduler.upsert('ns/card', { interfaces: ifaces(peers), intervalMs: 300, timeoutMs: 2000 });
    await c.until('ns/card', 1);
    expect(Date.now() - started).toBeLessThan(1500);
    await c.until('ns/card', 3);
    const rounds = c.calls.get('ns/card')!;
    for (const results of rounds) {
      expect(results.map((r) => r.protocolBinding)).toEqual(['JSONRPC', 'HTTP+JSON', 'GRPC']);
      expect(results.every((r) => r.reason === 'Reachable')).toBe(true);
    }
    const text = await registry.metrics();
    for (const i of [0, 1, 2])
      expect(text).toMatch(
        new RegExp(`agentcard_probe_success\\{namespace="ns",name="card",interface="${i}".*\\} 1`),
      );
    expect(text).toMatch(/agentcard_probes_total\{binding="GRPC",reason="Reachable"\} [3-9]/);
    expect(scheduler.stats()).toMatchObject({ keys: 1, interfaces: 3 });
  });

  it('re-probes at once on a spec change and keeps the schedule on an identical upsert', async () => {
    const c = collector();
    scheduler = new ProbeScheduler({ policy, onResults: c.onResults });
    const config = { interfaces: ifaces(peers).slice(0, 1), intervalMs: 60_000, timeoutMs: 2000 };
    scheduler.upsert('ns/a', config);
    await c.until('ns/a', 1);
    // The next round is planned at least half an interval away (see roundDelayMs).
    const due = scheduler.nextRoundAt('ns/a')!;
    expect(due).toBeGreaterThan(Date.now() + 20_000);
    scheduler.upsert('ns/a', { ...config, interfaces: [...config.interfaces] }); // same spec
    expect(scheduler.nextRoundAt('ns/a')).toBe(due); // the schedule is kept, not restarted
    scheduler.upsert('ns/a', { ...config, interfaces: ifaces(peers) }); // changed spec
    expect(scheduler.nextRoundAt('ns/a')).toBeLessThanOrEqual(Date.now()); // at once
    await c.until('ns/a', 2, 1500);
    expect(c.calls.get('ns/a')![1]).toHaveLength(3);
    scheduler.upsert('ns/a', { ...config, interfaces: ifaces(peers), revision: 'secret-v2' });
    await c.until('ns/a', 3, 1500);
  });

  it('retries a card whose agent was not up yet after 5 s, not a whole interval, then settles', async () => {
    // The agent's port refuses connections until `up`, then forwards to a real peer.
    let up = false;
    const upstream = new URL(peers.jsonrpc);
    const gate = createServer((socket) => {
      if (!up) return void socket.resetAndDestroy();
      const agent = connect(Number(upstream.port), upstream.hostname);
      socket.pipe(agent).pipe(socket);
      agent.on('error', () => socket.destroy());
      socket.on('error', () => agent.destroy());
    });
    await new Promise<void>((r) => gate.listen(0, '127.0.0.1', r));
    try {
      const c = collector();
      scheduler = new ProbeScheduler({ policy, onResults: c.onResults, random: () => 0.5 });
      const url = `http://127.0.0.1:${(gate.address() as AddressInfo).port}${upstream.pathname}`;
      scheduler.upsert('ns/late', {
        interfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
        intervalMs: 60_000,
        timeoutMs: 2000,
      });
      await c.until('ns/late', 1);
      const firstAt = Date.now();
      expect(c.calls.get('ns/late')![0]![0]!.reachable).toBe(false);
      up = true;
      await c.until('ns/late', 2, 10_000);
      expect(Date.now() - firstAt).toBeGreaterThan(4_000);
      expect(c.calls.get('ns/late')![1]![0]!.reason).toBe('Reachable');
      // Every interface has answered: the next round is the interval's again.
      expect(scheduler.nextRoundAt('ns/late')!).toBeGreaterThan(Date.now() + 50_000);
    } finally {
      gate.close();
    }
  });

  it('sends credentials only to the interface they belong to', async () => {
    const c = collector();
    scheduler = new ProbeScheduler({ policy, onResults: c.onResults });
    const creds = [{ url: authed.jsonrpc, type: 'bearer' as const, value: 'tkn' }];
    const before = authed.seen.length;
    scheduler.upsert('ns/auth', {
      interfaces: [
        { url: authed.jsonrpc, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url: authed.rest, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
      ],
      intervalMs: 60_000,
      timeoutMs: 2000,
      headersFor: (url) => credentialHeaders(url, creds),
    });
    await c.until('ns/auth', 1);
    expect(c.calls.get('ns/auth')![0]!.map((r) => r.reason)).toEqual(['Reachable', 'Unauthenticated']);
    const seen = authed.seen.slice(before);
    expect(seen.find((s) => s.path.startsWith('/jsonrpc'))!.auth).toBe('Bearer tkn');
    expect(seen.find((s) => s.path.startsWith('/rest'))!.auth).toBeUndefined();
  });

  it('reports unusable credentials as Unauthenticated without sending the probe', async () => {
    const c = collector();
    scheduler = new ProbeScheduler({ policy, onResults: c.onResults });
    const before = authed.seen.length;
    scheduler.upsert('ns/badcred', {
      interfaces: [{ url: authed.jsonrpc, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      intervalMs: 60_000,
      timeoutMs: 2000,
      headersFor: (url) => credentialHeaders(url, [{ url, type: 'bearer', value: 'two\nlines' }]),
    });
    await c.until('ns/badcred', 1);
    const [result] = c.calls.get('ns/badcred')![0]!;
    expect(result).toMatchObject({ reachable: false, reason: 'Unauthenticated' });
    expect(result!.message).toMatch(/credentials not usable: .*line break/);
    expect(result!.message).not.toContain('two');
    expect(authed.seen.length).toBe(before);
  });

  it('backs off a failing interface while healthy ones keep their interval', async () => {
    const c = collector();
    const registry = new Registry();
    scheduler = new ProbeScheduler({ policy, onResults: c.onResults, registry, random: () => 0.5 });
    scheduler.upsert('ns/mixed', {
      interfaces: [
        { url: peers.jsonrpc, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url: 'http://127.0.0.1:1/', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url: peers.jsonrpc, protocolBinding: 'CUSTOM', protocolVersion: '1.0' },
      ],
      intervalMs: 100,
      timeoutMs: 1000,
    });
    await c.until('ns/mixed', 12);
    scheduler.remove('ns/mixed');
    expect(
      c.calls
        .get('ns/mixed')!
        .at(-1)!
        .map((r) => r.reason),
    ).toEqual(['Reachable', 'ConnectionFailed', 'Unsupported']);
    const count = async (binding: string, reason: string) => {
      const metric = await registry.getSingleMetric('agentcard_probes_total')!.get();
      return (
        metric.values.find((v) => v.labels.binding === binding && v.labels.reason === reason)?.value ?? 0
      );
    };
    // In 12 rounds: healthy probed in each; failing in rounds 1, 2, 4 and 8; Unsupported once.
    expect(await count('JSONRPC', 'Reachable')).toBe(12);
    expect(await count('JSONRPC', 'ConnectionFailed')).toBe(4);
    expect(await count('custom', 'Unsupported')).toBe(1);
  });

  it('times out a silent interface, and drops results of a removed key', async () => {
    const c = collector();
    scheduler = new ProbeScheduler({ policy, onResults: c.onResults });
    scheduler.upsert('ns/hang', {
      interfaces: [{ url: hang.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      intervalMs: 60_000,
      timeoutMs: 300,
    });
    await c.until('ns/hang', 1);
    expect(c.calls.get('ns/hang')![0]![0]!.reason).toBe('Timeout');
    scheduler.upsert('ns/gone', {
      interfaces: [{ url: hang.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      intervalMs: 60_000,
      timeoutMs: 2000,
    });
    // Removed while its probe waits on the silent server: the probe is cancelled, and its round
    // ends (the limiter's slot is free again) without reporting.
    await waitUntil(() => scheduler!.stats().active === 1);
    scheduler.remove('ns/gone');
    await waitUntil(() => scheduler!.stats().active === 0);
    await new Promise((r) => setImmediate(r)); // the rest of the round is promise callbacks
    expect(c.calls.has('ns/gone')).toBe(false);
    expect(scheduler.has('ns/gone')).toBe(false);
  });

  it('respects the global concurrency limit', async () => {
    const c = collector();
    scheduler = new ProbeScheduler({
      policy,
      onResults: c.onResults,
      globalConcurrency: 2,
      perHostConcurrency: 2,
    });
    const keys = Array.from({ length: 6 }, (_, i) => `ns/h${i}`);
    for (const key of keys) {
      scheduler.upsert(key, {
        interfaces: [{ url: hang.url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
        intervalMs: 60_000,
        timeoutMs: 250,
      });
    }
    await new Promise((r) => setTimeout(r, 100));
    expect(scheduler.stats()).toMatchObject({ active: 2, waiting: 4 });
    await Promise.all(keys.map((k) => c.until(k, 1, 5000)));
  });

  it('with nextInterfacesStatus, steady healthy rounds need no API writes', async () => {
    const c = collector();
    let status: { interfaces?: InterfaceStatus[]; condition?: Condition } = {};
    let writes = 0;
    let rounds = 0;
    scheduler = new ProbeScheduler({
      policy,
      onResults: (key, results) => {
        rounds++;
        const out = nextInterfacesStatus({
          previous: status.interfaces,
          previousCondition: status.condition,
          results,
          now: new Date(),
          generation: 1,
        });
        if (out.writeNeeded) {
          writes++;
          status = { interfaces: out.interfaces, condition: out.condition };
        }
        c.onResults(key, results);
      },
    });
    scheduler.upsert('ns/steady', { interfaces: ifaces(peers), intervalMs: 100, timeoutMs: 2000 });
    await c.until('ns/steady', 6);
    expect(rounds).toBeGreaterThanOrEqual(6);
    expect(writes).toBe(1);
    expect(status.condition).toMatchObject({ status: 'True', message: '3/3 reachable' });
  });
});

describe('roundGroups', () => {
  const t = (url: string, protocolBinding: string): ProbeTarget => ({
    url,
    protocolBinding,
    protocolVersion: '1.0',
  });

  it('puts the HTTP interfaces of one origin together, and everything else alone', () => {
    const targets = [
      t('https://agent.example.com/a2a', 'JSONRPC'),
      t('https://agent.example.com:443/rest', 'HTTP+JSON'),
      t('https://agent.example.com:443', 'GRPC'),
      t('http://agent.example.com/rest', 'HTTP+JSON'), // another scheme and port
      t('https://AGENT.example.com/v03', 'JSONRPC'), // host names compare without case
      t('https://agent.example.com:8443/rest', 'HTTP+JSON'), // another port
      t('not a url', 'JSONRPC'),
      t('https://agent.example.com/other', 'SLIMRPC'), // not a binding the probe asks
    ];
    expect(roundGroups(targets.map(httpOrigin), [0, 1, 2, 3, 4, 5, 6, 7])).toEqual([
      [0, 1, 4],
      [2],
      [3],
      [5],
      [6],
      [7],
    ]);
    // Only the due interfaces, in the order given.
    expect(roundGroups(targets.map(httpOrigin), [1, 2, 4])).toEqual([[1, 4], [2]]);
    expect(roundGroups(targets.map(httpOrigin), [])).toEqual([]);
  });

  it('tells IPv6 literals apart by port', () => {
    const targets = [
      t('http://[::1]:80/a', 'JSONRPC'),
      t('http://[::1]/b', 'HTTP+JSON'),
      t('http://[::1]:8080/c', 'JSONRPC'),
    ];
    expect(roundGroups(targets.map(httpOrigin), [0, 1, 2])).toEqual([[0, 1], [2]]);
  });
});

describe('ProbeScheduler connections', () => {
  /** The requests `p` saw since `from`, as [path, connection number]. */
  const requests = (p: A2APeers, from: number) => p.seen.slice(from).map((s) => [s.path, s.connection]);

  it("probes a round's JSON-RPC and HTTP+JSON interfaces of one origin on one new connection", async () => {
    const own = await startA2APeers();
    try {
      const c = collector();
      scheduler = new ProbeScheduler({ policy, onResults: c.onResults, random: () => 0.5 });
      scheduler.upsert('ns/card', { interfaces: ifaces(own), intervalMs: 300, timeoutMs: 2000 });
      await c.until('ns/card', 1);
      expect(c.calls.get('ns/card')![0]!.map((r) => r.reason)).toEqual([
        'Reachable',
        'Reachable',
        'Reachable',
      ]);
      expect(own.connections).toBe(1);
      expect(requests(own, 0)).toEqual([
        ['/jsonrpc', 1],
        [expect.stringMatching(/^\/rest\/tasks\//), 1],
      ]);
      const [jsonRpc, rest] = c.calls.get('ns/card')![0]!;
      expect(jsonRpc!.phases.connectMs).toBeGreaterThanOrEqual(0);
      expect(rest!.phases.connectMs).toBeUndefined(); // it had no connection of its own to open
      expect(rest!.phases.requestMs).toBeGreaterThanOrEqual(0);
      // The next round opens a connection of its own: none is kept between rounds.
      await c.until('ns/card', 2);
      expect(own.connections).toBe(2);
      expect(requests(own, 2).map(([, connection]) => connection)).toEqual([2, 2]);
    } finally {
      await own.close();
    }
  });

  it('fails the next round of a server that stopped accepting new connections', async () => {
    // A kept connection would still be open on this server's side for a minute, and answer.
    const own = await startA2APeers({ keepAliveTimeoutMs: 60_000 });
    try {
      const c = collector();
      scheduler = new ProbeScheduler({ policy, onResults: c.onResults, random: () => 0.5 });
      const interfaces = ifaces(own).slice(0, 2);
      scheduler.upsert('ns/card', { interfaces, intervalMs: 300, timeoutMs: 2000 });
      await c.until('ns/card', 1);
      expect(c.calls.get('ns/card')![0]!.every((r) => r.reachable)).toBe(true);
      own.refuseNewConnections(true);
      await c.until('ns/card', 2);
      const second = c.calls.get('ns/card')![1]!;
      expect(second.map((r) => r.reason)).toEqual(['ConnectionFailed', 'ConnectionFailed']);
      expect(own.seen).toHaveLength(2); // nothing reached the server in the second round
    } finally {
      await own.close();
    }
  });

  it('opens a new connection for the next probe when the server closed the last one', async () => {
    const own = await startA2APeers({ closeConnections: true });
    try {
      const c = collector();
      scheduler = new ProbeScheduler({ policy, onResults: c.onResults });
      scheduler.upsert('ns/card', {
        interfaces: ifaces(own).slice(0, 2),
        intervalMs: 60_000,
        timeoutMs: 2000,
      });
      await c.until('ns/card', 1);
      expect(c.calls.get('ns/card')![0]!.map((r) => r.reason)).toEqual(['Reachable', 'Reachable']);
      expect(requests(own, 0).map(([, connection]) => connection)).toEqual([1, 2]);
      expect(c.calls.get('ns/card')![0]![1]!.phases.connectMs).toBeGreaterThanOrEqual(0);
    } finally {
      await own.close();
    }
  });
});
