/**
 * The imports' metrics, built at scrape time from one small record per CatalogImport
 * (metrics/scrape-time.ts), like the policies':
 * - agentcard_import_entries{namespace,import,state}: entries imported (`imported`, stale ones
 *   included), kept stale (`stale`), and refused (`refused`);
 * - agentcard_import_refused{namespace,import,reason}: refused entries by reason;
 * - agentcard_import_last_success_timestamp_seconds{namespace,import}: when the remote catalog
 *   last fetched and verified (an alert: time() - it > the import's maxStaleness).
 * A deleted import has no series.
 */
import type { Registry } from 'prom-client';
import { ScrapeTimeGauge, type Sample } from '../../metrics/scrape-time.ts';

export interface ImportMetricState {
  namespace: string;
  name: string;
  imported: number;
  stale: number;
  refused: Readonly<Record<string, number>>;
  /** ms since the epoch; undefined: never. */
  lastSuccess?: number;
}

export class ImportMetrics {
  private readonly imports = new Map<string, ImportMetricState>();

  constructor(registry: Registry) {
    new ScrapeTimeGauge<'namespace' | 'import' | 'state', ImportMetricState>(
      {
        name: 'agentcard_import_entries',
        help: 'Entries of a CatalogImport by state: imported (verified and stored, stale ones included), stale (kept from an earlier fetch), refused.',
        labelNames: ['namespace', 'import', 'state'],
        registers: [registry],
      },
      { records: () => this.imports.values(), seriesOf: entrySeries },
    );
    new ScrapeTimeGauge<'namespace' | 'import' | 'reason', ImportMetricState>(
      {
        name: 'agentcard_import_refused',
        help: 'Entries of a CatalogImport not imported, by reason (status.refused).',
        labelNames: ['namespace', 'import', 'reason'],
        registers: [registry],
      },
      { records: () => this.imports.values(), seriesOf: refusedSeries },
    );
    new ScrapeTimeGauge<'namespace' | 'import', ImportMetricState>(
      {
        name: 'agentcard_import_last_success_timestamp_seconds',
        help: "When a CatalogImport's remote catalog was last fetched and verified (seconds since the epoch).",
        labelNames: ['namespace', 'import'],
        registers: [registry],
      },
      { records: () => this.imports.values(), seriesOf: lastSuccessSeries },
    );
  }

  set(key: string, state: ImportMetricState): void {
    this.imports.set(key, { ...state, refused: { ...state.refused } });
  }

  forget(key: string): void {
    this.imports.delete(key);
  }
}

function* entrySeries(s: ImportMetricState): Generator<Sample<'namespace' | 'import' | 'state'>> {
  const labels = { namespace: s.namespace, import: s.name };
  const refused = Object.values(s.refused).reduce((a, b) => a + b, 0);
  yield { labels: { ...labels, state: 'imported' }, value: s.imported };
  yield { labels: { ...labels, state: 'stale' }, value: s.stale };
  yield { labels: { ...labels, state: 'refused' }, value: refused };
}

function* refusedSeries(s: ImportMetricState): Generator<Sample<'namespace' | 'import' | 'reason'>> {
  for (const [reason, value] of Object.entries(s.refused))
    yield { labels: { namespace: s.namespace, import: s.name, reason }, value };
}

function* lastSuccessSeries(s: ImportMetricState): Generator<Sample<'namespace' | 'import'>> {
  if (s.lastSuccess !== undefined)
    yield { labels: { namespace: s.namespace, import: s.name }, value: s.lastSuccess / 1000 };
}
