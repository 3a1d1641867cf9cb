/**
 * The controller's Prometheus metrics, registered on the registry it is given.
 * `agentcard_ready` follows cert-manager's ready-status pattern: one series per condition value
 * (True, False, Unknown), the current one at 1 and the others at 0.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

const CONDITION_VALUES = ['True', 'False', 'Unknown'] as const;

export interface CardMetricState {
  ready: 'True' | 'False' | 'Unknown';
  version?: string;
  digest?: string;
  /** status.conditions, for agentcard_condition (the alerts read reasons from it). */
  conditions?: readonly { type: string; status: string; reason: string }[];
  /** status.serving.podsMissingSidecar. */
  podsMissingSidecar?: number;
}

type ConditionLabels = { namespace: string; name: string; type: string; status: string; reason: string };

export class ControllerMetrics {
  readonly reconcileTotal: Counter<'result'>;
  readonly reconcileDuration: Histogram;
  readonly workqueueDepth: Gauge;
  readonly ready: Gauge<'namespace' | 'name' | 'condition'>;
  readonly info: Gauge<'namespace' | 'name' | 'version' | 'digest'>;
  readonly leader: Gauge;
  readonly apiWrites: Counter<'resource'>;
  readonly condition: Gauge<keyof ConditionLabels>;
  readonly podsMissingSidecar: Gauge<'namespace' | 'name'>;
  private readonly conditionLabels = new Map<string, ConditionLabels[]>();
  private readonly infoLabels = new Map<string, { version: string; digest: string }>();

  constructor(registry: Registry) {
    this.reconcileTotal = new Counter({
      name: 'agentcard_reconcile_total',
      help: 'Reconciles of AgentCards by result (success, error).',
      labelNames: ['result'],
      registers: [registry],
    });
    this.reconcileDuration = new Histogram({
      name: 'agentcard_reconcile_duration_seconds',
      help: 'Duration of one AgentCard reconcile, API calls included.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    this.workqueueDepth = new Gauge({
      name: 'agentcard_workqueue_depth',
      help: 'AgentCard keys waiting in the work queue.',
      registers: [registry],
    });
    this.ready = new Gauge({
      name: 'agentcard_ready',
      help: 'Ready condition of each AgentCard: 1 for the current condition value, 0 for the others.',
      labelNames: ['namespace', 'name', 'condition'],
      registers: [registry],
    });
    this.info = new Gauge({
      name: 'agentcard_info',
      help: 'The published card of each AgentCard (always 1).',
      labelNames: ['namespace', 'name', 'version', 'digest'],
      registers: [registry],
    });
    this.leader = new Gauge({
      name: 'agentcard_leader',
      help: '1 while this replica holds the leader lease (or runs without leader election).',
      registers: [registry],
    });
    this.apiWrites = new Counter({
      name: 'agentcard_api_writes_total',
      help: 'Writes the controller sent to the API server, by resource (configmap, status, event).',
      labelNames: ['resource'],
      registers: [registry],
    });
    this.condition = new Gauge({
      name: 'agentcard_condition',
      help: 'Current status and reason of each condition of each AgentCard (always 1; a change replaces the series).',
      labelNames: ['namespace', 'name', 'type', 'status', 'reason'],
      registers: [registry],
    });
    this.podsMissingSidecar = new Gauge({
      name: 'agentcard_pods_missing_sidecar',
      help: 'Pods that ask for this AgentCard (agentcard.dev/inject) but run without the sidecar.',
      labelNames: ['namespace', 'name'],
      registers: [registry],
    });
  }

  setCard(namespace: string, name: string, state: CardMetricState): void {
    for (const condition of CONDITION_VALUES) {
      this.ready.set({ namespace, name, condition }, condition === state.ready ? 1 : 0);
    }
    const key = `${namespace}/${name}`;
    this.setConditions(key, namespace, name, state.conditions ?? []);
    this.podsMissingSidecar.set({ namespace, name }, state.podsMissingSidecar ?? 0);
    const previous = this.infoLabels.get(key);
    if (state.version === undefined || state.digest === undefined) {
      if (previous) this.info.remove({ namespace, name, ...previous });
      this.infoLabels.delete(key);
      return;
    }
    const labels = { version: state.version, digest: state.digest };
    if (previous && previous.version === labels.version && previous.digest === labels.digest) return;
    if (previous) this.info.remove({ namespace, name, ...previous });
    this.info.set({ namespace, name, ...labels }, 1);
    this.infoLabels.set(key, labels);
  }

  forgetCard(namespace: string, name: string): void {
    for (const condition of CONDITION_VALUES) this.ready.remove({ namespace, name, condition });
    const key = `${namespace}/${name}`;
    this.setConditions(key, namespace, name, []);
    this.podsMissingSidecar.remove({ namespace, name });
    const previous = this.infoLabels.get(key);
    if (previous) this.info.remove({ namespace, name, ...previous });
    this.infoLabels.delete(key);
  }

  /** Replaces the card's agentcard_condition series: one per condition type, at most five. */
  private setConditions(
    key: string,
    namespace: string,
    name: string,
    conditions: readonly { type: string; status: string; reason: string }[],
  ): void {
    for (const labels of this.conditionLabels.get(key) ?? []) this.condition.remove(labels);
    const next = conditions.map((c) => ({
      namespace,
      name,
      type: c.type,
      status: c.status,
      reason: c.reason,
    }));
    for (const labels of next) this.condition.set(labels, 1);
    if (next.length > 0) this.conditionLabels.set(key, next);
    else this.conditionLabels.delete(key);
  }
}
