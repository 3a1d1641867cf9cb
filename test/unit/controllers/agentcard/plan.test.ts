import { generateKeyPairSync } from 'node:crypto';
import { configMapDataBytes, MAX_CONFIGMAP_DATA_BYTES } from '../../../../operator/runtime/configmaps.ts';
import { describe, expect, it } from 'vitest';
import { generateSigningJwk } from '../../../../operator/card/keygen.ts';
import { verifyCard } from '../../../../operator/card/verify.ts';
import { signVariants } from '../../../../operator/controllers/agentcard/audiences/sign.ts';
import { validateSpec } from '../../../../operator/card/validate.ts';
import {
  planReconcile,
  reconcilePlan,
  type CardEngine,
  type PlanInput,
} from '../../../../operator/controllers/agentcard/plan.ts';
import { type AgentCardObject } from '../../../../operator/api/objects.ts';
import { type SecretView } from '../../../../operator/signing/keys.ts';
import { disabledVerdict } from '../../../../operator/controllers/agentcard/probes.ts';
import { sampleCard } from '../../../support/cards.ts';

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
    expect(String(cond(missing, 'Signed')!.message)).toContain('the card is signed as soon as it exists');
    expect(String(cond(missing, 'Signed')!.message)).not.toContain('label');
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

  it('an unlabelled key Secret signs like a labelled one; the message says nothing about labels', async () => {
    const plan = await planReconcile(
      input(resource(signed()), { key: await secretWith('k1', 'EdDSA', false) }),
    );
    expect(cond(plan, 'Signed')).toMatchObject({ status: 'True', message: 'signed with k1 (EdDSA)' });
  });

  it('hostile key Secrets: garbage, a public key, a key of the wrong algorithm; the last good card stays', async () => {
    const good = await planReconcile(input(resource(signed()), { key: await secretWith('k1') }));
    const live = { metadata: good.configMap!.metadata, data: good.configMap!.data };
    const publicJwk = { ...(await generateSigningJwk('ES256', 'k9')) } as Record<string, unknown>;
    delete publicJwk.d;
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const cases: Array<[string, string, RegExp, Record<string, unknown>?]> = [
      ['binary garbage', '\u0000\u00ff\u0013garbage', /neither a private JWK \(JSON\) nor a PEM private key/],
      ['a public JWK', JSON.stringify(publicJwk), /the JWK is a public key; signing needs the private key/],
      [
        'a PEM public key',
        publicKey.export({ type: 'spki', format: 'pem' }).toString(),
        /the PEM holds a public key or certificate/,
      ],
      [
        'an ES256 key for RS256',
        JSON.stringify(await generateSigningJwk('ES256', 'k8')),
        /the JWK says alg ES256 but alg RS256 was asked for/,
        { alg: 'RS256' },
      ],
      [
        'an EC key without alg, for RS256',
        JSON.stringify({ ...(await generateSigningJwk('ES256', 'k7')), alg: undefined }),
        /alg RS256 needs an RSA key, but the key is EC P-256/,
        { alg: 'RS256' },
      ],
    ];
    for (const [what, material, why, ref] of cases) {
      const spec = {
        card: sampleCard(),
        signing: { keys: [{ secretRef: { name: 'key', key: 'jwk' }, ...ref }] },
      };
      const plan = await planReconcile(
        input(
          resource(spec, 2, good.status),
          { key: { data: { jwk: Buffer.from(material).toString('base64') }, labelled: false } },
          { liveConfigMap: live },
        ),
      );
      expect(cond(plan, 'Signed'), what).toMatchObject({ status: 'False', reason: 'SigningKeyInvalid' });
      expect(String(cond(plan, 'Signed')!.message), what).toMatch(why);
      expect(String(cond(plan, 'Signed')!.message), what).toContain('the last good card stays published');
      expect(plan.configMap, what).toBeUndefined(); // the good ConfigMap is not touched
      expect(cond(plan, 'Published'), what).toMatchObject({ status: 'True' });
      expect(plan.status.card, what).toEqual(good.status.card);
    }
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
    const plan = await planReconcile(input(resource(spec2, 2, good.status), { key }, { now: later }), {
      result: 'PublishFailed',
      message: 'HTTP 500: etcd is down',
      error: new Error('etcd is down'),
    });
    expect(plan.configMap).toBeUndefined();
    expect(cond(plan, 'Published')).toMatchObject({ status: 'False', reason: 'PublishFailed' });
    expect(String(cond(plan, 'Published')!.message)).toContain('HTTP 500: etcd is down');
    expect(plan.status.card).toEqual(good.status.card);
    expect(plan.ready).toBe('False');
  });

  it('a write the API server refuses (422): PublishRejected, and the message says what is served', async () => {
    const key = await secretWith('k1');
    const first = await planReconcile(input(resource(signed()), { key }), {
      result: 'PublishRejected',
      message: 'HTTP 422: too long',
    });
    expect(cond(first, 'Published')).toMatchObject({ status: 'False', reason: 'PublishRejected' });
    expect(String(cond(first, 'Published')!.message)).toMatch(
      /refused ConfigMap weather-agent-card: HTTP 422: too long; not retried until the AgentCard changes; nothing is published yet$/,
    );
    const good = await planReconcile(input(resource(signed()), { key }));
    const live = { metadata: good.configMap!.metadata, data: good.configMap!.data };
    const later2 = await planReconcile(
      input(resource(signed(), 2, good.status), { key }, { liveConfigMap: live }),
      {
        result: 'PublishFailed',
        message: 'HTTP 500: x',
        error: new Error('x'),
      },
    );
    expect(String(cond(later2, 'Published')!.message)).toMatch(
      /retrying with backoff; the last good card stays published$/,
    );
  });

  it('the published size is checked before any write, on the whole data map, at the exact boundary', async () => {
    const spec = { card: sampleCard() }; // unsigned: the same bytes on every run
    const fits = await planReconcile(input(resource(spec), {}));
    const size = configMapDataBytes(fits.configMap!.data);
    const atLimit = await planReconcile(input(resource(spec), {}, { maxConfigMapBytes: size }));
    expect(atLimit.configMap).toBeDefined();
    expect(cond(atLimit, 'Published')).toMatchObject({ status: 'True' });

    const over = await planReconcile(input(resource(spec), {}, { maxConfigMapBytes: size - 1 }));
    expect(over.configMap).toBeUndefined();
    expect(cond(over, 'Published')).toMatchObject({ status: 'False', reason: 'CardTooLarge' });
    expect(String(cond(over, 'Published')!.message)).toMatch(
      new RegExp(
        `would take ${size} bytes .*over the ConfigMap limit of ${size - 1} bytes.*; nothing is published yet$`,
      ),
    );
    expect(over.status.card).toBeUndefined();
    expect(over.ready).toBe('False');
    expect(over.events.map((e) => `${e.type}/${e.reason}`)).toContain('Warning/CardTooLarge');

    // A published card, then an edit that no longer fits: the old card stays, and says so.
    const live = { metadata: fits.configMap!.metadata, data: fits.configMap!.data };
    const big = { card: { ...sampleCard('2.0.0'), description: 'x'.repeat(MAX_CONFIGMAP_DATA_BYTES / 2) } };
    const grown = await planReconcile(input(resource(big, 2, fits.status), {}, { liveConfigMap: live }));
    expect(grown.configMap).toBeUndefined();
    expect(cond(grown, 'Published')).toMatchObject({ status: 'False', reason: 'CardTooLarge' });
    expect(String(cond(grown, 'Published')!.message)).toMatch(
      /agent-card\.json \d+, agent\.json \d+.*over the ConfigMap limit of 1048576 bytes.*; the last good card stays published$/,
    );
    expect(grown.status.card).toEqual(fits.status.card);
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
    const fixed = { podsRequesting: 2, podsMissingSidecar: 0 };
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

describe('reconcilePlan: decide once, derive the status for the publish result', () => {
  /** The real card engine, counting its calls. */
  function countingEngine() {
    const calls = { validate: 0, sign: 0 };
    const engine: CardEngine = {
      validate: (spec) => {
        calls.validate++;
        return validateSpec(spec);
      },
      sign: (...args) => {
        calls.sign++;
        return signVariants(...args);
      },
    };
    return { calls, engine };
  }

  it('a failed publish validates and signs once, and reports PublishFailed', async () => {
    const key = await secretWith('k1');
    const { calls, engine } = countingEngine();
    const attempted: string[] = [];
    const { result, plan } = await reconcilePlan(
      input(resource(signed()), { key }),
      async (cm) => {
        attempted.push(cm.metadata.name);
        return { result: 'PublishFailed', message: 'HTTP 500: etcd is down', error: new Error('down') };
      },
      engine,
    );
    expect(attempted).toEqual(['weather-agent-card']);
    expect(calls).toEqual({ validate: 1, sign: 1 });
    expect(result.result).toBe('PublishFailed');
    expect(cond(plan, 'Published')).toMatchObject({ status: 'False', reason: 'PublishFailed' });
    expect(plan.configMap).toBeUndefined();
    expect(plan.status.card).toBeUndefined(); // nothing was ever served
    expect(plan.ready).toBe('False');
  });

  it('a 422 validates and signs once; an outage leaves the status as it is', async () => {
    const key = await secretWith('k1');
    const good = await planReconcile(input(resource(signed()), { key }));
    const spec2 = { ...signed(), card: sampleCard('2.0.0') };
    const rejected = countingEngine();
    const r = await reconcilePlan(
      input(resource(spec2, 2, good.status), { key }),
      async () => ({ result: 'PublishRejected', message: 'HTTP 422: denied' }),
      rejected.engine,
    );
    expect(rejected.calls).toEqual({ validate: 1, sign: 1 });
    expect(cond(r.plan, 'Published')).toMatchObject({ reason: 'PublishRejected', observedGeneration: 2 });
    expect(r.plan.status.card).toEqual(good.status.card); // the last good card is what is served

    const outage = countingEngine();
    const o = await reconcilePlan(
      input(resource(spec2, 2, good.status), { key }),
      async () => ({ result: 'Outage', error: new Error('connection refused') }),
      outage.engine,
    );
    expect(outage.calls).toEqual({ validate: 1, sign: 1 });
    expect(o.plan.statusChanged).toBe(false);
    expect(o.plan.events).toEqual([]);
    expect(o.plan.configMap).toBeUndefined();
  });

  it('nothing to write: no publish, Published=True', async () => {
    const key = await secretWith('k1');
    const first = await planReconcile(input(resource(signed()), { key }));
    const live = { metadata: first.configMap!.metadata, data: first.configMap!.data };
    const { calls, engine } = countingEngine();
    let published = 0;
    const { plan } = await reconcilePlan(
      input(resource(signed(), 1, first.status), { key }, { liveConfigMap: live, now: later }),
      async () => {
        published++;
        return { result: 'Published' };
      },
      engine,
    );
    expect(published).toBe(0);
    expect(calls).toEqual({ validate: 1, sign: 1 });
    expect(plan.statusChanged).toBe(false);
    expect(cond(plan, 'Published')).toMatchObject({ status: 'True' });
  });
});
