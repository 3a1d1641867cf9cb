// The per-card series (agentcard_ready, agentcard_condition, agentcard_info,
// agentcard_pods_missing_sidecar) are built at scrape time from the controller's state: on the
// real API server, they appear with an AgentCard, follow a spec change, and disappear with it.
// The work queue and reconcile series (client-go's and controller-runtime's names) count the
// reconciles of a running operator, per controller and lane, and name no object.
import { describe, expect, it } from 'vitest';
import {
  metricValue,
  operatorMetrics,
  sampleCard,
  waitFor,
  useOperatorInNamespace,
} from '../support/operator.ts';

const { api, ns, op } = useOperatorInNamespace('controller-metrics', { flags: ['--resync', '10m'] });

/** The scraped lines of `metric` that carry this card's labels. */
async function seriesOf(metric: string, name: string): Promise<string[]> {
  const text = await operatorMetrics(op.metricsPort());
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${metric}{`) && l.includes(`namespace="${ns.name}",name="${name}"`));
}

describe('per-card metrics at scrape time', () => {
  it('appear with the AgentCard, follow its spec, and disappear when it is deleted', async () => {
    expect(await seriesOf('agentcard_ready', 'scraped')).toEqual([]);
    await api.createCard(ns.name, 'scraped', { card: sampleCard('1.0.0') });
    const labels = { namespace: ns.name, name: 'scraped' };
    await waitFor('agentcard_ready True', async () => {
      const text = await operatorMetrics(op.metricsPort());
      return metricValue(text, 'agentcard_ready', { ...labels, condition: 'True' }) === 1;
    });
    expect(await seriesOf('agentcard_ready', 'scraped')).toEqual([
      `agentcard_ready{namespace="${ns.name}",name="scraped",condition="True"} 1`,
      `agentcard_ready{namespace="${ns.name}",name="scraped",condition="False"} 0`,
      `agentcard_ready{namespace="${ns.name}",name="scraped",condition="Unknown"} 0`,
    ]);
    const digest = (await api.getCard(ns.name, 'scraped'))!.status!.card!.digest;
    expect(await seriesOf('agentcard_info', 'scraped')).toEqual([
      `agentcard_info{namespace="${ns.name}",name="scraped",version="1.0.0",digest="${digest}"} 1`,
    ]);
    const conditions = await seriesOf('agentcard_condition', 'scraped');
    expect(conditions).toContain(
      `agentcard_condition{namespace="${ns.name}",name="scraped",type="Published",status="True",reason="Published"} 1`,
    );
    expect(conditions.every((l) => l.endsWith(' 1'))).toBe(true);
    expect(new Set(conditions.map((l) => /type="(\w+)"/.exec(l)![1])).size).toBe(conditions.length);
    expect(await seriesOf('agentcard_pods_missing_sidecar', 'scraped')).toEqual([
      `agentcard_pods_missing_sidecar{namespace="${ns.name}",name="scraped"} 0`,
    ]);

    // A new version replaces the info series (the old one is not kept).
    await api.replaceSpec(ns.name, 'scraped', { card: sampleCard('2.0.0') });
    await waitFor('agentcard_info of 2.0.0', async () =>
      (await seriesOf('agentcard_info', 'scraped')).some((l) => l.includes('version="2.0.0"')),
    );
    expect(await seriesOf('agentcard_info', 'scraped')).toHaveLength(1);

    await api.deleteCard(ns.name, 'scraped');
    await waitFor('every series of the card to go', async () => {
      const text = await operatorMetrics(op.metricsPort());
      return !text.includes(`name="scraped"`);
    });
  });
});

describe('work queue and reconcile metrics of a running operator', () => {
  /** The scraped sample lines of a metric family (no comments). */
  const samples = (text: string, metric: string) =>
    text.split('\n').filter((l) => l.startsWith(`${metric}{`) || l.startsWith(`${metric} `));

  it('count the reconciles a spec change causes, per controller and lane, without object labels', async () => {
    const agentcard = { controller: 'agentcard', name: 'agentcard' };
    await api.createCard(ns.name, 'queued', { card: sampleCard('1.0.0') });
    await waitFor(
      'the card reconciled',
      async () => (await api.getCard(ns.name, 'queued'))?.status?.card !== undefined,
    );
    const before = await operatorMetrics(op.metricsPort());
    const reconciles = (text: string) =>
      metricValue(text, 'controller_runtime_reconcile_total', { controller: 'agentcard', result: 'success' });
    const highAdds = (text: string) =>
      metricValue(text, 'workqueue_adds_total', { ...agentcard, priority: 'high' });
    const highWaits = (text: string) =>
      metricValue(text, 'workqueue_queue_duration_seconds_count', { ...agentcard, priority: 'high' });
    expect(reconciles(before)).toBeGreaterThan(0);

    // A spec change is a change someone made: it goes through the high lane.
    await api.replaceSpec(ns.name, 'queued', { card: sampleCard('2.0.0') });
    await waitFor('the change reconciled', async () => {
      const text = await operatorMetrics(op.metricsPort());
      return reconciles(text) > reconciles(before) && highWaits(text) > highWaits(before);
    });
    const after = await operatorMetrics(op.metricsPort());
    expect(highAdds(after)).toBeGreaterThan(highAdds(before));
    expect(
      metricValue(after, 'controller_runtime_reconcile_time_seconds_count', { controller: 'agentcard' }),
    ).toBe(metricValue(after, 'workqueue_work_duration_seconds_count', agentcard));

    // Every series of both controllers, with the labels of client-go and controller-runtime.
    for (const controller of ['agentcard', 'agentcatalog']) {
      const queue = `controller="${controller}",name="${controller}"`;
      for (const priority of ['high', 'low']) {
        expect(after).toMatch(new RegExp(`^workqueue_depth\\{${queue},priority="${priority}"\\} \\d+$`, 'm'));
        expect(after).toMatch(
          new RegExp(`^workqueue_adds_total\\{${queue},priority="${priority}"\\} \\d+$`, 'm'),
        );
        expect(after).toContain(
          `workqueue_queue_duration_seconds_bucket{le="1",${queue},priority="${priority}"}`,
        );
      }
      expect(after).toContain(`workqueue_work_duration_seconds_bucket{le="+Inf",${queue}}`);
      for (const gauge of [
        'workqueue_retries_total',
        'workqueue_unfinished_work_seconds',
        'workqueue_longest_running_processor_seconds',
      ])
        expect(after).toMatch(new RegExp(`^${gauge}\\{${queue}\\} [\\d.e+-]+$`, 'm'));
      for (const result of ['success', 'error', 'requeue', 'requeue_after'])
        expect(after).toContain(
          `controller_runtime_reconcile_total{controller="${controller}",result="${result}"}`,
        );
      expect(after).toContain(`controller_runtime_reconcile_errors_total{controller="${controller}"}`);
      expect(after).toContain(
        `controller_runtime_reconcile_time_seconds_bucket{le="60",controller="${controller}"}`,
      );
      expect(after).toMatch(
        new RegExp(
          `^controller_runtime_max_concurrent_reconciles\\{controller="${controller}"\\} [1-9]`,
          'm',
        ),
      );
    }
    // No series of these families names an object.
    const families = [
      'workqueue_depth',
      'workqueue_adds_total',
      'workqueue_queue_duration_seconds_bucket',
      'workqueue_work_duration_seconds_bucket',
      'controller_runtime_reconcile_total',
      'controller_runtime_reconcile_time_seconds_bucket',
    ];
    for (const family of families)
      for (const line of samples(after, family)) expect(line).not.toMatch(/namespace=|queued|\bns\b/);
  });
});
