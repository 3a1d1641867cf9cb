/**
 * A gauge whose series are built when Prometheus scrapes, from state the caller already keeps,
 * instead of being stored as label sets between scrapes.
 *
 * prom-client keeps every series of a Gauge as a label object plus a hash-key string, hundreds of
 * bytes each; per-object gauges (a dozen series per AgentCard) made that the largest share of the
 * operator's heap at scale (docs/scaling.md). This is prom-client's own Gauge, registered as
 * usual, with `get()` (what the Registry calls on every scrape) overridden to yield the series
 * from the caller's records. Its label-set methods (set, inc, remove) are not used: nothing is stored.
 *
 * The caller gives its records (`records`, for example a Map's values) and the series of one
 * record (`seriesOf`). The gauge copies the list of records when a scrape starts reading it: the
 * exposition pulls the series in pieces across turns of the event loop (`pieces`), and a record
 * removed and added again meanwhile would otherwise be reported twice in one scrape. A record
 * changed in place meanwhile is reported once, as it is when its series are read.
 */
import { Gauge, type LabelValues, type Registry } from 'prom-client';

export interface Sample<T extends string> {
  labels: LabelValues<T>;
  value: number;
}

/** Where a ScrapeTimeGauge's series come from: the caller's records, and each one's series. */
export interface ScrapeTimeSource<T extends string, R> {
  /** The records as they are now; iterated once per scrape, and copied before the first series. */
  records: () => Iterable<R>;
  /** The series of one record (none, one or several). */
  seriesOf: (record: R) => Iterable<Sample<T>>;
}

export class ScrapeTimeGauge<T extends string, R = unknown> extends Gauge<T> {
  private readonly metricName: string;
  private readonly source: ScrapeTimeSource<T, R>;
  /** While set, `get()` answers these series only: one piece of the exposition. */
  private piece: Sample<T>[] | undefined;
  private pieceTaken = false;

  constructor(
    config: { name: string; help: string; labelNames: readonly T[]; registers: Registry[] },
    source: ScrapeTimeSource<T, R>,
  ) {
    super(config);
    this.metricName = config.name;
    this.source = source;
  }

  /** Every series, from a copy of the records taken at the first one. */
  private *samples(): Generator<Sample<T>> {
    for (const record of Array.from(this.source.records())) yield* this.source.seriesOf(record);
  }

  /** Name, help, type and aggregator as prom-client reports them; the values built now. */
  override async get(): ReturnType<Gauge<T>['get']> {
    // Read before the first await: `pieces` sets `piece` only for the duration of the call.
    const values = this.piece ?? [...this.samples()];
    this.pieceTaken = true;
    const base = await super.get();
    return { ...base, values };
  }

  /**
   * This gauge's exposition as `registry` formats it (prom-client's `getSingleMetricAsString`,
   * so escaping and default labels are the registry's own), in pieces of at most `size` series:
   * the first piece with the HELP and TYPE lines, the later ones their series' lines only, to be
   * joined with "\n". Joined, they are the bytes `getSingleMetricAsString` answers for the whole.
   *
   * At 10,000 AgentCards one gauge has up to 50,000 series: formatted at once, every line stays
   * alive until the last is joined, and the lot outlives the young generation into the old one,
   * which grows the process by tens of MiB per scrape (docs/scaling.md, "What a metrics scrape
   * costs"). A small piece's garbage dies young (exposition.ts, PIECE_SERIES).
   */
  async *pieces(registry: Registry, size: number): AsyncGenerator<string> {
    let batch: Sample<T>[] = [];
    let first = true;
    const format = async (values: Sample<T>[]): Promise<string> => {
      this.piece = values;
      this.pieceTaken = false;
      let text: Promise<string>;
      try {
        text = registry.getSingleMetricAsString(this.metricName);
      } finally {
        this.piece = undefined;
      }
      // A prom-client that asked for the values later would have been given every series.
      if (!this.pieceTaken)
        throw new Error(`${this.metricName}: the registry did not read the piece's series`);
      const whole = await text;
      if (first) return whole;
      // Drop the "# HELP" and "# TYPE" lines (HELP's own line breaks are escaped).
      return whole.slice(whole.indexOf('\n', whole.indexOf('\n') + 1) + 1);
    };
    for (const sample of this.samples()) {
      batch.push(sample);
      if (batch.length < size) continue;
      yield await format(batch);
      first = false;
      batch = [];
    }
    if (first || batch.length > 0) yield await format(batch);
  }
}
