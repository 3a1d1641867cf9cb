// Hostile AgentCards on the real API server, each answered with a clear condition, no crash and
// no retry loop, the last good card kept:
// - cards too large to publish: the size of the whole ConfigMap is checked before any write, the
//   card is refused once with CardTooLarge, and the message says truthfully what is still served
//   (the limit itself is checked against the API server);
// - extension params nested 1,500 levels deep (the API server stores them).
import { describe, expect, it } from 'vitest';
import { configMapDataBytes, MAX_CONFIGMAP_DATA_BYTES } from '../../operator/runtime/configmaps.ts';
import {
  condition,
  controllerWrites,
  metricValue,
  operatorMetrics,
  sampleCard,
  waitFor,
  useOperatorInNamespace,
} from '../support/operator.ts';

const { kc, api, ns, op } = useOperatorInNamespace('controller-hostile', { flags: ['--resync', '10m'] });

const withDescription = (version: string, bytes: number) => ({
  card: { ...sampleCard(version), description: 'x'.repeat(bytes) },
});

async function publishedCondition(name: string, reason: string) {
  return waitFor(`${name}: Published reason ${reason}`, async () => {
    const card = await api.getCard(ns.name, name);
    return condition(card, 'Published')?.reason === reason ? card : undefined;
  });
}

describe('published size', () => {
  it("the limit is the API server's: data of exactly the limit is stored, one byte over is refused", async () => {
    const key = 'agent-card.json';
    const fits = { [key]: 'x'.repeat(MAX_CONFIGMAP_DATA_BYTES - key.length) };
    expect(configMapDataBytes(fits)).toBe(MAX_CONFIGMAP_DATA_BYTES);
    await api.core.createNamespacedConfigMap({
      namespace: ns.name,
      body: { metadata: { name: 'fits' }, data: fits },
    });
    const over = { [key]: 'x'.repeat(MAX_CONFIGMAP_DATA_BYTES + 1) };
    const refused = await api.core
      .createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name: 'over' }, data: over } })
      .then(
        () => undefined,
        (err: { code?: number }) => err.code,
      );
    expect(refused).toBe(422);
  });

  it('a 600 KB card (two renderings over 1 MiB) is refused once with CardTooLarge; nothing is published', async () => {
    const writesBefore = await controllerWrites(kc);
    await api.createCard(ns.name, 'big', withDescription('1.0.0', 600_000));
    const card = await publishedCondition('big', 'CardTooLarge');
    const published = condition(card, 'Published')!;
    expect(published.status).toBe('False');
    expect(published.message).toMatch(
      /^the published files would take \d+ bytes \(agent-card\.json \d+, agent\.json \d+\), over the ConfigMap limit of 1048576 bytes; .*; nothing is published yet$/,
    );
    expect(condition(card, 'Ready')!.status).toBe('False');
    expect(await api.getConfigMap(ns.name, 'big-agent-card')).toBeUndefined();
    // Not retried: no ConfigMap write was even attempted, and no reconcile failed.
    await waitFor('the reconcile to be idle', async () => {
      const text = await operatorMetrics(op.metricsPort());
      return metricValue(text, 'agentcard_workqueue_depth') === 0;
    });
    const writesAfter = await controllerWrites(kc);
    expect(writesAfter.configMaps - writesBefore.configMaps).toBe(0);
    const metrics = await operatorMetrics(op.metricsPort());
    expect(metricValue(metrics, 'agentcard_reconcile_total', { result: 'error' })).toBe(0);
    expect((await api.events(ns.name, 'big')).filter((e) => e.reason === 'CardTooLarge')).toHaveLength(1);
  });

  it('a published card edited to one near the object limit (1.4 MB) keeps the last good card, and says so', async () => {
    await api.createCard(ns.name, 'grows', withDescription('1.0.0', 100));
    await publishedCondition('grows', 'Published');
    const before = (await api.getConfigMap(ns.name, 'grows-agent-card'))!.data!['agent-card.json'];
    await api.replaceSpec(ns.name, 'grows', withDescription('2.0.0', 1_400_000));
    const card = await publishedCondition('grows', 'CardTooLarge');
    expect(condition(card, 'Published')!.message).toMatch(/; the last good card stays published$/);
    expect(card.status?.card?.version).toBe('1.0.0');
    expect((await api.getConfigMap(ns.name, 'grows-agent-card'))!.data!['agent-card.json']).toBe(before);

    // Back under the limit: published again.
    await api.replaceSpec(ns.name, 'grows', withDescription('3.0.0', 1_000));
    await publishedCondition('grows', 'Published');
    expect((await api.getCard(ns.name, 'grows'))?.status?.card?.version).toBe('3.0.0');
    const metrics = await operatorMetrics(op.metricsPort());
    expect(metricValue(metrics, 'agentcard_reconcile_total', { result: 'error' })).toBe(0);
  });
});

describe('nesting', () => {
  it('params nested 1,500 levels deep: InvalidSpec naming the place, one Event, no failed reconcile; the last good card stays', async () => {
    await api.createCard(ns.name, 'deep', { card: sampleCard('1.0.0') });
    await publishedCondition('deep', 'Published');
    let params: unknown = {};
    for (let i = 0; i < 1_500; i++) params = { a: params };
    const card = {
      ...sampleCard('2.0.0'),
      capabilities: { extensions: [{ uri: 'https://x.example/e', params }] },
    };
    await api.replaceSpec(ns.name, 'deep', { card });
    const refused = await waitFor('Accepted=False InvalidSpec', async () => {
      const c = await api.getCard(ns.name, 'deep');
      return condition(c, 'Accepted')?.reason === 'InvalidSpec' ? c : undefined;
    });
    expect(condition(refused, 'Accepted')!.message).toMatch(
      /^spec\.card\.capabilities\.extensions\[0\]\.params\.a[.a]*: nested more than 32 levels deep .*\(the last good card stays published\)$/,
    );
    expect(condition(refused, 'Published')!.status).toBe('True');
    expect(refused.status?.card?.version).toBe('1.0.0');
    await waitFor('one InvalidSpec Event', async () =>
      (await api.events(ns.name, 'deep')).some((e) => e.reason === 'InvalidSpec'),
    );
    const metrics = await operatorMetrics(op.metricsPort());
    expect(metricValue(metrics, 'agentcard_reconcile_total', { result: 'error' })).toBe(0);
  });
});
