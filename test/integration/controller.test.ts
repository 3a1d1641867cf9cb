// The controller against the real control plane: it runs in this process (no leader election,
// probes off) and watches one test namespace.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { verifyCard } from '../../operator/card/verify.ts';
import { kubeconfigPath } from '../support/cluster.ts';
import { runTool } from '../support/tools.ts';
import {
  condition,
  privateJwk,
  metricValue,
  operatorMetrics,
  sampleCard,
  waitFor,
  useOperatorInNamespace,
} from '../support/operator.ts';

const { api, ns, op } = useOperatorInNamespace('controller', { flags: ['--resync', '5s'] });

const signedSpec = (secret: string, version = '1.0.0', extra: Record<string, unknown> = {}) => ({
  card: sampleCard(version),
  signing: { keys: [{ secretRef: { name: secret, key: 'jwk' } }] },
  ...extra,
});

async function readyCard(name: string, timeoutMs = 30_000) {
  return waitFor(
    `AgentCard ${name} Ready=True`,
    async () => {
      const card = await api.getCard(ns.name, name);
      return condition(card, 'Ready')?.status === 'True' ? card : undefined;
    },
    timeoutMs,
  );
}

/**
 * A signed card of the case's own (its name, its own labelled key Secret `<name>-key`), Ready.
 * Every case that needs a published card makes one, so each runs alone (`-t`) and in any order.
 */
async function publishedCard(name: string, kid: string, extra: Record<string, unknown> = {}, alg = 'ES256') {
  await api.putSecret(ns.name, `${name}-key`, { jwk: await privateJwk(kid, alg) }, true);
  await api.createCard(ns.name, name, signedSpec(`${name}-key`, '1.0.0', extra));
  return readyCard(name);
}

describe('controller: reconcile on the real API server', () => {
  it('publishes a signed card in an owned ConfigMap and reports Ready', async () => {
    await api.putSecret(ns.name, 'weather-key', { jwk: await privateJwk('k1') }, true);
    await api.createCard(
      ns.name,
      'weather',
      signedSpec('weather-key', '1.0.0', { serving: { cacheMaxAgeSeconds: 60 } }),
    );
    const card = await readyCard('weather');

    const cm = (await api.getConfigMap(ns.name, 'weather-agent-card'))!;
    expect(cm.metadata?.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'agentcard-operator',
      'agentcard.dev/card': 'weather',
    });
    expect(cm.metadata?.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'AgentCard',
        name: 'weather',
        uid: card.metadata.uid,
        controller: true,
      }),
    ]);
    expect(Object.keys(cm.data ?? {}).sort()).toEqual([
      'agent-card.json',
      'agent.json',
      'cache-max-age-seconds',
      'cache-max-age-seconds.place0-digit0',
      'cache-max-age-seconds.place1-digit6',
      'jwks.json',
    ]);
    expect(cm.data!['cache-max-age-seconds']).toBe('60');

    const served = cm.data!['agent-card.json']!;
    const jwks = JSON.parse(cm.data!['jwks.json']!) as { keys: Array<{ kid: string; d?: string }> };
    expect(jwks.keys.map((k) => k.kid)).toEqual(['k1']);
    expect(jwks.keys.some((k) => 'd' in k)).toBe(false); // public keys only
    const verified = await verifyCard(JSON.parse(served), jwks as never);
    expect(verified.verified).toBe(true);
    const legacy = JSON.parse(cm.data!['agent.json']!) as Record<string, unknown>;
    expect(legacy.url).toBe('https://weather.example.com/a2a');

    expect(card.status?.observedGeneration).toBe(1);
    expect(card.status?.card).toEqual({
      digest: `sha256:${createHash('sha256').update(served, 'utf8').digest('hex')}`,
      bytes: Buffer.byteLength(served, 'utf8'),
      version: '1.0.0',
      configMap: 'weather-agent-card',
    });
    expect(card.status?.signatures).toEqual([{ kid: 'k1', alg: 'ES256' }]);
    for (const type of ['Accepted', 'Signed', 'Published']) {
      expect(condition(card, type)).toMatchObject({ status: 'True', observedGeneration: 1 });
    }
    expect(condition(card, 'InterfacesReachable')).toMatchObject({
      status: 'Unknown',
      reason: 'ProbesDisabled',
    });

    const events = await waitFor('a Published event', async () => {
      const list = await api.events(ns.name, 'weather');
      return list.some((e) => e.reason === 'Published') ? list : undefined;
    });
    expect(events).toEqual([
      { type: 'Normal', reason: 'Published', message: expect.stringContaining('signed with k1 (ES256)') },
    ]);

    const waited = await runTool(
      'kubectl',
      ['wait', '--for=condition=Ready', 'agentcard/weather', '-n', ns.name, '--timeout=20s'],
      {
        kubeconfig: kubeconfigPath(),
      },
    );
    expect(waited.code, waited.stderr).toBe(0);
  });

  it('follows a spec change: new bytes, new version, observedGeneration', async () => {
    const before = await publishedCard('change', 'c1', { serving: { cacheMaxAgeSeconds: 60 } });
    const readySince = condition(before, 'Ready')!.lastTransitionTime;
    await api.replaceSpec(
      ns.name,
      'change',
      signedSpec('change-key', '1.1.0', { serving: { cacheMaxAgeSeconds: 60 } }),
    );
    const after = await waitFor('version 1.1.0 in status', async () => {
      const c = await api.getCard(ns.name, 'change');
      return c?.status?.card?.version === '1.1.0' && c.status.observedGeneration === 2 ? c : undefined;
    });
    const cm = (await api.getConfigMap(ns.name, 'change-agent-card'))!;
    expect(JSON.parse(cm.data!['agent-card.json']!).version).toBe('1.1.0');
    expect(condition(after, 'Ready')).toMatchObject({
      status: 'True',
      observedGeneration: 2,
      lastTransitionTime: readySince,
    });
  });

  it('rejects an invalid spec and keeps the last good card published', async () => {
    // Its own card and key: runs alone with -t.
    await api.putSecret(ns.name, 'invalid-key', { jwk: await privateJwk('i1') }, true);
    await api.createCard(ns.name, 'invalid', signedSpec('invalid-key', '1.1.0'));
    await readyCard('invalid');
    const cmBefore = (await api.getConfigMap(ns.name, 'invalid-agent-card'))!;
    const configMapWrites = async () =>
      metricValue(await operatorMetrics(op.metricsPort()), 'agentcard_api_writes_total', {
        resource: 'configmap',
      });
    const writesBefore = await configMapWrites();
    const leaked = 'AKIAIOSFODNN7EXAMPLE';
    const bad = signedSpec('invalid-key', '1.2.0');
    (bad.card as Record<string, unknown>).description = `Weather answers; our key is ${leaked}`;
    await api.replaceSpec(ns.name, 'invalid', bad);
    const card = await waitFor('Accepted=False', async () => {
      const c = await api.getCard(ns.name, 'invalid');
      return condition(c, 'Accepted')?.status === 'False' ? c : undefined;
    });
    const accepted = condition(card, 'Accepted')!;
    expect(accepted.reason).toBe('InvalidSpec');
    expect(accepted.message).toContain('spec.card.description');
    expect(accepted.message).not.toContain(leaked);
    expect(condition(card, 'Ready')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(card.status?.observedGeneration).toBe(2);
    expect(card.status?.card?.version).toBe('1.1.0');
    // Nothing was written for the refused spec, proven by counting instead of sleeping: a marker
    // card created afterwards is reconciled after it (a reconcile applies its ConfigMap before its
    // status, and the refused spec's status is already there), and the operator's ConfigMap writes
    // grew by the marker's one only.
    await api.createCard(ns.name, 'invalid-marker', { card: sampleCard('9.0.0') });
    await readyCard('invalid-marker');
    expect(await configMapWrites()).toBe(writesBefore + 1);
    const cmAfter = (await api.getConfigMap(ns.name, 'invalid-agent-card'))!;
    expect(cmAfter.data).toEqual(cmBefore.data);
    expect(cmAfter.metadata?.resourceVersion).toBe(cmBefore.metadata?.resourceVersion);
    const warning = await waitFor('an InvalidSpec event', async () =>
      (await api.events(ns.name, 'invalid')).find((e) => e.reason === 'InvalidSpec'),
    );
    expect(warning.type).toBe('Warning');
    expect(warning.message).not.toContain(leaked);

    await api.replaceSpec(ns.name, 'invalid', signedSpec('invalid-key', '1.2.0'));
    const fixed = await readyCard('invalid');
    expect(fixed.status?.card?.version).toBe('1.2.0');
  });

  it('waits for a missing signing Secret and signs by itself once it appears', async () => {
    await api.createCard(ns.name, 'late', signedSpec('late-key'));
    const card = await waitFor('Signed=False', async () => {
      const c = await api.getCard(ns.name, 'late');
      return condition(c, 'Signed')?.status === 'False' ? c : undefined;
    });
    expect(condition(card, 'Signed')!.reason).toBe('SigningKeyNotFound');
    expect(condition(card, 'Signed')!.message).toContain('Secret "late-key" not found');
    // Truthful: nothing was ever published for this card.
    expect(condition(card, 'Signed')!.message).toMatch(
      /the card is signed as soon as it exists; nothing is published yet$/,
    );
    expect(condition(card, 'Published')).toMatchObject({ status: 'False', reason: 'NotPublished' });
    expect(await api.getConfigMap(ns.name, 'late-agent-card')).toBeUndefined();
    expect((await api.events(ns.name, 'late')).find((e) => e.reason === 'SigningKeyNotFound')?.type).toBe(
      'Warning',
    );

    const t0 = Date.now();
    await api.putSecret(ns.name, 'late-key', { jwk: await privateJwk('late-1') }, true);
    // The wait is longer than the bound, so a slow signing fails on the bound (with the time it
    // took), not as a timeout; and Ready turned True after the Secret appeared, not before.
    const ready = await readyCard('late', 30_000);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(Date.parse(condition(ready, 'Ready')!.lastTransitionTime)).toBeGreaterThanOrEqual(
      Math.floor(t0 / 1000) * 1000,
    );
    expect(await api.getConfigMap(ns.name, 'late-agent-card')).toBeDefined();
  });

  it('re-signs within seconds when a labelled key Secret is rotated', async () => {
    await publishedCard('rotated', 'k1');
    const oldJwks = JSON.parse((await api.getConfigMap(ns.name, 'rotated-agent-card'))!.data!['jwks.json']!);
    const t0 = Date.now();
    await api.putSecret(ns.name, 'rotated-key', { jwk: await privateJwk('k2', 'EdDSA') }, true);
    const card = await waitFor(
      'kid k2 in status',
      async () => {
        const c = await api.getCard(ns.name, 'rotated');
        return c?.status?.signatures?.[0]?.kid === 'k2' ? c : undefined;
      },
      30_000,
    );
    // As above: the wait outlasts the bound, which is asserted on its own.
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(card.status?.signatures).toEqual([{ kid: 'k2', alg: 'EdDSA' }]);
    const cm = (await api.getConfigMap(ns.name, 'rotated-agent-card'))!;
    const served = JSON.parse(cm.data!['agent-card.json']!);
    expect((await verifyCard(served, JSON.parse(cm.data!['jwks.json']!))).verified).toBe(true);
    expect((await verifyCard(served, oldJwks)).verified).toBe(false);
  });

  it('reads an unlabelled Secret directly and picks up its rotation through the metadata watch', async () => {
    await api.putSecret(ns.name, 'plain-key', { jwk: await privateJwk('p1') }, false);
    await api.createCard(ns.name, 'plain', signedSpec('plain-key'));
    const card = await readyCard('plain');
    expect(condition(card, 'Signed')!.message).toBe('signed with p1 (ES256)');
    await api.putSecret(ns.name, 'plain-key', { jwk: await privateJwk('p2') }, false);
    await waitFor(
      'kid p2 after the rotation',
      async () => (await api.getCard(ns.name, 'plain'))?.status?.signatures?.[0]?.kid === 'p2',
      20_000,
    );
  });

  it('reports an unusable key as SigningKeyInvalid without echoing it', async () => {
    const garbage = 'zzSECRETzz';
    await api.putSecret(ns.name, 'bad-key', { jwk: `{"kty":"EC","crv":"P-256","d":"${garbage}"}` }, true);
    await api.createCard(ns.name, 'bad', signedSpec('bad-key'));
    const card = await waitFor('Signed=False', async () => {
      const c = await api.getCard(ns.name, 'bad');
      return condition(c, 'Signed')?.status === 'False' ? c : undefined;
    });
    expect(condition(card, 'Signed')!.reason).toBe('SigningKeyInvalid');
    expect(JSON.stringify(card.status)).not.toContain(garbage);
    expect(op.logs.join('\n')).not.toContain(garbage);
  });

  it('repairs an owned ConfigMap that someone else edits or deletes', async () => {
    // EdDSA, whose signatures are deterministic: the card signed again is byte for byte the one
    // that was served before the edit.
    await publishedCard('repaired', 'r1', {}, 'EdDSA');
    const good = (await api.getConfigMap(ns.name, 'repaired-agent-card'))!;
    await api.core.replaceNamespacedConfigMap({
      namespace: ns.name,
      name: 'repaired-agent-card',
      body: { ...good, data: { ...good.data, 'agent-card.json': '{}' } },
    });
    await waitFor('the ConfigMap restored', async () => {
      const cm = await api.getConfigMap(ns.name, 'repaired-agent-card');
      return cm?.data?.['agent-card.json'] === good.data!['agent-card.json'];
    });
    await api.core.deleteNamespacedConfigMap({ namespace: ns.name, name: 'repaired-agent-card' });
    await waitFor('the ConfigMap recreated', async () => {
      const cm = await api.getConfigMap(ns.name, 'repaired-agent-card');
      return cm?.data?.['agent-card.json'] === good.data!['agent-card.json'];
    });
  });

  it('repairs an edit of the v0.3 card alone, and rewrites nothing else', async () => {
    // ES256, whose signatures are randomized: a card signed again differs from the one it
    // replaces, so equal bytes prove a card was kept, not re-signed.
    await publishedCard('legacy', 'v1');
    const good = (await api.getConfigMap(ns.name, 'legacy-agent-card'))!;
    const edited = '{"edited":true}';
    await api.core.replaceNamespacedConfigMap({
      namespace: ns.name,
      name: 'legacy-agent-card',
      body: { ...good, data: { ...good.data, 'agent.json': edited } },
    });
    const restored = await waitFor('the v0.3 card restored', async () => {
      const cm = await api.getConfigMap(ns.name, 'legacy-agent-card');
      const legacy = cm?.data?.['agent.json'];
      return legacy !== undefined && legacy !== edited ? cm : undefined;
    });
    const { signatures: _before, ...legacyBefore } = JSON.parse(good.data!['agent.json']!);
    const { signatures: _after, ...legacyAfter } = JSON.parse(restored.data!['agent.json']!);
    expect(legacyAfter).toEqual(legacyBefore);
    const jwks = JSON.parse(restored.data!['jwks.json']!);
    expect((await verifyCard(JSON.parse(restored.data!['agent.json']!), jwks)).verified).toBe(true);
    // The signed v1.0 card was kept (same bytes, same signatures), since only the v0.3 card differed.
    expect({ ...restored.data, 'agent.json': undefined }).toEqual({ ...good.data, 'agent.json': undefined });
  });

  it('publishes an unsigned card when spec.signing is absent, and says so', async () => {
    await api.createCard(ns.name, 'open', { card: sampleCard('2.0.0') });
    const card = await readyCard('open');
    expect(condition(card, 'Signed')).toMatchObject({ status: 'False', reason: 'SigningNotConfigured' });
    expect(condition(card, 'Ready')!.message).toContain('unsigned');
    const cm = (await api.getConfigMap(ns.name, 'open-agent-card'))!;
    expect(cm.data!['jwks.json']).toBe('{"keys":[]}');
    expect(JSON.parse(cm.data!['agent-card.json']!).signatures).toBeUndefined();
  });

  it('reports Pods that ask for the card without the sidecar in status.serving', async () => {
    await api.createCard(ns.name, 'requested', { card: sampleCard('2.0.0') });
    await readyCard('requested');
    const pod = (name: string, containers: string[]) => ({
      metadata: { name, annotations: { 'agentcard.dev/inject': 'requested' } },
      spec: { containers: containers.map((c) => ({ name: c, image: 'registry.example/agent:1' })) },
    });
    await api.core.createNamespacedPod({ namespace: ns.name, body: pod('agent-a', ['agent']) });
    await api.core.createNamespacedPod({
      namespace: ns.name,
      body: pod('agent-b', ['agent', 'agentcard-sidecar']),
    });
    const card = await waitFor('status.serving with both Pods', async () => {
      const c = await api.getCard(ns.name, 'requested');
      const serving = (c?.status as { serving?: { podsRequesting: number } } | undefined)?.serving;
      return serving?.podsRequesting === 2 ? c : undefined;
    });
    expect((card.status as Record<string, unknown>).serving).toEqual({
      podsRequesting: 2,
      podsMissingSidecar: 1,
      missing: ['agent-a'],
    });
    expect(condition(card, 'Published')!.message).toContain(
      '1 of 2 Pods requesting this card run without the sidecar',
    );
    const warning = await waitFor('a PodsMissingSidecar event', async () =>
      (await api.events(ns.name, 'requested')).find((e) => e.reason === 'PodsMissingSidecar'),
    );
    expect(warning).toMatchObject({ type: 'Warning', message: expect.stringContaining('agent-a') });

    await api.core.deleteNamespacedPod({ namespace: ns.name, name: 'agent-a', gracePeriodSeconds: 0 });
    const healed = await waitFor('the Pod gone from status.serving', async () => {
      const c = await api.getCard(ns.name, 'requested');
      const serving = (c?.status as { serving?: { podsMissingSidecar: number } } | undefined)?.serving;
      return serving?.podsMissingSidecar === 0 && !condition(c, 'Published')!.message.includes('sidecar')
        ? serving
        : undefined;
    });
    // No empty `missing` list (kubectl describe would print an empty `Missing:` line): server-side
    // apply removed the field the operator no longer sets.
    expect(healed).toEqual({ podsRequesting: 1, podsMissingSidecar: 0 });
  });

  it('lets the garbage collector delete the ConfigMap with its AgentCard', async () => {
    await api.createCard(ns.name, 'collected', { card: sampleCard('3.0.0') });
    await readyCard('collected');
    expect(await api.getConfigMap(ns.name, 'collected-agent-card')).toBeDefined();
    await api.deleteCard(ns.name, 'collected');
    // kube-controller-manager's garbage collector starts watching a new CRD's objects on its next
    // discovery resync (every 30 s), so on a fresh control plane this can take a while.
    await waitFor(
      'the ConfigMap to be garbage-collected',
      async () => !(await api.getConfigMap(ns.name, 'collected-agent-card')),
      90_000,
    );
  });
});
