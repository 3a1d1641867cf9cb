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
}

export class ControllerMetrics {
  readonly reconcileTotal: Counter<'result'>;
  readonly reconcileDuration: Histogram;
  readonly workqueueDepth: Gauge;
  readonly ready: Gauge<'namespace' | 'name' | 'condition'>;
  readonly info: Gauge<'namespace' | 'name' | 'version' | 'digest'>;
  readonly leader: Gauge;
  readonly apiWrites: Counter<'resource'>;
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
  }

  setCard(namespace: string, name: string, state: CardMetricState): void {
    for (const condition of CONDITION_VALUES) {
      this.ready.set({ namespace, name, condition }, condition === state.ready ? 1 : 0);
    }
    const key = `${namespace}/${name}`;
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
    const previous = this.infoLabels.get(key);
    if (previous) this.info.remove({ namespace, name, ...previous });
    this.infoLabels.delete(key);
  }
}
