import { describe, expect, it } from 'vitest';
import { generateSigningJwk } from '../../../../operator/card/keygen.ts';
import { verifyCard } from '../../../../operator/card/verify.ts';
import { hostKeyPrefix } from '../../../../operator/controllers/agentcard/audiences/publish.ts';
import { configMapDataBytes, MAX_CONFIGMAP_DATA_BYTES } from '../../../../operator/runtime/configmaps.ts';
import { probeTargets } from '../../../../operator/controllers/agentcard/audiences/probe-targets.ts';
import { planReconcile, type PlanInput } from '../../../../operator/controllers/agentcard/plan.ts';
import { type AgentCardObject } from '../../../../operator/api/objects.ts';
import { disabledVerdict, interfacesVerdict } from '../../../../operator/controllers/agentcard/probes.ts';
import type { AgentCardSpec } from '../../../../operator/card/resource.ts';
import type { ProbeResult } from '../../../../operator/probe/index.ts';
import { sampleCard } from '../../../support/cards.ts';

const now = new Date('2030-01-01T00:00:00Z');
const later = new Date('2030-01-01T00:10:00Z');

const IN_CLUSTER = 'http://weather.agents.svc.cluster.local:8080/a2a';

/** An in-cluster default card and a public audience with OAuth2 (the common case). */
function spec(audiences: unknown[] = [publicAudience()]): Record<string, unknown> {
  return {
    card: sampleCard('1.0.0', {
      supportedInterfaces: [{ url: IN_CLUSTER, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    }),
    signing: { keys: [{ secretRef: { name: 'key', key: 'jwk' } }] },
    audiences,
  };
}

function publicAudience(extra: Record<string, unknown> = {}) {
  return {
    name: 'public',
    hosts: ['Weather.Example.com', '*.edge.example.com'],
    baseURL: 'https://weather.example.com/agents/weather',
    securitySchemes: {
      oidc: { openIdConnectSecurityScheme: { openIdConnectUrl: 'https://login.example.com/oidc' } },
    },
    securityRequirements: [{ schemes: { oidc: { list: ['weather.read'] } } }],
    ...extra,
  };
}

const resource = (s: unknown, generation = 1, status?: unknown): AgentCardObject => ({
  metadata: { name: 'weather', namespace: 'agents', uid: 'uid-1', generation },
  spec: s,
  status,
});

async function key() {
  const jwk = JSON.stringify(await generateSigningJwk('ES256', 'k1'));
  return { data: { jwk: Buffer.from(jwk).toString('base64') }, labelled: true };
}

function input(
  res: AgentCardObject,
  secret: Awaited<ReturnType<typeof key>>,
  over: Partial<PlanInput> = {},
): PlanInput {
  return {
    resource: res,
    secrets: new Map([['key', secret]]),
    liveConfigMap: undefined,
    interfaces: () => disabledVerdict(res.metadata.generation ?? 0, 'probes are off'),
    now,
    ...over,
  };
}

const cond = (plan: Awaited<ReturnType<typeof planReconcile>>, type: string) =>
  plan.status.conditions?.find((c) => c.type === type);

/** The default max-age (300) spelled one digit per key for the nginx sidecar. */
const MAX_AGE_300_KEYS = [
  'cache-max-age-seconds.place2-digit3',
  'cache-max-age-seconds.place1-digit0',
  'cache-max-age-seconds.place0-digit0',
];

describe('publishing audiences', () => {
  it('publishes one signed card per audience under the host keys of the contract', async () => {
    const plan = await planReconcile(input(resource(spec()), await key()));
    const data = plan.configMap!.data;
    expect(Object.keys(data).sort()).toEqual(
      [
        'agent-card.json',
        'agent.json',
        'cache-max-age-seconds',
        ...MAX_AGE_300_KEYS,
        'host.weather.example.com.agent-card.json',
        'host.weather.example.com.agent.json',
        'jwks.json',
        'wildcard.edge.example.com.agent-card.json',
        'wildcard.edge.example.com.agent.json',
      ].sort(),
    );
    const jwks = JSON.parse(data['jwks.json']!);
    const internal = JSON.parse(data['agent-card.json']!);
    const pub = JSON.parse(data['host.weather.example.com.agent-card.json']!);
    expect(data['wildcard.edge.example.com.agent-card.json']).toBe(
      data['host.weather.example.com.agent-card.json'],
    );
    for (const card of [internal, pub]) expect((await verifyCard(card, jwks)).verified).toBe(true);
    expect(internal.supportedInterfaces[0].url).toBe(IN_CLUSTER);
    expect(internal.securityRequirements).toBeUndefined();
    expect(pub.supportedInterfaces[0].url).toBe('https://weather.example.com/agents/weather/a2a');
    expect(pub.securityRequirements).toEqual([{ schemes: { oidc: { list: ['weather.read'] } } }]);
    // The v0.3 shape per audience, too.
    expect(JSON.parse(data['host.weather.example.com.agent.json']!).url).toBe(
      'https://weather.example.com/agents/weather/a2a',
    );
    expect(JSON.parse(data['agent.json']!).url).toBe(IN_CLUSTER);

    expect(plan.status.audiences).toEqual([
      {
        name: 'public',
        hosts: ['weather.example.com', '*.edge.example.com'],
        digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
        bytes: Buffer.byteLength(data['host.weather.example.com.agent-card.json']!),
        probed: true,
      },
    ]);
    expect(cond(plan, 'Published')?.message).toContain('audience public (sha256:');
    expect(plan.events.map((e) => e.reason)).toEqual(['Published']);
  });

  it('writes nothing in steady state (every audience keeps its signatures)', async () => {
    const secret = await key();
    const first = await planReconcile(input(resource(spec()), secret));
    const second = await planReconcile(
      input(resource(spec(), 1, first.status), secret, { liveConfigMap: first.configMap, now: later }),
    );
    expect(second.configMap).toBeUndefined();
    expect(second.statusChanged).toBe(false);
    expect(second.events).toEqual([]);
  });

  it('republishes (and reports it) when only an audience changes', async () => {
    const secret = await key();
    const first = await planReconcile(input(resource(spec()), secret));
    const edited = spec([
      publicAudience({ securityRequirements: [{ schemes: { oidc: { list: ['weather.write'] } } }] }),
    ]);
    const second = await planReconcile(
      input(resource(edited, 2, first.status), secret, { liveConfigMap: first.configMap }),
    );
    expect(second.configMap!.data['agent-card.json']).toBe(first.configMap!.data['agent-card.json']);
    expect(second.configMap!.data['host.weather.example.com.agent-card.json']).not.toBe(
      first.configMap!.data['host.weather.example.com.agent-card.json'],
    );
    expect(second.events.map((e) => e.reason)).toEqual(['Published']);
  });

  it('drops an audience that is removed: its keys leave the ConfigMap and status.audiences goes', async () => {
    const secret = await key();
    const first = await planReconcile(input(resource(spec()), secret));
    const second = await planReconcile(
      input(resource(spec([]), 2, first.status), secret, { liveConfigMap: first.configMap }),
    );
    expect(Object.keys(second.configMap!.data).sort()).toEqual(
      ['agent-card.json', 'agent.json', 'cache-max-age-seconds', ...MAX_AGE_300_KEYS, 'jwks.json'].sort(),
    );
    expect(second.configMap!.data['agent-card.json']).toBe(first.configMap!.data['agent-card.json']);
    expect(second.status).not.toHaveProperty('audiences');
    expect(second.events.map((e) => e.reason)).toEqual(['Published']);
  });

  it('refuses a set of audiences over the ConfigMap limit, keeping the last good card', async () => {
    const secret = await key();
    const good = await planReconcile(input(resource(spec()), secret));
    // 8 audiences of 16 hosts: each card is stored 256 times (card and legacy card per host).
    const card = sampleCard('1.0.0', {
      supportedInterfaces: [{ url: IN_CLUSTER, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      description: 'Answers questions about the weather forecast for a city. '.repeat(100),
    });
    const audiences = Array.from({ length: 8 }, (_, a) => ({
      name: `region-${a}`,
      hosts: Array.from({ length: 16 }, (_, h) => `h${h}.region-${a}.example.com`),
      baseURL: `https://region-${a}.example.com`,
    }));
    const big = { ...spec(audiences), card };
    const plan = await planReconcile(
      input(resource(big, 2, good.status), secret, { liveConfigMap: good.configMap }),
    );
    expect(plan.configMap === undefined).toBe(true); // (not printed: it would be 1.5 MB)
    const published = cond(plan, 'Published')!;
    expect(published).toMatchObject({ status: 'False', reason: 'CardTooLarge' });
    expect(published.message).toContain(`over the ConfigMap limit of ${MAX_CONFIGMAP_DATA_BYTES} bytes`);
    expect(published.message).toContain('region-0');
    expect(published.message).toContain('the last good card stays published');
    expect(plan.status.card).toEqual(good.status.card);
    expect(plan.status.audiences).toEqual(good.status.audiences);
    expect(cond(plan, 'Ready')).toMatchObject({ status: 'False', reason: 'CardTooLarge' });
    expect(plan.events).toContainEqual(expect.objectContaining({ type: 'Warning', reason: 'CardTooLarge' }));
  });

  it('refuses an audience that carries a credential, naming the field and not the value', async () => {
    const secret = await key();
    const good = await planReconcile(input(resource(spec()), secret));
    const token = 'glpat-' + 'x1Y2z3W4'.repeat(3);
    const bad = spec([publicAudience({ baseURL: `https://weather.example.com/${token}` })]);
    const plan = await planReconcile(
      input(resource(bad, 2, good.status), secret, { liveConfigMap: good.configMap }),
    );
    expect(plan.configMap).toBeUndefined();
    expect(cond(plan, 'Accepted')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(cond(plan, 'Accepted')!.message).toContain('spec.audiences[0].baseURL');
    expect(JSON.stringify(plan.status)).not.toContain(token);
    expect(JSON.stringify(plan.events)).not.toContain(token);
    expect(plan.status.card).toEqual(good.status.card);
  });

  it('counts every key and value the way the API server does', () => {
    expect(configMapDataBytes({ ab: 'cde', ü: 'x' })).toBe(2 + 3 + 2 + 1);
    expect(hostKeyPrefix('a.example.com')).toBe('host.a.example.com.');
    expect(hostKeyPrefix('*.example.com')).toBe('wildcard.example.com.');
  });
});

describe('probing audiences', () => {
  const parsed = (audiences: unknown[]) =>
    ({
      card: {
        supportedInterfaces: [{ url: IN_CLUSTER, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      },
      audiences: audiences.map((a) => ({ probe: 'Enabled', ...(a as object) })),
    }) as unknown as AgentCardSpec;

  it('probes every distinct interface once, saying which audiences declare it', () => {
    const s = parsed([
      { name: 'mesh', hosts: ['weather.mesh'] }, // same interfaces as spec.card
      { name: 'public', hosts: ['weather.example.com'], baseURL: 'https://weather.example.com' },
      { name: 'partner', hosts: ['weather.partner.example'], baseURL: 'https://weather.example.com' },
    ]);
    expect(probeTargets(s)).toEqual([
      { url: IN_CLUSTER, protocolBinding: 'JSONRPC', protocolVersion: '1.0', audiences: ['default', 'mesh'] },
      {
        url: 'https://weather.example.com/a2a',
        protocolBinding: 'JSONRPC',
        protocolVersion: '1.0',
        audiences: ['public', 'partner'],
      },
    ]);
  });

  it('leaves out what only a probe: Disabled audience declares; it does not block the verdict', () => {
    const s = parsed([
      {
        name: 'public',
        hosts: ['weather.example.com'],
        baseURL: 'https://weather.example.com',
        probe: 'Disabled',
      },
    ]);
    expect(probeTargets(s).map((t) => t.url)).toEqual([IN_CLUSTER]);
    const results: ProbeResult[] = [
      {
        url: IN_CLUSTER,
        protocolBinding: 'JSONRPC',
        protocolVersion: '1.0',
        reachable: true,
        reason: 'Reachable',
        message: 'ok',
        latencyMs: 3,
        phases: {},
      },
    ];
    const v = interfacesVerdict({ spec: s, generation: 1, live: {}, results, now });
    expect(v.condition).toMatchObject({ status: 'True', reason: 'AllReachable' });
    expect(v.condition.message).toBe('1/1 reachable; audience public not probed (probe: Disabled)');
    expect(v.interfaces).toEqual([expect.objectContaining({ url: IN_CLUSTER, audiences: ['default'] })]);
    // A card without audiences keeps its status as before (no "default" on every entry).
    const plain = { card: s.card } as AgentCardSpec;
    const w = interfacesVerdict({ spec: plain, generation: 1, live: {}, results, now });
    expect(w.condition.message).toBe('1/1 reachable');
    expect(w.interfaces![0]).not.toHaveProperty('audiences');
  });
});
