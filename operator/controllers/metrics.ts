/**
 * The controller's Prometheus metrics, registered on the registry it is given.
 * `agentcard_ready` follows cert-manager's ready-status pattern: one series per condition value
 * (True, False, Unknown), the current one at 1 and the others at 0.
 *
 * The per-card series (ready, condition, info, pods missing the sidecar: up to 10 per card) are
 * built at scrape time from one small record per card (ScrapeTimeGauge) rather than stored by
 * prom-client as label sets, which cost about 2.5 KiB per card at rest (docs/scaling.md).
 *
 * The work queue and reconcile metrics of both controllers are `runtime` (runtime/metrics.ts,
 * client-go's and controller-runtime's names). agentcard_reconcile_total,
 * agentcard_reconcile_duration_seconds and agentcard_workqueue_depth came first and are kept,
 * deprecated (docs/operations.md), for the dashboards and alerts that read them.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { RuntimeMetrics } from '../runtime/metrics.ts';
import { ScrapeTimeGauge, type Sample } from '../metrics/scrape-time.ts';
import { CHANGE_CLASSES } from '../change/rules.ts';

/** The `controller` label of each controller's work queue and reconcile metrics. */
export const CONTROLLER_NAMES = {
  cards: 'agentcard',
  catalogs: 'agentcatalog',
  adoption: 'adoption',
  issuer: 'issuer',
  policy: 'agentpolicy',
  imports: 'catalogimport',
} as const;

const CONDITION_VALUES = ['True', 'False', 'Unknown'] as const;

export interface CardMetricState {
  ready: 'True' | 'False' | 'Unknown';
  version?: string;
  digest?: string;
  /** status.conditions, for agentcard_condition (the alerts read reasons from it). */
  conditions?: readonly { type: string; status: string; reason: string }[];
  /** status.serving.podsMissingSidecar. */
  podsMissingSidecar?: number;
  /** status.signatures: the certificate ones give agentcard_signing_certificate_expiration_timestamp_seconds. */
  signatures?: readonly { kid: string; certificate?: { notAfter: string } }[];
}

/** What the series of one card are built from; conditions flattened as type, status, reason. */
interface CardRecord {
  namespace: string;
  name: string;
  ready: CardMetricState['ready'];
  version: string | undefined;
  digest: string | undefined;
  conditions: readonly string[];
  podsMissingSidecar: number;
  /** kid, notAfter (epoch seconds) pairs of the signing certificates. */
  certificates: ReadonlyArray<[string, number]>;
}

/** The certificates of the records without any (most): one empty list for all. */
const NO_CERTIFICATES: ReadonlyArray<[string, number]> = Object.freeze([]);
/** Distinct condition lists shared at most; a full table is emptied and fills again. */
const MAX_CONDITION_LISTS = 1_024;

export class ControllerMetrics {
  readonly reconcileTotal: Counter<'result'>;
  readonly reconcileDuration: Histogram;
  readonly workqueueDepth: Gauge;
  readonly ready: Gauge<'namespace' | 'name' | 'condition'>;
  readonly info: Gauge<'namespace' | 'name' | 'version' | 'digest'>;
  readonly leader: Gauge;
  readonly apiWrites: Counter<'resource'>;
  readonly condition: Gauge<'namespace' | 'name' | 'type' | 'status' | 'reason'>;
  readonly podsMissingSidecar: Gauge<'namespace' | 'name'>;
  readonly certificateExpiration: Gauge<'namespace' | 'name' | 'kid'>;
  /** Published changes of cards by class (docs/changes.md, "In the cluster"). */
  readonly cardChanges: Counter<'class'>;
  /** workqueue_* and controller_runtime_reconcile_* of every controller. */
  readonly runtime: RuntimeMetrics;
  /** By namespace/name, in the order the cards were first seen. */
  private readonly cards = new Map<string, CardRecord>();
  /** The distinct condition lists of the records, by their text (sharedConditions). */
  private readonly conditionLists = new Map<string, readonly string[]>();

  constructor(registry: Registry) {
    this.runtime = new RuntimeMetrics(registry);
    this.reconcileTotal = new Counter({
      name: 'agentcard_reconcile_total',
      help: 'Deprecated, use controller_runtime_reconcile_total{controller="agentcard"}. Reconciles of AgentCards by result (success, error).',
      labelNames: ['result'],
      registers: [registry],
    });
    this.reconcileDuration = new Histogram({
      name: 'agentcard_reconcile_duration_seconds',
      help: 'Deprecated, use controller_runtime_reconcile_time_seconds{controller="agentcard"}. Duration of one AgentCard reconcile, API calls included.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
    this.workqueueDepth = new Gauge({
      name: 'agentcard_workqueue_depth',
      help: 'Deprecated, use workqueue_depth{name="agentcard"}. AgentCard keys waiting in the work queue.',
      registers: [registry],
    });
    this.ready = new ScrapeTimeGauge(
      {
        name: 'agentcard_ready',
        help: 'Ready condition of each AgentCard: 1 for the current condition value, 0 for the others.',
        labelNames: ['namespace', 'name', 'condition'],
        registers: [registry],
      },
      { records: () => this.cards.values(), seriesOf: readySeries },
    );
    this.info = new ScrapeTimeGauge(
      {
        name: 'agentcard_info',
        help: 'The published card of each AgentCard (always 1).',
        labelNames: ['namespace', 'name', 'version', 'digest'],
        registers: [registry],
      },
      { records: () => this.cards.values(), seriesOf: infoSeries },
    );
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
    this.condition = new ScrapeTimeGauge(
      {
        name: 'agentcard_condition',
        help: 'Current status and reason of each condition of each AgentCard (always 1; a change replaces the series).',
        labelNames: ['namespace', 'name', 'type', 'status', 'reason'],
        registers: [registry],
      },
      { records: () => this.cards.values(), seriesOf: conditionSeries },
    );
    this.podsMissingSidecar = new ScrapeTimeGauge(
      {
        name: 'agentcard_pods_missing_sidecar',
        help: 'Pods that ask for this AgentCard (agentcard.dev/inject) but run without the sidecar.',
        labelNames: ['namespace', 'name'],
        registers: [registry],
      },
      { records: () => this.cards.values(), seriesOf: podsMissingSeries },
    );
    // cert-manager's certmanager_certificate_expiration_timestamp_seconds, per signature.
    this.certificateExpiration = new ScrapeTimeGauge(
      {
        name: 'agentcard_signing_certificate_expiration_timestamp_seconds',
        help: 'The notAfter (Unix seconds) of the certificate of each certificate signature of the published card.',
        labelNames: ['namespace', 'name', 'kid'],
        registers: [registry],
      },
      { records: () => this.cards.values(), seriesOf: certificateSeries },
    );
    this.cardChanges = new Counter({
      name: 'agentcard_card_changes_total',
      help: 'Published changes of AgentCards by class (breaking, compatible, descriptive).',
      labelNames: ['class'],
      registers: [registry],
    });
    for (const c of CHANGE_CLASSES) this.cardChanges.inc({ class: c }, 0);
  }

  /** Records the card's current state; its series change at the next scrape. */
  setCard(namespace: string, name: string, state: CardMetricState): void {
    const flat: string[] = [];
    for (const c of state.conditions ?? []) flat.push(c.type, c.status, c.reason);
    const conditions = this.sharedConditions(flat);
    const certificates = (state.signatures ?? []).flatMap((s) =>
      s.certificate ? [[s.kid, Date.parse(s.certificate.notAfter) / 1000] as [string, number]] : [],
    );
    // Only the card's digest and version are kept complete: without both, no info series.
    const published = state.version !== undefined && state.digest !== undefined;
    this.cards.set(`${namespace}/${name}`, {
      namespace,
      name,
      ready: state.ready,
      version: published ? state.version : undefined,
      digest: published ? state.digest : undefined,
      conditions,
      podsMissingSidecar: state.podsMissingSidecar ?? 0,
      certificates: certificates.length > 0 ? certificates : NO_CERTIFICATES,
    });
  }

  /**
   * One array for each distinct list of conditions: thousands of cards share a handful (all True,
   * or waiting for their first probe), and a list of five took about 200 bytes a card. The table
   * is bounded like the cache's status strings (cache/status-strings.ts): emptied when full.
   */
  private sharedConditions(flat: string[]): readonly string[] {
    const id = flat.join('\u0000');
    const shared = this.conditionLists.get(id);
    if (shared) return shared;
    if (this.conditionLists.size >= MAX_CONDITION_LISTS) this.conditionLists.clear();
    this.conditionLists.set(id, flat);
    return flat;
  }

  /** Drops every series of the card. */
  forgetCard(namespace: string, name: string): void {
    this.cards.delete(`${namespace}/${name}`);
  }
}

function* readySeries({
  namespace,
  name,
  ready,
}: CardRecord): Generator<Sample<'namespace' | 'name' | 'condition'>> {
  for (const condition of CONDITION_VALUES)
    yield { labels: { namespace, name, condition }, value: condition === ready ? 1 : 0 };
}

function* infoSeries({
  namespace,
  name,
  version,
  digest,
}: CardRecord): Generator<Sample<'namespace' | 'name' | 'version' | 'digest'>> {
  if (version !== undefined && digest !== undefined)
    yield { labels: { namespace, name, version, digest }, value: 1 };
}

function* conditionSeries({
  namespace,
  name,
  conditions: c,
}: CardRecord): Generator<Sample<'namespace' | 'name' | 'type' | 'status' | 'reason'>> {
  for (let i = 0; i + 2 < c.length; i += 3)
    yield { labels: { namespace, name, type: c[i]!, status: c[i + 1]!, reason: c[i + 2]! }, value: 1 };
}

function* certificateSeries({
  namespace,
  name,
  certificates,
}: CardRecord): Generator<Sample<'namespace' | 'name' | 'kid'>> {
  for (const [kid, notAfter] of certificates) yield { labels: { namespace, name, kid }, value: notAfter };
}

function podsMissingSeries({
  namespace,
  name,
  podsMissingSidecar,
}: CardRecord): Sample<'namespace' | 'name'>[] {
  return [{ labels: { namespace, name }, value: podsMissingSidecar }];
}
