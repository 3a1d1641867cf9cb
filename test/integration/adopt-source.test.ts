// Adopting an agent's own card (spec.source) on the real control plane, from sources that go
// wrong. Each fault ends in a clear SourceAvailable condition, the last good card still
// published, and a bounded number of writes, counted by the API server (so the file is serial).
// Adopting from real A2A agents is in adopt-agents.test.ts. The figures it measures are in
// docs/RELIABILITY.md.
import http from 'node:http';
import net, { type AddressInfo, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { condition, controllerWrites, useOperatorInNamespace, waitFor } from '../support/operator.ts';

// ---- a hostile source: one path per card, each with a mode the test switches ----------------

type Mode = 'good' | 'garbage' | 'huge' | 'trickle' | 'redirect' | 'flip' | 'notfound';
const modes = new Map<string, Mode>();
let hostile: http.Server;
let hostileBase = '';
let goneServer: http.Server;
let goneBase = '';
const sockets = new Set<Socket>();
/** Requests per card path of the hostile source, and connections to the gone source's port. */
const fetches = new Map<string, number>();
const count = (name: string) => void fetches.set(name, (fetches.get(name) ?? 0) + 1);

function goodCard(name: string, version: string) {
  return {
    name,
    description: `${name} agent`,
    supportedInterfaces: [
      { url: `${hostileBase}/${name}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ],
    version,
    capabilities: {},
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 's', name: 'S', description: 'S', tags: ['s'] }],
  };
}

function serveHostile(req: http.IncomingMessage, res: http.ServerResponse): void {
  const name = (req.url ?? '/').split('/')[1] ?? '';
  count(name);
  const mode = modes.get(name) ?? 'notfound';
  switch (mode) {
    case 'good':
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(goodCard(name, '1.0.0')));
      return;
    case 'flip':
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(goodCard(name, Math.floor(Date.now() / 1000) % 2 === 0 ? '1.0.0' : '2.0.0')));
      return;
    case 'garbage':
      res.setHeader('content-type', 'application/json');
      res.end('<html>not a card</html>');
      return;
    case 'huge': {
      // 10 MiB, chunked (no Content-Length to refuse early): the fetch must cut it at its cap.
      res.setHeader('content-type', 'application/json');
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      let sent = 0;
      const pump = () => {
        while (sent < 10 * 1024 * 1024) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      res.on('error', () => {});
      pump();
      return;
    }
    case 'trickle': {
      res.setHeader('content-type', 'application/json');
      const text = JSON.stringify(goodCard(name, '9.9.9'));
      let i = 0;
      const timer = setInterval(() => {
        if (i >= text.length || res.destroyed) return void clearInterval(timer);
        res.write(text[i++]);
      }, 500);
      res.on('close', () => clearInterval(timer));
      return;
    }
    case 'redirect':
      res.statusCode = 302;
      res.setHeader('location', 'http://169.254.169.254/latest/meta-data/');
      res.end();
      return;
    default:
      res.statusCode = 404;
      res.end();
  }
}

const { api, ns, kc } = useOperatorInNamespace('adopt-source', {
  probes: true,
  before: async () => {
    hostile = http.createServer(serveHostile);
    hostile.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((r) => hostile.listen(0, '127.0.0.1', r));
    hostileBase = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`;
    goneServer = http.createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          ...goodCard('gone', '1.0.0'),
          supportedInterfaces: [
            { url: `${goneBase}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
          ],
        }),
      );
    });
    await new Promise<void>((r) => goneServer.listen(0, '127.0.0.1', r));
    goneBase = `http://127.0.0.1:${(goneServer.address() as AddressInfo).port}`;
  },
  after: async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => hostile?.close(r));
    goneServer?.closeAllConnections();
    await new Promise((r) => goneServer?.close(r));
    if (goneReset) await new Promise((r) => goneReset!.close(r));
  },
});

/**
 * The gone source's port once the agent has disappeared: a listener that resets every connection
 * and counts it, so the test knows when a fetch round has been made. The operator's fetch reports
 * a reset as it reports a refused connection (SourceUnreachable, "cannot connect (ECONNRESET)"
 * for "connection refused"); a port nobody listens on could not be counted.
 */
let goneReset: net.Server | undefined;

const published = (name: string) => api.publishedCard(ns.name, name);

const sourceCondition = async (name: string) =>
  condition(await api.getCard(ns.name, name), 'SourceAvailable');

describe('adopting the card an agent serves, from sources that go wrong', () => {
  it('keeps the last good card through garbage, 10 MiB, a trickle, a redirect to the metadata address and a source that disappears', async () => {
    const faults: Array<{ name: Mode | 'gone'; reason: string }> = [
      { name: 'garbage', reason: 'SourceNotJSON' },
      { name: 'huge', reason: 'SourceTooLarge' },
      { name: 'trickle', reason: 'SourceTimeout' },
      { name: 'redirect', reason: 'SourceRedirected' },
      { name: 'gone', reason: 'SourceUnreachable' },
    ];
    for (const f of faults) {
      modes.set(f.name, 'good');
      const url = f.name === 'gone' ? `${goneBase}/` : `${hostileBase}/${f.name}/card.json`;
      await api.createCard(ns.name, f.name, { source: { url, interval: '10s' }, probe: { enabled: false } });
    }
    const good = new Map<string, string>();
    for (const f of faults) {
      await waitFor(
        `${f.name} published`,
        async () => (await published(f.name))?.version === '1.0.0',
        60_000,
      );
      good.set(f.name, JSON.stringify(await published(f.name)));
    }
    const before = await controllerWrites(kc);
    const brokenAt = Date.now();
    for (const f of faults) {
      if (f.name === 'gone') {
        goneServer.closeAllConnections();
        await new Promise((r) => goneServer.close(r));
        goneReset = net.createServer((socket) => (count('gone'), socket.resetAndDestroy()));
        await new Promise<void>((r) => goneReset!.listen(Number(new URL(goneBase).port), '127.0.0.1', r));
      } else modes.set(f.name, f.name as Mode);
    }
    const timings: Record<string, number> = {};
    await Promise.all(
      faults.map(async (f) => {
        const c = await waitFor(
          `${f.name} SourceAvailable=False`,
          async () => {
            const s = await sourceCondition(f.name);
            return s?.status === 'False' ? s : undefined;
          },
          60_000,
        );
        timings[f.name] = Date.now() - brokenAt;
        expect(c.reason, `${f.name}: ${c.message}`).toBe(f.reason);
        expect(c.message).toContain('the last good card');
      }),
    );
    const redirect = await sourceCondition('redirect');
    expect(redirect!.message).toContain('169.254.169.254');
    expect(redirect!.message).toContain('never followed');
    // Another round of fetches, all failing the same way: no more writes. Counted at the sources,
    // not slept through: a card's reconciles never overlap and each fetches at most once, so a
    // second fetch after the snapshot means the reconcile of the first has ended.
    const settled = await controllerWrites(kc);
    const fetched = new Map(faults.map((f) => [f.name, fetches.get(f.name) ?? 0]));
    await waitFor(
      'two more fetch rounds of every faulty source',
      async () => faults.every((f) => (fetches.get(f.name) ?? 0) >= fetched.get(f.name)! + 2),
      60_000,
    );
    const after = await controllerWrites(kc);
    for (const f of faults) {
      expect(JSON.stringify(await published(f.name)), f.name).toBe(good.get(f.name));
      const card = await api.getCard(ns.name, f.name);
      expect(condition(card, 'Ready')?.status, f.name).toBe('True');
    }
    console.log(
      `[figures] time to SourceAvailable=False (interval 10s): ${JSON.stringify(timings)}; writes for 5 faults: configMaps ${settled.configMaps - before.configMaps}, status ${settled.status - before.status}; in the next round: configMaps ${after.configMaps - settled.configMaps}, status ${after.status - settled.status}`,
    );
    expect(settled.configMaps - before.configMaps).toBe(0);
    expect(settled.status - before.status).toBeLessThanOrEqual(faults.length);
    expect(after.configMaps - settled.configMaps).toBe(0);
    expect(after.status - settled.status).toBe(0);
  });

  it('bounds the writes of a source that flips between two versions every second', async () => {
    modes.set('flip', 'flip');
    await api.createCard(ns.name, 'flip', {
      // 11 s, not 10 s: fetches a whole number of seconds apart would always see the same version.
      source: { url: `${hostileBase}/flip/card.json`, interval: '11s' },
      probe: { enabled: false },
    });
    await waitFor('flip published', async () => (await published('flip')) !== undefined, 60_000);
    const before = await controllerWrites(kc);
    const fetchedBefore = fetches.get('flip') ?? 0;
    // The window is the subject: a bound on writes per unit of time, over 60 s of flipping.
    const windowMs = 60_000;
    await new Promise((r) => setTimeout(r, windowMs));
    const after = await controllerWrites(kc);
    // The bound says something only if the source was fetched through the window: one fetch per
    // interval (11 s) or confirmation (10 s), so five or six in 60 s; three leave room for a slow
    // machine.
    expect(fetches.get('flip')! - fetchedBefore).toBeGreaterThanOrEqual(3);
    const writes = { configMaps: after.configMaps - before.configMaps, status: after.status - before.status };
    const changes = (await api.events(ns.name, 'flip')).filter((e) => e.reason === 'SourceChanged').length;
    console.log(
      `[figures] flipping source, ${windowMs / 1000} s at interval 11s: ${JSON.stringify(writes)}, SourceChanged events ${changes}`,
    );
    // A change needs two agreeing fetches (the interval, then the 10 s confirmation): at most one
    // adoption, so one ConfigMap and one status write, per 21 s.
    const bound = Math.floor(windowMs / 21_000) + 1;
    expect(writes.configMaps).toBeLessThanOrEqual(bound);
    expect(writes.status).toBeLessThanOrEqual(bound);
  });
});
