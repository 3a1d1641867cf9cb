// Audiences end to end: an AgentCard with an in-cluster audience and a public one is reconciled
// on the real control plane (probes against a real @a2a-js/sdk peer); the published ConfigMap is
// laid out as the kubelet does and served by the real sidecar, in its Node and its nginx mode.
// Each Host gets its own signed card, which @a2a-js/sdk verifies against the served JWKS; an SDK
// client through Debian's nginx (a Host-preserving reverse proxy) gets the public card, and going
// direct with the in-cluster host gets the in-cluster card. Bad input keeps the last good card.
import { request } from 'node:http';
import { connect } from 'node:net';
import { rm } from 'node:fs/promises';
import { verifyAgentCardSignature } from '@a2a-js/sdk';
import type { AgentCard as SdkAgentCard } from '@a2a-js/sdk';
import { DefaultAgentCardResolver } from '@a2a-js/sdk/client';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startA2APeers, type A2APeers } from '../support/a2a-peers.ts';
import { kubeletWrite, tempDir } from '../support/card-files.ts';
import { startMode, startProxy, SERVING_MODES, type CardServer } from '../support/card-servers.ts';
import {
  condition,
  controllerWrites,
  metricValue,
  operatorMetrics,
  privateJwk,
  RESOURCE,
  sampleCard,
  waitFor,
  useOperatorInNamespace,
  type Api,
} from '../support/operator.ts';

let peer: A2APeers;
const { kc, api, ns, op } = useOperatorInNamespace('audiences', {
  // A short resync: the steady-state check below sees several reconciles that must write nothing.
  flags: ['--resync', '2s'],
  probes: true,
  before: async () => {
    peer = await startA2APeers();
    await api.putSecret(ns.name, 'weather-key', { jwk: await privateJwk('weather-2026') }, true);
  },
  after: async () => {
    await peer?.close();
  },
});

const PUBLIC_HOST = 'weather.example.com';
const PUBLIC_BASE = 'https://weather.example.com/agents/weather';
const inClusterHost = () => `weather.${ns.name}.svc.cluster.local`;

const oidc = {
  oidc: { openIdConnectSecurityScheme: { openIdConnectUrl: 'https://login.example.com/oidc' } },
};
const publicRequirements = [{ schemes: { oidc: { list: ['weather.read'] } } }];

/** spec.card (the Pod's own address), an in-cluster audience and a public one with OIDC. */
function spec(extraAudiences: unknown[] = []) {
  return {
    card: sampleCard('1.0.0', {
      supportedInterfaces: [{ url: peer.jsonrpc, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    }),
    signing: { keys: [{ secretRef: { name: 'weather-key', key: 'jwk' } }] },
    probe: { interval: '10s' },
    audiences: [
      {
        name: 'in-cluster',
        hosts: [`weather.${ns.name}.svc`, inClusterHost()],
        supportedInterfaces: [{ url: peer.rest, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' }],
      },
      {
        name: 'public',
        hosts: [PUBLIC_HOST, '*.Edge.example.com'],
        baseURL: PUBLIC_BASE,
        securitySchemes: oidc,
        securityRequirements: publicRequirements,
        probe: 'Disabled', // no hairpin NAT: the public host is not reachable from the operator
      },
      ...extraAudiences,
    ],
  };
}

type Live = NonNullable<Awaited<ReturnType<Api['getCard']>>> & {
  status: Record<string, unknown> & {
    audiences?: Array<{ name: string; hosts: string[]; digest: string; bytes: number; probed: boolean }>;
    interfaces?: Array<{ url: string; reachable: boolean; audiences?: string[] }>;
  };
};

async function publishedData(name: string): Promise<Record<string, string>> {
  const cm = await api.getConfigMap(ns.name, `${name}-agent-card`);
  return cm!.data!;
}

const readyAndProbed = (card: Live | undefined) =>
  condition(card, 'Ready')?.status === 'True' && condition(card, 'InterfacesReachable')?.status === 'True';

/**
 * Each case creates its own AgentCard (a name of its own) from spec() and waits until it is Ready
 * with both interfaces probed, so any case can run alone. The cards share the hosts of spec():
 * they are served by sidecars, where hosts are per card (only centrally served cards conflict).
 */
async function readyCard(name: string): Promise<Live> {
  await api.createCard(ns.name, name, spec());
  return (await waitFor(
    `${name} Ready with both interfaces probed`,
    async () => {
      const card = (await api.getCard(ns.name, name)) as Live | undefined;
      return readyAndProbed(card) ? card : undefined;
    },
    30_000,
  ))!;
}

/** GET with a chosen Host header (fetch would send the URL's). */
function get(
  port: number,
  path: string,
  host: string,
  extra: Record<string, string> = {},
): Promise<{ status: number; etag?: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host, ...extra } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, etag: res.headers.etag as string | undefined, body }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/** A raw HTTP/1.1 request whose Host bytes no client library would send (NUL, `/`, `..`). */
function rawGet(port: number, hostBytes: string, path = '/.well-known/agent-card.json'): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let out = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (out += d));
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
    socket.write(
      Buffer.from(`GET ${path} HTTP/1.1\r\nHost: ${hostBytes}\r\nConnection: close\r\n\r\n`, 'latin1'),
    );
  });
}

async function sdkVerifies(card: SdkAgentCard, jwks: { keys: Array<{ kid: string }> }): Promise<void> {
  const verify = verifyAgentCardSignature(async (kid) => {
    const jwk = jwks.keys.find((k) => k.kid === kid);
    if (!jwk) throw new Error(`no key ${kid}`);
    return jwk;
  });
  await verify(card);
}

/** A fetch that resolves every host name to 127.0.0.1 (there is no DNS for the test's hosts). */
const loopbackFetch = (() => {
  const dispatcher = new Agent({
    connect: {
      lookup: (_host, opts, cb) =>
        (opts as { all?: boolean }).all
          ? (cb as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
              { address: '127.0.0.1', family: 4 },
            ])
          : (cb as (e: null, a: string, f: number) => void)(null, '127.0.0.1', 4),
    },
  });
  return ((input: string | URL, init?: RequestInit) =>
    undiciFetch(input, { ...(init as object), dispatcher })) as unknown as typeof fetch;
})();

describe('audiences on the real control plane', () => {
  it('publishes a signed card per audience, probes the in-cluster one, and is Ready', async () => {
    const good = await readyCard('weather');
    expect(good.status.audiences).toEqual([
      {
        name: 'in-cluster',
        hosts: [`weather.${ns.name}.svc`, inClusterHost()],
        digest: expect.stringMatching(/^sha256:/),
        bytes: expect.any(Number),
        probed: true,
      },
      {
        name: 'public',
        hosts: [PUBLIC_HOST, '*.edge.example.com'],
        digest: expect.stringMatching(/^sha256:/),
        bytes: expect.any(Number),
        probed: false,
      },
    ]);
    expect(good.status.interfaces).toEqual([
      expect.objectContaining({ url: peer.jsonrpc, reachable: true, audiences: ['default'] }),
      expect.objectContaining({ url: peer.rest, reachable: true, audiences: ['in-cluster'] }),
    ]);
    expect(condition(good, 'InterfacesReachable')!.message).toBe(
      '2/2 reachable; audience public not probed (probe: Disabled)',
    );
    const data = await publishedData('weather');
    expect(Object.keys(data).sort()).toEqual(
      [
        'agent-card.json',
        'agent.json',
        'cache-max-age-seconds',
        'cache-max-age-seconds.place0-digit0',
        'cache-max-age-seconds.place1-digit0',
        'cache-max-age-seconds.place2-digit3',
        `host.${inClusterHost()}.agent-card.json`,
        `host.${inClusterHost()}.agent.json`,
        `host.weather.${ns.name}.svc.agent-card.json`,
        `host.weather.${ns.name}.svc.agent.json`,
        `host.${PUBLIC_HOST}.agent-card.json`,
        `host.${PUBLIC_HOST}.agent.json`,
        'jwks.json',
        'wildcard.edge.example.com.agent-card.json',
        'wildcard.edge.example.com.agent.json',
      ].sort(),
    );
  });

  it('writes nothing in steady state (resyncs and probe rounds keep every audience signature)', async () => {
    await readyCard('weather-steady');
    const metrics = async () => operatorMetrics(op.metricsPort());
    const counts = (text: string) => ({
      probes: metricValue(text, 'agentcard_probes_total'),
      reconciles: metricValue(text, 'agentcard_reconcile_total', { result: 'success' }),
    });
    // The last write of a new card (its probe verdicts) comes before Ready and InterfacesReachable
    // read True; a reconcile that ends after that has seen the card settled. The count starts
    // there, not after a fixed pause.
    const settling = counts(await metrics());
    await waitFor('a reconcile after the card settled', async () => {
      return counts(await metrics()).reconciles > settling.reconciles;
    });
    const data = await publishedData('weather-steady');
    const before = await controllerWrites(kc);
    // Counted, not slept through: the window ends after several reconciles (2 s resyncs) and a
    // whole probe round of every card. Each card probes its own interface and the in-cluster
    // audience's (the public one is not probed). agentcard_probes_total is not per card, but every
    // card of the namespace has the same interval, so their round counts in a window differ by one
    // at most: two rounds' worth of probes of every card hold a whole round of each (a round can be
    // under way when the window opens).
    const cards = (await api.custom.listNamespacedCustomObject({ ...RESOURCE, namespace: ns.name })) as {
      items: unknown[];
    };
    const probed = 2 * cards.items.length;
    const start = counts(await metrics());
    await waitFor(
      'three reconciles and a whole probe round',
      async () => {
        const now = counts(await metrics());
        return now.reconciles - start.reconciles >= 3 && now.probes - start.probes >= 2 * probed;
      },
      25_000,
    );
    expect(await controllerWrites(kc)).toEqual(before);
    expect(await publishedData('weather-steady')).toEqual(data);
  });

  for (const mode of SERVING_MODES) {
    describe(`served by the sidecar (${mode} mode)`, () => {
      let dir: string;
      let server: CardServer;
      let data: Record<string, string>;
      beforeAll(async () => {
        await readyCard(`weather-${mode}`);
        data = await publishedData(`weather-${mode}`);
        dir = await tempDir();
        await kubeletWrite(dir, data);
        server = await startMode(mode, dir);
      });
      afterAll(async () => {
        await server?.close();
        if (dir) await rm(dir, { recursive: true, force: true });
      });

      it('gives the in-cluster host, the public host and an unknown host three different signed cards', async () => {
        const jwks = JSON.parse((await get(server.port, '/.well-known/jwks.json', PUBLIC_HOST)).body) as {
          keys: Array<{ kid: string }>;
        };
        const served = {
          inCluster: await get(server.port, '/.well-known/agent-card.json', `${inClusterHost()}:8080`),
          public: await get(server.port, '/.well-known/agent-card.json', PUBLIC_HOST),
          unknown: await get(server.port, '/.well-known/agent-card.json', 'elsewhere.example.org'),
        };
        expect(served.inCluster.body).toBe(data[`host.${inClusterHost()}.agent-card.json`]);
        expect(served.public.body).toBe(data[`host.${PUBLIC_HOST}.agent-card.json`]);
        expect(served.unknown.body).toBe(data['agent-card.json']);
        expect(new Set(Object.values(served).map((s) => s.body)).size).toBe(3);
        expect(new Set(Object.values(served).map((s) => s.etag)).size).toBe(3);

        const cards = Object.fromEntries(
          Object.entries(served).map(([k, v]) => [
            k,
            JSON.parse(v.body) as SdkAgentCard & Record<string, unknown>,
          ]),
        );
        for (const card of Object.values(cards))
          await expect(sdkVerifies(card, jwks)).resolves.toBeUndefined();
        const urls = (c: Record<string, unknown>) =>
          (c.supportedInterfaces as Array<{ url: string }>).map((i) => i.url);
        expect(urls(cards.inCluster!)).toEqual([peer.rest]);
        expect(urls(cards.public!)).toEqual([`${PUBLIC_BASE}/jsonrpc`]);
        expect(urls(cards.unknown!)).toEqual([peer.jsonrpc]);
        expect(cards.public!.securityRequirements).toEqual(publicRequirements);
        expect(cards.public!.securitySchemes).toEqual(oidc);
        expect(cards.inCluster!.securityRequirements).toBeUndefined();
        expect(cards.unknown!.securityRequirements).toBeUndefined();
        // The v0.3 shape follows the same selection.
        const legacy = JSON.parse((await get(server.port, '/.well-known/agent.json', PUBLIC_HOST)).body);
        expect(legacy.url).toBe(`${PUBLIC_BASE}/jsonrpc`);
      });

      it('matches hosts case-insensitively, ignoring a port and one trailing dot; a wildcard covers one label', async () => {
        const nested = await get(server.port, '/.well-known/agent-card.json', 'a.eu.edge.example.com');
        expect(nested.body).toBe(data['agent-card.json']);
        for (const host of [
          'WEATHER.Example.COM',
          'weather.example.com:443',
          'weather.example.com.',
          'eu.edge.example.com',
          'US.EDGE.example.com:8443',
        ]) {
          const { body } = await get(server.port, '/.well-known/agent-card.json', host);
          expect(body, host).toBe(data[`host.${PUBLIC_HOST}.agent-card.json`]);
          expect(body, host).not.toBe(data['agent-card.json']);
        }
      });

      it('never serves another audience file through Host tricks (.., /, NUL)', async () => {
        const tricks = [
          `..`,
          `../${PUBLIC_HOST}`,
          `${PUBLIC_HOST}/..`,
          `host.${PUBLIC_HOST}.agent-card.json`,
          `${PUBLIC_HOST}\u0000.evil`,
          `x/../../${PUBLIC_HOST}`,
          `${PUBLIC_HOST}..`,
        ];
        for (const host of tricks) {
          const raw = await rawGet(server.port, host);
          const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1]);
          expect([200, 400], JSON.stringify(host)).toContain(status);
          if (status === 200) expect(raw.endsWith(data['agent-card.json']!), JSON.stringify(host)).toBe(true);
        }
      });

      it('never serves an audience file by its name in the path', async () => {
        const variant = `host.${PUBLIC_HOST}.agent-card.json`;
        const paths = [
          `/.well-known/${variant}`,
          `/${variant}`,
          `/.well-known/../${variant}`,
          `/.well-known/%2e%2e/${variant}`,
          `/.well-known/agent-card.json/../${variant}`,
          `/.well-known/agent-card.json%00${variant}`,
        ];
        for (const path of paths) {
          const raw = await rawGet(server.port, 'elsewhere.example.org', path);
          const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1]);
          expect(raw.includes(data[variant]!), path).toBe(false);
          if (status === 200) expect(raw.endsWith(data['agent-card.json']!), path).toBe(true);
        }
      });

      it('believes X-Forwarded-Host only when told to trust the proxy in front', async () => {
        const forwarded = { 'x-forwarded-host': PUBLIC_HOST };
        const untrusted = await get(server.port, '/.well-known/agent-card.json', 'proxy.internal', forwarded);
        expect(untrusted.body).toBe(data['agent-card.json']);
        const trusting = await startMode(mode, dir, { trustForwardedHost: true });
        try {
          const trusted = await get(
            trusting.port,
            '/.well-known/agent-card.json',
            'proxy.internal',
            forwarded,
          );
          expect(trusted.body).toBe(data[`host.${PUBLIC_HOST}.agent-card.json`]);
        } finally {
          await trusting.close();
        }
      });

      it('an @a2a-js/sdk client gets the public card through nginx and the in-cluster card direct', async () => {
        const proxy = await startProxy('nginx', server.port);
        try {
          const resolver = new DefaultAgentCardResolver({ fetchImpl: loopbackFetch });
          const viaProxy = await resolver.resolve(`http://${PUBLIC_HOST}:${proxy.port}`);
          expect(viaProxy.supportedInterfaces.map((i) => i.url)).toEqual([`${PUBLIC_BASE}/jsonrpc`]);
          const direct = await resolver.resolve(`http://${inClusterHost()}:${server.port}`);
          expect(direct.supportedInterfaces.map((i) => i.url)).toEqual([peer.rest]);
          expect(viaProxy.signatures).toHaveLength(1);
          expect(direct.signatures).toHaveLength(1);
        } finally {
          await proxy.close();
        }
      });
    });
  }

  describe('bad input keeps the last good card published', () => {
    const stillGood = async (good: Live) => {
      const name = good.metadata.name;
      const live = (await api.getCard(ns.name, name)) as Live;
      expect(live.status.card).toEqual(good.status.card);
      expect(live.status.audiences).toEqual(good.status.audiences);
      expect((await publishedData(name))['agent-card.json']).toBeDefined();
      return live;
    };

    it('overlapping hosts are refused by the API server, naming the field', async () => {
      const good = await readyCard('weather-overlap');
      const before = await publishedData('weather-overlap');
      const err = await api
        .replaceSpec(ns.name, 'weather-overlap', spec([{ name: 'partner', hosts: ['Weather.Example.com'] }]))
        .then(
          () => undefined,
          (e: unknown) => e as { code?: number; body?: string; message?: string },
        );
      expect(err?.code).toBe(422);
      expect(String(err?.body ?? err?.message)).toContain('spec.audiences');
      expect(String(err?.body ?? err?.message)).toContain('a host belongs to at most one audience');
      await stillGood(good);
      expect(await publishedData('weather-overlap')).toEqual(before);
    });

    it('malformed hosts, a reserved name and baseURL with supportedInterfaces are refused by CEL, each naming its field', async () => {
      const bad = spec([
        { name: 'default', hosts: ['a.example.com', 'A.example.com'] },
        {
          name: 'broken',
          hosts: ['b.example.com:443', 'https://c.example.com', 'd.example.com.', '../e.example.com'],
          baseURL: 'https://b.example.com',
          supportedInterfaces: [{ url: peer.rest, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' }],
        },
      ]);
      const err = await api.custom
        .createNamespacedCustomObject({
          group: 'agentcard.dev',
          version: 'v1alpha1',
          plural: 'agentcards',
          namespace: ns.name,
          dryRun: 'All',
          body: {
            apiVersion: 'agentcard.dev/v1alpha1',
            kind: 'AgentCard',
            metadata: { name: 'bad' },
            spec: bad,
          },
        })
        .then(
          () => undefined,
          (e: unknown) => e as { code?: number; body?: string },
        );
      expect(err?.code).toBe(422);
      const text = String(err?.body);
      expect(text).toContain('spec.audiences[2].name');
      expect(text).toContain('spec.audiences[2].hosts: Invalid value');
      for (let i = 0; i < 4; i++) expect(text).toContain(`spec.audiences[3].hosts[${i}]`);
      expect(text).toContain('must be a host name');
      expect(text).toContain('set either baseURL or supportedInterfaces, not both');
    });

    it('an audience with a credential: Accepted=False, a Warning event, the last good card stays', async () => {
      const good = await readyCard('weather-credential');
      const before = await publishedData('weather-credential');
      const token = 'ghp_' + 'Zq8Wk2Lm'.repeat(5);
      const bad = spec();
      (bad.audiences[1] as Record<string, unknown>).baseURL = `https://weather.example.com/${token}`;
      await api.replaceSpec(ns.name, 'weather-credential', bad);
      const live = (await waitFor('Accepted=False', async () => {
        const card = (await api.getCard(ns.name, 'weather-credential')) as Live;
        return condition(card, 'Accepted')?.status === 'False' ? card : undefined;
      }))!;
      expect(condition(live, 'Accepted')).toMatchObject({ reason: 'InvalidSpec' });
      expect(condition(live, 'Accepted')!.message).toContain('spec.audiences[1].baseURL');
      expect(JSON.stringify(live.status)).not.toContain(token);
      const events = await waitFor('the InvalidSpec event', async () => {
        const list = await api.events(ns.name, 'weather-credential');
        return list.some((e) => e.reason === 'InvalidSpec') ? list : undefined;
      });
      expect(events.find((e) => e.reason === 'InvalidSpec')).toMatchObject({ type: 'Warning' });
      expect(JSON.stringify(events)).not.toContain(token);
      await stillGood(good);
      expect(await publishedData('weather-credential')).toEqual(before);
    });

    it('a set of audiences over the ConfigMap limit: Published=False CardTooLarge, an event, the last good card stays', async () => {
      const good = await readyCard('weather-too-large');
      const before = await publishedData('weather-too-large');
      const big = spec();
      (big.card as Record<string, unknown>).description =
        'Answers questions about the weather forecast for a city. '.repeat(100);
      const regions = Array.from({ length: 6 }, (_, a) => ({
        name: `region-${a}`,
        hosts: Array.from({ length: 16 }, (_, h) => `h${h}.region-${a}.example.com`),
        baseURL: `https://region-${a}.example.com`,
        probe: 'Disabled',
      }));
      big.audiences.push(...regions);
      await api.replaceSpec(ns.name, 'weather-too-large', big);
      const live = (await waitFor('Published=False', async () => {
        const card = (await api.getCard(ns.name, 'weather-too-large')) as Live;
        return condition(card, 'Published')?.status === 'False' ? card : undefined;
      }))!;
      expect(condition(live, 'Published')).toMatchObject({ reason: 'CardTooLarge' });
      expect(condition(live, 'Published')!.message).toMatch(/over the ConfigMap limit of 1048576 bytes/);
      expect(condition(live, 'Ready')).toMatchObject({ status: 'False', reason: 'CardTooLarge' });
      const events = await waitFor('the CardTooLarge event', async () => {
        const list = await api.events(ns.name, 'weather-too-large');
        return list.some((e) => e.reason === 'CardTooLarge') ? list : undefined;
      });
      expect(events.find((e) => e.reason === 'CardTooLarge')).toMatchObject({ type: 'Warning' });
      await stillGood(good);
      expect(await publishedData('weather-too-large')).toEqual(before);
    });
  });
});
