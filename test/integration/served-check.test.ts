/**
 * What clients receive, verified: the operator publishes a signed card per audience, a card
 * server serves the published ConfigMap by Host, and three real nginx reverse proxies stand in
 * front of it, each a host of its own: one passes the card through, one rewrites an interface URL
 * (sub_filter), one strips the signatures (renames the member). A fourth host has nothing
 * listening. The Delivered condition on the real API server names each host's verdict, the metric
 * has one series per host, and a second round with the same verdicts writes nothing. The check's
 * I/O function is then asked directly: the address policy and the no-redirect rule hold.
 */
import { createServer, type Server } from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { configMapName, DATA_KEYS } from '../../operator/api/names.ts';
import { createAddressPolicy } from '../../operator/probe/policy.ts';
import { checkServedCard } from '../../operator/served/check.ts';
import type { JWKS } from '../../operator/card/verify.ts';
import {
  condition,
  metricValue,
  operatorMetrics,
  privateJwk,
  sampleCard,
  useOperatorInNamespace,
  waitFor,
} from '../support/operator.ts';
import { freePorts } from '../support/ports.ts';
import { startNginxProxy, type Proxy } from '../support/rewriting-proxies.ts';

const HOSTS = { rewritten: '127.0.0.2', stripped: '127.0.0.3', faithful: '127.0.0.4', dead: '127.0.0.5' };
const REDIRECTING = '127.0.0.6';
const CARD = 'weather';

let upstream: Server;
const asked = new Map<string, number>();
let proxies: Proxy[] = [];
let ports: number[] = [];

const { api, ns, op } = useOperatorInNamespace('served-check', {
  probes: true,
  // The hosts are loopback addresses of their own (the test's proxies); loopback is refused
  // unless allowed, as in a cluster.
  flags: ['--probe-allow-cidr', '127.0.0.0/8'],
  before: async () => {
    ports = await freePorts(3);
    // The card server: the published ConfigMap's card for the request's Host, as the sidecar
    // serves it (host.<host>.agent-card.json).
    upstream = createServer((req, res) => {
      const host = (req.headers.host ?? '').replace(/:\d+$/, '');
      asked.set(host, (asked.get(host) ?? 0) + 1);
      void api.getConfigMap(ns.name, configMapName(CARD)).then((cm) => {
        const card = cm?.data?.[`host.${host}.${DATA_KEYS.card}`];
        res.writeHead(card ? 200 : 404, { 'content-type': 'application/json' });
        res.end(card ?? '{}');
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const upstreamPort = (upstream.address() as { port: number }).port;
    proxies = await Promise.all([
      startNginxProxy({
        address: HOSTS.rewritten,
        port: ports[0]!,
        upstream: upstreamPort,
        filters: [[`http://${HOSTS.rewritten}:${ports[0]}`, 'https://gateway.example.net']],
      }),
      startNginxProxy({
        address: HOSTS.stripped,
        port: ports[1]!,
        upstream: upstreamPort,
        filters: [['"signatures"', '"x-signatures"']],
      }),
      startNginxProxy({
        address: HOSTS.faithful,
        port: ports[2]!,
        upstream: upstreamPort,
        extra: `  server {
    listen ${REDIRECTING}:${ports[2]};
    location / { return 302 http://169.254.169.254/latest/meta-data/; }
  }`,
      }),
    ]);
    await api.putSecret(ns.name, 'weather-key', { jwk: await privateJwk('weather-2026') }, true);
  },
  after: async () => {
    await Promise.all(proxies.map((p) => p.close()));
    await new Promise((r) => upstream?.close(r));
  },
});

const audience = (name: keyof typeof HOSTS, port: number) => ({
  name,
  hosts: [HOSTS[name]],
  baseURL: `http://${HOSTS[name]}:${port}/agents/weather`,
  probe: 'Disabled',
  verifyServed: true,
});

describe('served-card check through real proxies', () => {
  beforeAll(async () => {
    const [deadPort] = await freePorts(1);
    await api.createCard(ns.name, CARD, {
      card: sampleCard('1.0.0', {
        supportedInterfaces: [
          {
            url: 'http://weather.agents.svc:8080/a2a/jsonrpc',
            protocolBinding: 'JSONRPC',
            protocolVersion: '1.0',
          },
        ],
      }),
      signing: { keys: [{ secretRef: { name: 'weather-key', key: 'jwk' } }] },
      // The check's timeout is the probe's. Not 2 s: two nginx hosts once took longer than that
      // on a saturated machine, and a verdict of Unreachable failed both tests.
      probe: { enabled: false, interval: '10s', timeout: '8s' },
      audiences: [
        audience('rewritten', ports[0]!),
        audience('stripped', ports[1]!),
        audience('faithful', ports[2]!),
        audience('dead', deadPort!),
      ],
    });
  });

  it('names each host’s verdict in the Delivered condition, worst first', async () => {
    const delivered = await waitFor(
      'Delivered decided',
      async () => {
        const c = condition(await api.getCard(ns.name, CARD), 'Delivered');
        return c && c.reason !== 'CheckPending' ? c : undefined;
      },
      30_000,
    );
    expect(delivered).toMatchObject({ type: 'Delivered', status: 'False', reason: 'Rewritten' });
    expect(delivered.message.startsWith(`${HOSTS.rewritten}: Rewritten`)).toBe(true);
    expect(delivered.message).toContain(
      `${HOSTS.rewritten}: Rewritten, differs at supportedInterfaces[0].url`,
    );
    expect(delivered.message).toContain(`${HOSTS.stripped}: SignatureBroken, the signatures are missing`);
    expect(delivered.message).toMatch(
      new RegExp(`${HOSTS.dead.replace(/\./g, '\\.')}: Unreachable, connection refused`),
    );
    expect(delivered.message).toContain(
      `${HOSTS.faithful}: ServedAsSigned, the published card; its signature verifies (kid weather-2026)`,
    );

    const metrics = await operatorMetrics(op.metricsPort());
    const series = (host: string, verdict: string) =>
      metricValue(metrics, 'agentcard_served_card', { namespace: ns.name, name: CARD, host, verdict });
    expect(series(HOSTS.rewritten, 'Rewritten')).toBe(1);
    expect(series(HOSTS.stripped, 'SignatureBroken')).toBe(1);
    expect(series(HOSTS.faithful, 'ServedAsSigned')).toBe(1);
    expect(series(HOSTS.dead, 'Unreachable')).toBe(1);
  });

  it('writes nothing when the next round finds the same', async () => {
    const before = await api.getCard(ns.name, CARD);
    const rounds = asked.get(HOSTS.faithful) ?? 0;
    // The next round comes within [0.5, 1.5] x the 10 s interval.
    await waitFor('another round', async () => (asked.get(HOSTS.faithful) ?? 0) > rounds, 20_000);
    await new Promise((r) => setTimeout(r, 1_000));
    const after = await api.getCard(ns.name, CARD);
    expect(after!.metadata.resourceVersion).toBe(before!.metadata.resourceVersion);
  });

  it('fetches as a client under the address policy: refused addresses, no redirects', async () => {
    const cm = await api.getConfigMap(ns.name, configMapName(CARD));
    const card = cm!.data![`host.${HOSTS.faithful}.${DATA_KEYS.card}`]!;
    const keys = JSON.parse(cm!.data![DATA_KEYS.jwks]!) as JWKS;
    const url = (host: string) => `http://${host}:${ports[2]}/.well-known/agent-card.json`;
    const allowed = { policy: createAddressPolicy({ allowCidrs: ['127.0.0.0/8'] }), timeoutMs: 5_000 };

    expect(await checkServedCard(url(HOSTS.faithful), { card, keys }, allowed)).toMatchObject({
      verdict: 'ServedAsSigned',
    });
    const refused = await checkServedCard(
      url(HOSTS.faithful),
      { card, keys },
      { policy: createAddressPolicy(), timeoutMs: 5_000 },
    );
    expect(refused.verdict).toBe('Unreachable');
    expect(refused.detail).toMatch(/^refused by the address policy: 127\.0\.0\.4 is loopback/);
    const redirected = await checkServedCard(url(REDIRECTING), { card, keys }, allowed);
    expect(redirected).toMatchObject({ verdict: 'Unreachable' });
    expect(redirected.detail).toBe(
      'HTTP 302 redirect to http://169.254.169.254/latest/meta-data/ not followed (redirects are never followed)',
    );
  });
});
