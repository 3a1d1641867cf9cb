import { describe, expect, it } from 'vitest';
import { generateSigningJwk } from '../../../operator/card/keygen.ts';
import { verifyCard } from '../../../operator/card/verify.ts';
import {
  planReconcile,
  type AgentCardObject,
  type PlanInput,
  type SecretView,
} from '../../../operator/controller/plan.ts';
import { disabledVerdict } from '../../../operator/controller/probes.ts';
import { sampleCard } from '../../support/cards.ts';

const now = new Date('2030-01-01T00:00:00Z');
const later = new Date('2030-01-01T00:10:00Z');

function resource(spec: unknown, generation = 1, status?: unknown, name = 'weather'): AgentCardObject {
  return { metadata: { name, namespace: 'agents', uid: 'uid-1', generation }, spec, status };
}

const signed = (secret = 'key', extra: Record<string, unknown> = {}) => ({
  card: sampleCard(),
  signing: { keys: [{ secretRef: { name: secret, key: 'jwk' } }], ...extra },
});

async function secretWith(kid: string, alg = 'ES256', labelled = true): Promise<SecretView> {
  const jwk = JSON.stringify(await generateSigningJwk(alg, kid));
  return { data: { jwk: Buffer.from(jwk).toString('base64') }, labelled };
}

function input(
  res: AgentCardObject,
  secrets: Record<string, SecretView | undefined>,
  over: Partial<PlanInput> = {},
): PlanInput {
  return {
    resource: res,
    secrets: new Map(Object.entries(secrets)),
    liveConfigMap: undefined,
    interfaces: () => disabledVerdict(res.metadata.generation ?? 0, 'probes are off'),
    now,
    ...over,
  };
}

const cond = (plan: { status: { conditions?: Array<{ type: string }> } }, type: string) =>
  plan.status.conditions?.find((c) => c.type === type) as Record<string, unknown> | undefined;

describe('planReconcile', () => {
  it('plans a signed ConfigMap, a full status and the first events', async () => {
    const key = await secretWith('k1');
    const plan = await planReconcile(input(resource(signed()), { key }));
    expect(plan.configMap?.metadata.name).toBe('weather-agent-card');
    const files = plan.configMap!.data;
    const jwks = JSON.parse(files['jwks.json']!);
    expect((await verifyCard(JSON.parse(files['agent-card.json']!), jwks)).verified).toBe(true);
    expect(plan.status.observedGeneration).toBe(1);
    expect(plan.status.card).toMatchObject({ version: '1.0.0', configMap: 'weather-agent-card' });
    expect(plan.status.card!.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(plan.status.signatures).toEqual([{ kid: 'k1', alg: 'ES256' }]);
    expect(plan.status.conditions!.map((c) => `${c.type}=${c.status}`)).toEqual([
      'Accepted=True',
      'Signed=True',
      'Published=True',
      'InterfacesReachable=Unknown',
      'Ready=True',
    ]);
    expect(plan.statusChanged).toBe(true);
    expect(plan.events.map((e) => e.reason)).toEqual(['Published']);
    expect(plan.events[0]!.message).toContain('signed with k1 (ES256)');
    expect(plan.ready).toBe('True');
    expect(plan.spec?.card.version).toBe('1.0.0');
  });

  it('is idempotent: the same inputs against what it published plan no write and no event', async () => {
    const key = await secretWith('k1'); // ES256: each signature differs, so this proves the reuse
    const first = await planReconcile(input(resource(signed()), { key }));
    const second = await planReconcile(
      input(resource(signed(), 1, first.status), { key }, { liveConfigMap: first.configMap, now: later }),
    );
    expect(second.configMap).toBeUndefined();
    expect(second.statusChanged).toBe(false);
    expect(second.events).toEqual([]);
    expect(second.status).toEqual(first.status);
  });

  it('signs again when the key, the jku or the card changes', async () => {
    const key = await secretWith('k1');
    const first = await planReconcile(input(resource(signed()), { key }));
    const live = { liveConfigMap: first.configMap };
    const rotated = await planReconcile(
      input(resource(signed(), 1, first.status), { key: await secretWith('k2') }, live),
    );
    expect(rotated.status.signatures).toEqual([{ kid: 'k2', alg: 'ES256' }]);
    expect(rotated.configMap).toBeDefined();
    const sameKidNewKey = await planReconcile(
      input(resource(signed(), 1, first.status), { key: await secretWith('k1') }, live),
    );
    expect(sameKidNewKey.configMap).toBeDefined();
    const withJku = await planReconcile(
      input(
        resource(
          signed('key', { jku: 'https://weather.example.com/.well-known/jwks.json' }),
          2,
          first.status,
        ),
        { key },
        live,
      ),
    );
    expect(withJku.configMap).toBeDefined();
    const header = JSON.parse(
      Buffer.from(
        JSON.parse(withJku.configMap!.data['agent-card.json']!).signatures[0].protected,
        'base64url',
      ).toString(),
    );
    expect(header.jku).toBe('https://weather.example.com/.well-known/jwks.json');
  });

  it('rejects an invalid spec and touches nothing else', async () => {
    const key = await secretWith('k1');
    const good = await planReconcile(input(resource(signed()), { key }));
    const badSpec = {
      ...signed(),
      card: sampleCard('1.1.0', { description: 'contact us with AKIAIOSFODNN7EXAMPLE' }),
    };
    const plan = await planReconcile(
      input(resource(badSpec, 2, good.status), { key }, { liveConfigMap: good.configMap, now: later }),
    );
    expect(plan.configMap).toBeUndefined();
    expect(cond(plan, 'Accepted')).toMatchObject({
      status: 'False',
      reason: 'InvalidSpec',
      observedGeneration: 2,
    });
    expect(String(cond(plan, 'Accepted')!.message)).toContain('spec.card.description');
    expect(JSON.stringify(plan.status)).not.toContain('AKIAIOSFODNN7EXAMPLE');
    // The published card is still described as it is: generation 1, same digest.
    expect(cond(plan, 'Published')).toMatchObject({ status: 'True', observedGeneration: 1 });
    expect(plan.status.card).toEqual(good.status.card);
    expect(cond(plan, 'Ready')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(plan.status.observedGeneration).toBe(2);
    expect(plan.events).toEqual([expect.objectContaining({ type: 'Warning', reason: 'InvalidSpec' })]);
    expect(plan.spec).toBeUndefined();
  });

  it('a missing Secret or key: Signed=False, nothing published, a message that says what to do', async () => {
    const missing = await planReconcile(input(resource(signed('nope')), {}));
    expect(missing.configMap).toBeUndefined();
    expect(cond(missing, 'Signed')).toMatchObject({ status: 'False', reason: 'SigningKeyNotFound' });
    expect(String(cond(missing, 'Signed')!.message)).toMatch(
      /Secret "nope" not found in namespace agents; create it .* "jwk"/,
    );
    expect(String(cond(missing, 'Signed')!.message)).toContain('agentcard.dev/signing-key=true');
    expect(cond(missing, 'Published')).toMatchObject({ status: 'False', reason: 'NotPublished' });
    expect(missing.events.map((e) => `${e.type}/${e.reason}`)).toEqual(['Warning/SigningKeyNotFound']);

    const wrongKey = await planReconcile(
      input(resource(signed()), { key: { data: { other: 'eA==' }, labelled: true } }),
    );
    expect(String(cond(wrongKey, 'Signed')!.message)).toContain('has no key "jwk" (its keys: other)');
  });

  it('an unusable key: SigningKeyInvalid, never echoing the material', async () => {
    const material = '{"kty":"EC","crv":"P-256","d":"c2VjcmV0LXZhbHVlLXRoYXQtbXVzdC1ub3QtbGVhaw"}';
    const plan = await planReconcile(
      input(resource(signed()), {
        key: { data: { jwk: Buffer.from(material).toString('base64') }, labelled: true },
      }),
    );
    expect(cond(plan, 'Signed')).toMatchObject({ status: 'False', reason: 'SigningKeyInvalid' });
    expect(JSON.stringify(plan)).not.toContain('c2VjcmV0LXZhbHVl');
  });

  it('hints the watch label for unlabelled key Secrets', async () => {
    const plan = await planReconcile(
      input(resource(signed()), { key: await secretWith('k1', 'EdDSA', false) }),
    );
    expect(cond(plan, 'Signed')).toMatchObject({ status: 'True' });
    expect(String(cond(plan, 'Signed')!.message)).toContain(
      'label Secret "key" with agentcard.dev/signing-key=true',
    );
  });

  it('an unsigned card: Signed=False SigningNotConfigured, Ready=True, empty JWKS', async () => {
    const plan = await planReconcile(
      input(resource({ card: sampleCard(), serving: { cacheMaxAgeSeconds: 30 } }), {}),
    );
    expect(cond(plan, 'Signed')).toMatchObject({ status: 'False', reason: 'SigningNotConfigured' });
    expect(plan.ready).toBe('True');
    expect(plan.configMap!.data['jwks.json']).toBe('{"keys":[]}');
    expect(plan.configMap!.data['cache-max-age-seconds']).toBe('30');
    expect(plan.status.signatures).toBeUndefined();
    expect(plan.events.map((e) => e.reason)).toEqual(['Published']);
  });

  it('a failed ConfigMap write: Published=False PublishFailed and the old card kept in status', async () => {
    const key = await secretWith('k1');
    const good = await planReconcile(input(resource(signed()), { key }));
    const spec2 = { ...signed(), card: sampleCard('2.0.0') };
    const plan = await planReconcile(
      input(resource(spec2, 2, good.status), { key }, { publishError: 'HTTP 500: etcd is down', now: later }),
    );
    expect(plan.configMap).toBeUndefined();
    expect(cond(plan, 'Published')).toMatchObject({ status: 'False', reason: 'PublishFailed' });
    expect(String(cond(plan, 'Published')!.message)).toContain('HTTP 500: etcd is down');
    expect(plan.status.card).toEqual(good.status.card);
    expect(plan.ready).toBe('False');
  });

  it('refuses a name whose ConfigMap name would be too long', async () => {
    const plan = await planReconcile(
      input(resource({ card: sampleCard() }, 1, undefined, 'a'.repeat(243)), {}),
    );
    expect(cond(plan, 'Accepted')).toMatchObject({ status: 'False', reason: 'InvalidName' });
    expect(plan.configMap).toBeUndefined();
  });
});

describe('planReconcile: status.serving', () => {
  it('reports Pods without the sidecar in status.serving, the Published message and one warning', async () => {
    const serving = { podsRequesting: 2, podsMissingSidecar: 1, missing: ['agent-7'] };
    const plan = await planReconcile(input(resource({ card: sampleCard() }), {}, { serving }));
    expect(plan.status.serving).toEqual(serving);
    expect(String(cond(plan, 'Published')!.message)).toContain(
      '1 of 2 Pods requesting this card run without the sidecar',
    );
    expect(String(cond(plan, 'Published')!.message)).toContain('agent-7');
    expect(plan.events.map((e) => `${e.type}/${e.reason}`)).toEqual([
      'Normal/Published',
      'Warning/PodsMissingSidecar',
    ]);
    // Nothing new: no event; all Pods fixed: no event either, and the message is clean again.
    const again = await planReconcile(
      input(
        resource({ card: sampleCard() }, 1, plan.status),
        {},
        { serving, liveConfigMap: plan.configMap, now: later },
      ),
    );
    expect(again.events).toEqual([]);
    expect(again.statusChanged).toBe(false);
    const fixed = { podsRequesting: 2, podsMissingSidecar: 0, missing: [] };
    const healed = await planReconcile(
      input(
        resource({ card: sampleCard() }, 1, plan.status),
        {},
        { serving: fixed, liveConfigMap: plan.configMap, now: later },
      ),
    );
    expect(healed.events).toEqual([]);
    expect(healed.status.serving).toEqual(fixed);
    expect(String(cond(healed, 'Published')!.message)).not.toContain('sidecar');
  });
});
