// The central card server on the real control plane: the controller publishes the ConfigMaps of
// AgentCards with spec.serving.server Central, the server (its real code, with a kubeconfig
// through a TCP relay that can stall) serves them by Host, refuses a host two cards claim (and
// the controller says so in both cards' Serving condition), keeps serving a card whose
// Deployment is scaled to 0 and while the API server is unreachable.
//
// Its own operator rather than the shared set-up (useOperatorInNamespace): the operator watches two
// namespaces (a card in each claims the same host), which one namespace per file cannot express.
import { request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCardServer, type CardServer } from '../../operator/cardserver/server.ts';
import { verifyCard, type JWKS } from '../../operator/card/verify.ts';
import { KubeClient } from '../../operator/kube/client.ts';
import { loadKubeConfig } from '../../operator/kube/config.ts';
import { createLogger } from '../../operator/log.ts';
import { createTestNamespace, kubeConfig, type TestNamespace } from '../support/cluster.ts';
import { agentCardValidator, missingRequired } from '../support/conformance.ts';
import {
  Api,
  condition,
  installCrd,
  privateJwk,
  sampleCard,
  sleep,
  startOperator,
  waitFor,
  type InProcessOperator,
} from '../support/operator.ts';
import { kubeconfigThrough, startRelay, type Relay } from '../support/relay.ts';

const kc = kubeConfig();
const api = new Api(kc);
const apps = kc.makeApiClient(AppsV1Api);
let ns: TestNamespace;
/** A second namespace the operator and the server watch: a conflict across namespaces. */
let ns2: TestNamespace;
let operator: InProcessOperator;
let relay: Relay;
let server: CardServer;
let tmp: string;
const CARD = '/.well-known/agent-card.json';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function get(path: string, host: string | undefined, headers: Record<string, string> = {}, method = 'GET') {
  return new Promise<Answer>((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: server.port,
        path,
        method,
        headers: { ...(host !== undefined ? { host } : {}), ...headers },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function centralCard(
  name: string,
  hosts: string[],
  extra: Record<string, unknown> = {},
  namespace = ns.name,
) {
  await api.createCard(namespace, name, {
    card: sampleCard('1.0.0'),
    signing: { keys: [{ secretRef: { name: 'signing', key: 'jwk' } }] },
    serving: { server: 'Central', hosts },
    ...extra,
  });
}

async function published(name: string): Promise<Record<string, string>> {
  return waitFor(`the ConfigMap of ${name}`, async () => {
    const cm = await api.getConfigMap(ns.name, `${name}-agent-card`);
    return cm?.metadata?.labels?.['agentcard.dev/serving'] === 'central' ? cm.data : undefined;
  });
}

beforeAll(async () => {
  await installCrd(kc);
  ns = await createTestNamespace('card-server');
  ns2 = await createTestNamespace('card-server-b');
  await api.putSecret(ns.name, 'signing', { jwk: await privateJwk('central-1') }, true);
  await api.putSecret(ns2.name, 'signing', { jwk: await privateJwk('central-2') }, true);
  operator = await startOperator(ns.name, ['--namespace', ns2.name]);
  const cluster = new URL(kc.getCurrentCluster()!.server);
  relay = await startRelay(cluster.hostname, Number(cluster.port));
  tmp = mkdtempSync(join(tmpdir(), 'card-server-'));
  const client = new KubeClient(
    loadKubeConfig({ kubeconfig: kubeconfigThrough(kc, relay, join(tmp, 'kc')) }),
  );
  server = await startCardServer({
    client,
    namespaces: [ns.name, ns2.name],
    port: 0,
    metricsPort: 0,
    host: '127.0.0.1',
    defaultMaxAgeSeconds: 300,
    logger: createLogger({ component: 'card-server' }, { level: 'warn', write: () => {} }),
  });
}, 120_000);

afterAll(async () => {
  await server?.close();
  await relay?.close();
  await operator?.stop();
  await ns?.cleanup();
  await ns2?.cleanup();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('the central card server', () => {
  it('serves a signed card by Host, its audiences by theirs, and 404 for any other host', async () => {
    await centralCard('weather', ['Weather.Example.com'], {
      audiences: [
        {
          name: 'partners',
          hosts: ['*.partners.example.com'],
          baseURL: 'https://agents.partners.example.com',
        },
      ],
    });
    const data = await published('weather');
    expect(data['serving-hosts']).toBe('weather.example.com\n');
    const res = await waitFor('the card served', async () => {
      const r = await get(CARD, 'weather.example.com:443');
      return r.status === 200 ? r : undefined;
    });
    // Exactly the published bytes, with the sidecar's headers.
    expect(res.body).toBe(data['agent-card.json']);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.headers['cache-control']).toBe('public, max-age=300');
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers.etag).toMatch(/^"[^"]+"$/);
    // A conformant A2A card, signed with the key the served JWKS holds.
    const card = JSON.parse(res.body) as Record<string, unknown>;
    expect(agentCardValidator()(card)).toEqual([]);
    expect(missingRequired(card)).toEqual([]);
    const jwks = await get('/.well-known/jwks.json', 'weather.example.com');
    expect(jwks.status).toBe(200);
    const verdict = await verifyCard(card, JSON.parse(jwks.body) as JWKS);
    expect(verdict.verified).toBe(true);
    expect((await get('/.well-known/agent.json', 'weather.example.com')).body).toBe(data['agent.json']);
    // Revalidation and HEAD, as the sidecar answers them.
    const revalidated = await get(CARD, 'weather.example.com', {
      'if-none-match': res.headers.etag as string,
    });
    expect(revalidated.status).toBe(304);
    const head = await get(CARD, 'weather.example.com', {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    expect((await get(CARD, 'weather.example.com', {}, 'POST')).status).toBe(405);
    // The audience's card for its wildcard host (one more label), not the default one.
    const partner = await get(CARD, 'acme.partners.example.com');
    expect(partner.status).toBe(200);
    expect(partner.body).toBe(data['wildcard.partners.example.com.agent-card.json']);
    expect(partner.body).not.toBe(res.body);
    // Never a card for a host no card claims, an IP literal, or no Host at all.
    for (const host of ['other.example.com', 'x.acme.partners.example.com', '127.0.0.1', '']) {
      const r = await get(CARD, host);
      expect(r.status, `Host: ${host}`).toBe(404);
    }
    expect((await get('/.well-known/jwks.json', 'other.example.com')).status).toBe(404);
  });

  it('moves Last-Modified when the card changes, so If-Modified-Since gets the new card', async () => {
    const spec = {
      card: sampleCard('1.0.0'),
      signing: { keys: [{ secretRef: { name: 'signing', key: 'jwk' } }] },
      serving: { server: 'Central', hosts: ['dated.example.com'] },
    };
    await api.createCard(ns.name, 'dated', spec);
    await published('dated');
    const first = await waitFor('the card served', async () => {
      const r = await get(CARD, 'dated.example.com');
      return r.status === 200 ? r : undefined;
    });
    const lastModified = first.headers['last-modified'] as string;
    // HTTP dates and the API server's times are whole seconds: change it in a later second.
    await sleep(1_100);
    await api.replaceSpec(ns.name, 'dated', { ...spec, card: sampleCard('1.0.1') });
    const changed = await waitFor('the changed card served', async () => {
      const r = await get(CARD, 'dated.example.com');
      return r.status === 200 && r.headers.etag !== first.headers.etag ? r : undefined;
    });
    expect(Date.parse(changed.headers['last-modified'] as string)).toBeGreaterThan(Date.parse(lastModified));
    // A client that revalidates by date alone gets the new card, not 304.
    const revalidated = await get(CARD, 'dated.example.com', { 'if-modified-since': lastModified });
    expect(revalidated.status).toBe(200);
    expect(revalidated.body).toBe(changed.body);
  });

  it('refuses a host two cards claim, for both, until one lets it go', async () => {
    await centralCard('first', ['shared.example.com', 'first.example.com']);
    await published('first');
    await waitFor('first served', async () => (await get(CARD, 'shared.example.com')).status === 200);
    await centralCard('second', ['shared.example.com']);
    await published('second');
    await waitFor('the conflict seen', async () => server.index().conflicts.has('shared.example.com'));
    expect(server.index().conflicts.get('shared.example.com')).toEqual([
      `${ns.name}/first-agent-card`,
      `${ns.name}/second-agent-card`,
    ]);
    expect((await get(CARD, 'shared.example.com')).status).toBe(404);
    // The first card's other host is not in conflict.
    expect((await get(CARD, 'first.example.com')).status).toBe(200);
    // Both cards say so, each naming the other.
    const serving = (card: string, namespace = ns.name) =>
      waitFor(`${card}'s Serving condition`, async () => {
        const c = condition(await api.getCard(namespace, card), 'Serving');
        return c?.reason === 'HostConflict' ? c : undefined;
      });
    const [firstServing, secondServing] = await Promise.all([serving('first'), serving('second')]);
    expect(firstServing).toMatchObject({ status: 'False', observedGeneration: 1 });
    expect(firstServing.message).toContain('shared.example.com (also claimed by AgentCard second)');
    expect(secondServing.message).toContain('shared.example.com (also claimed by AgentCard first)');
    expect(firstServing.message).not.toContain('first.example.com');
    // The conflict does not gate Ready: the card is published and its other host served.
    expect(condition(await api.getCard(ns.name, 'first'), 'Ready')?.status).not.toBe('False');
    await waitFor('a HostConflict Warning Event', async () =>
      (await api.events(ns.name, 'first')).some((e) => e.reason === 'HostConflict' && e.type === 'Warning'),
    );

    // A card of another namespace claims the first card's other host: neither names the other's
    // namespace or name (its users may not read that namespace).
    await centralCard('elsewhere', ['first.example.com'], {}, ns2.name);
    const across = await waitFor('the cross-namespace conflict', async () => {
      const c = condition(await api.getCard(ns.name, 'first'), 'Serving');
      return c?.message.includes('first.example.com') ? c : undefined;
    });
    expect(across.message).toContain('first.example.com (also claimed by an AgentCard in another namespace)');
    expect(across.message).not.toContain(ns2.name);
    expect(across.message).not.toContain('elsewhere');
    const theirs = await serving('elsewhere', ns2.name);
    expect(theirs.message).toBe(
      'the card server answers none of the cards claiming first.example.com (also claimed by an AgentCard in another namespace) (404) until all but one let the host go',
    );
    await api.deleteCard(ns2.name, 'elsewhere');
    await waitFor('the cross-namespace conflict over', async () => {
      const c = condition(await api.getCard(ns.name, 'first'), 'Serving');
      return c && !c.message.includes('first.example.com');
    });
    await api.replaceSpec(ns.name, 'second', {
      card: sampleCard('1.0.0'),
      signing: { keys: [{ secretRef: { name: 'signing', key: 'jwk' } }] },
      serving: { server: 'Central', hosts: ['second.example.com'] },
    });
    const firstData = await published('first');
    const back = await waitFor('the shared host served again', async () => {
      const r = await get(CARD, 'shared.example.com');
      return r.status === 200 ? r : undefined;
    });
    expect(back.body).toBe(firstData['agent-card.json']);
    // The conflict is over for both cards.
    for (const card of ['first', 'second']) {
      const c = await waitFor(`${card} Serving again`, async () => {
        const got = condition(await api.getCard(ns.name, card), 'Serving');
        return got?.status === 'True' ? got : undefined;
      });
      expect(c.reason).toBe('HostsUnique');
    }
    expect(condition(await api.getCard(ns.name, 'first'), 'Serving')?.message).toBe(
      'no other AgentCard claims its 2 hosts on the card server',
    );
  });

  it('keeps serving with the Deployment scaled to 0 and while the API server is unreachable', async () => {
    await apps.createNamespacedDeployment({
      namespace: ns.name,
      body: {
        metadata: { name: 'sleepy' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'sleepy' } },
          template: {
            metadata: { labels: { app: 'sleepy' } },
            spec: { containers: [{ name: 'agent', image: 'agent:1' }] },
          },
        },
      },
    });
    await centralCard('sleepy', ['sleepy.example.com']);
    const data = await published('sleepy');
    await waitFor('sleepy served', async () => (await get(CARD, 'sleepy.example.com')).status === 200);
    await apps.replaceNamespacedDeploymentScale({
      namespace: ns.name,
      name: 'sleepy',
      body: { metadata: { name: 'sleepy', namespace: ns.name }, spec: { replicas: 0 } },
    });
    const scale = await apps.readNamespacedDeploymentScale({ namespace: ns.name, name: 'sleepy' });
    // replicas 0 is omitted from the answer (omitempty).
    expect(scale.spec?.replicas ?? 0).toBe(0);
    expect((await get(CARD, 'sleepy.example.com')).body).toBe(data['agent-card.json']);

    // The API server unreachable (packets dropped): the cards are served from memory. The pauses
    // are the subject: ten requests spread over two seconds of the outage, not a burst at its start.
    relay.stall();
    try {
      for (let i = 0; i < 10; i++) {
        const r = await get(CARD, 'sleepy.example.com');
        expect(r.status).toBe(200);
        expect(r.body).toBe(data['agent-card.json']);
        await sleep(200);
      }
    } finally {
      relay.heal();
    }
    // And a change made meanwhile arrives once the watch resumes.
    await api.replaceSpec(ns.name, 'sleepy', {
      card: sampleCard('2.0.0'),
      signing: { keys: [{ secretRef: { name: 'signing', key: 'jwk' } }] },
      serving: { server: 'Central', hosts: ['sleepy.example.com'] },
    });
    await waitFor(
      'version 2.0.0 served',
      async () =>
        (JSON.parse((await get(CARD, 'sleepy.example.com')).body) as { version: string }).version === '2.0.0',
      60_000,
    );
  });

  it('does not serve a card that chose the sidecar', async () => {
    await api.createCard(ns.name, 'injected', {
      card: sampleCard('1.0.0'),
      signing: { keys: [{ secretRef: { name: 'signing', key: 'jwk' } }] },
    });
    await waitFor('its ConfigMap', async () => api.getConfigMap(ns.name, 'injected-agent-card'));
    const cm = await api.getConfigMap(ns.name, 'injected-agent-card');
    expect(cm?.metadata?.labels?.['agentcard.dev/serving']).toBeUndefined();
    expect(cm?.data?.['serving-hosts']).toBeUndefined();
    // A card served by its sidecar has no Serving condition.
    const live = await waitFor('its status', async () => {
      const card = await api.getCard(ns.name, 'injected');
      return card?.status?.conditions?.length ? card : undefined;
    });
    expect(condition(live, 'Serving')).toBeUndefined();
    expect([...server.index().claims.values()].map((c) => c.key)).not.toContain(
      `${ns.name}/injected-agent-card`,
    );
  });
});
