/**
 * The work queue and reconcile metrics of every controller, under the names client-go's workqueue
 * and controller-runtime export, so the dashboards and alerts people already have for Go operators
 * work here too:
 * - workqueue_* (client-go's k8s.io/client-go/util/workqueue metrics, as controller-runtime
 *   registers them: labels `controller` and `name`, both the controller's name), plus a
 *   `priority` label (`high`, `low`) on depth, adds and queue duration for the queue's two lanes
 *   (controller-runtime's priority queue labels its depth by priority too);
 * - controller_runtime_reconcile_* (pkg/internal/controller/metrics), labelled `controller`.
 * The buckets are theirs: 10 ns to 1000 s by tens for the queue, 5 ms to 60 s for reconciles.
 *
 * Cost: no label names an object, so the series do not grow with the number of AgentCards:
 * per controller, 3 histograms of 13 or 41 buckets (about 100 series) and a dozen others.
 * Depth, unfinished work and the longest run are read from the queue at scrape time.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Priority, QueueObserver, QueueStats, RunOutcome } from './workqueue.ts';

const PRIORITIES: readonly Priority[] = ['high', 'low'];
const OUTCOMES: readonly RunOutcome[] = ['success', 'error', 'requeue', 'requeue_after'];

/** client-go's workqueue buckets: prometheus.ExponentialBuckets(10e-9, 10, 12). */
export const QUEUE_BUCKETS = Array.from({ length: 12 }, (_, i) => Number((1e-8 * 10 ** i).toPrecision(1)));

/** controller-runtime's reconcile_time_seconds buckets. */
export const RECONCILE_BUCKETS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25,
  1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60,
];

type QueueLabels = 'controller' | 'name';

export class RuntimeMetrics {
  /** The queue of each controller, read at scrape time (a controller made again replaces it). */
  private readonly queues = new Map<string, QueueStats>();
  private readonly adds: Counter<QueueLabels | 'priority'>;
  private readonly queueDuration: Histogram<QueueLabels | 'priority'>;
  private readonly workDuration: Histogram<QueueLabels>;
  private readonly retries: Counter<QueueLabels>;
  private readonly reconcileTotal: Counter<'controller' | 'result'>;
  private readonly reconcileErrors: Counter<'controller'>;
  private readonly reconcileTime: Histogram<'controller'>;

  constructor(registry: Registry) {
    const registers = [registry];
    const queues = this.queues;
    new Gauge({
      name: 'workqueue_depth',
      help: 'Current depth of workqueue, by priority lane (high: changes, low: initial list, resync, probe verdicts).',
      labelNames: ['controller', 'name', 'priority'],
      registers,
      collect() {
        this.reset();
        for (const [controller, q] of queues)
          for (const priority of PRIORITIES)
            this.set({ controller, name: controller, priority }, q.depthOf(priority));
      },
    });
    this.adds = new Counter({
      name: 'workqueue_adds_total',
      help: 'Total number of adds handled by workqueue (a key already waiting is not added again).',
      labelNames: ['controller', 'name', 'priority'],
      registers,
    });
    this.queueDuration = new Histogram({
      name: 'workqueue_queue_duration_seconds',
      help: 'How long in seconds an item stays in workqueue before being requested.',
      labelNames: ['controller', 'name', 'priority'],
      buckets: QUEUE_BUCKETS,
      registers,
    });
    this.workDuration = new Histogram({
      name: 'workqueue_work_duration_seconds',
      help: 'How long in seconds processing an item from workqueue takes.',
      labelNames: ['controller', 'name'],
      buckets: QUEUE_BUCKETS,
      registers,
    });
    this.retries = new Counter({
      name: 'workqueue_retries_total',
      help: 'Total number of retries handled by workqueue (a failed item queued again after its backoff).',
      labelNames: ['controller', 'name'],
      registers,
    });
    new Gauge({
      name: 'workqueue_unfinished_work_seconds',
      help: 'How many seconds of work has been done that is in progress and has not been observed by work_duration. Large values indicate stuck threads.',
      labelNames: ['controller', 'name'],
      registers,
      collect() {
        this.reset();
        for (const [controller, q] of queues)
          this.set({ controller, name: controller }, q.runningMs().totalMs / 1000);
      },
    });
    new Gauge({
      name: 'workqueue_longest_running_processor_seconds',
      help: 'How many seconds has the longest running processor for workqueue been running.',
      labelNames: ['controller', 'name'],
      registers,
      collect() {
        this.reset();
        for (const [controller, q] of queues)
          this.set({ controller, name: controller }, q.runningMs().longestMs / 1000);
      },
    });
    this.reconcileTotal = new Counter({
      name: 'controller_runtime_reconcile_total',
      help: 'Total number of reconciliations per controller, by result (success, error, requeue, requeue_after).',
      labelNames: ['controller', 'result'],
      registers,
    });
    this.reconcileErrors = new Counter({
      name: 'controller_runtime_reconcile_errors_total',
      help: 'Total number of reconciliation errors per controller.',
      labelNames: ['controller'],
      registers,
    });
    this.reconcileTime = new Histogram({
      name: 'controller_runtime_reconcile_time_seconds',
      help: 'Length of time per reconciliation per controller.',
      labelNames: ['controller'],
      buckets: RECONCILE_BUCKETS,
      registers,
    });
    new Gauge({
      name: 'controller_runtime_active_workers',
      help: 'Number of currently used workers per controller.',
      labelNames: ['controller'],
      registers,
      collect() {
        this.reset();
        for (const [controller, q] of queues) this.set({ controller }, q.active);
      },
    });
    new Gauge({
      name: 'controller_runtime_max_concurrent_reconciles',
      help: 'Maximum number of concurrent reconciles per controller.',
      labelNames: ['controller'],
      registers,
      collect() {
        this.reset();
        for (const [controller, q] of queues) this.set({ controller }, q.concurrency);
      },
    });
  }

  /**
   * The observer to give the work queue of the controller `controller` (e.g. `agentcard`). Every
   * counter of the controller starts at 0, so that rate() and absent-result queries see it at once.
   */
  controller(controller: string): QueueObserver {
    const queue = { controller, name: controller };
    for (const priority of PRIORITIES) {
      this.adds.inc({ ...queue, priority }, 0);
      this.queueDuration.zero({ ...queue, priority });
    }
    this.workDuration.zero(queue);
    this.retries.inc(queue, 0);
    for (const result of OUTCOMES) this.reconcileTotal.inc({ controller, result }, 0);
    this.reconcileErrors.inc({ controller }, 0);
    this.reconcileTime.zero({ controller });
    return {
      bind: (stats) => void this.queues.set(controller, stats),
      added: (priority) => this.adds.inc({ ...queue, priority }),
      started: (priority, waitedMs) => this.queueDuration.observe({ ...queue, priority }, waitedMs / 1000),
      finished: (outcome, ms) => {
        this.workDuration.observe(queue, ms / 1000);
        this.reconcileTime.observe({ controller }, ms / 1000);
        this.reconcileTotal.inc({ controller, result: outcome });
        if (outcome === 'error') this.reconcileErrors.inc({ controller });
      },
      retried: () => this.retries.inc(queue),
    };
  }
}
