// The per-card series (agentcard_ready, agentcard_condition, agentcard_info,
// agentcard_pods_missing_sidecar) are built at scrape time from the controller's state: on the
// real API server, they appear with an AgentCard, follow a spec change, and disappear with it.
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
