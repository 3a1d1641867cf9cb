/**
 * A gauge whose series are built when Prometheus scrapes, from state the caller already keeps,
 * instead of being stored as label sets between scrapes.
 *
 * prom-client keeps every series of a Gauge as a label object plus a hash-key string, hundreds of
 * bytes each; per-object gauges (a dozen series per AgentCard) made that the largest share of the
 * operator's heap at scale (docs/scaling.md). This is prom-client's own Gauge, registered as
 * usual, with `get()` (what the Registry calls on every scrape) overridden to yield the series
 * from `collect`. Its label-set methods (set, inc, remove) are not used: nothing is stored.
 */
import { Gauge, type LabelValues, type Registry } from 'prom-client';

export interface Sample<T extends string> {
  labels: LabelValues<T>;
  value: number;
}

export class ScrapeTimeGauge<T extends string> extends Gauge<T> {
  private readonly samples: () => Iterable<Sample<T>>;

  constructor(
    config: { name: string; help: string; labelNames: readonly T[]; registers: Registry[] },
    samples: () => Iterable<Sample<T>>,
  ) {
    super(config);
    this.samples = samples;
  }

  /** Name, help, type and aggregator as prom-client reports them; the values built now. */
  override async get(): ReturnType<Gauge<T>['get']> {
    const base = await super.get();
    return { ...base, values: [...this.samples()] };
  }
}
