/**
 * agentcard_policy_violations: per policy and rule, how many AgentCards fail the rule (a gauge;
 * 0 for a rule every selected card passes, so an alert can compare). Built at scrape time from one
 * small map per policy (metrics/scrape-time.ts), like the per-card series of ../metrics.ts. An
 * invalid or deleted policy has no series: nothing of it is judged.
 */
import type { Registry } from 'prom-client';
import { ScrapeTimeGauge, type Sample } from '../../metrics/scrape-time.ts';

type Labels = 'kind' | 'namespace' | 'policy' | 'rule';

interface PolicyRecord {
  kind: string;
  namespace: string;
  name: string;
  rules: ReadonlyMap<string, number>;
}

export class PolicyMetrics {
  /** Policy key → its kind, namespace, name, and rule → failing cards. */
  private readonly policies = new Map<string, PolicyRecord>();

  constructor(registry: Registry) {
    new ScrapeTimeGauge<Labels, PolicyRecord>(
      {
        name: 'agentcard_policy_violations',
        help: 'AgentCards that fail a rule of an AgentPolicy or ClusterAgentPolicy, by policy and rule (namespace empty for a ClusterAgentPolicy).',
        labelNames: ['kind', 'namespace', 'policy', 'rule'],
        registers: [registry],
      },
      { records: () => this.policies.values(), seriesOf: policySeries },
    );
  }

  set(
    key: string,
    policy: { kind: string; namespace: string; name: string },
    rules: ReadonlyMap<string, number>,
  ) {
    this.policies.set(key, { ...policy, rules: new Map(rules) });
  }

  forget(key: string): void {
    this.policies.delete(key);
  }
}

function* policySeries({ kind, namespace, name, rules }: PolicyRecord): Generator<Sample<Labels>> {
  for (const [rule, value] of rules) yield { labels: { kind, namespace, policy: name, rule }, value };
}
