/**
 * Writes a Registry's exposition to an HTTP response one metric at a time: the same bytes as
 * `registry.metrics()`, without holding them all at once.
 *
 * `registry.metrics()` formats every metric at the same time and joins the results. At 10,000
 * AgentCards (a dozen series each, 13 MiB of text) a registry alone grew its process by about
 * 90 MiB for the scrape, 66 MiB when written metric by metric (docs/scaling.md, "What a metrics
 * scrape costs"); the operator's benchmark reached its peak RSS at its scrapes. Here each metric
 * is formatted by prom-client's own `getSingleMetricAsString`, written, and let go before the
 * next; a scraper that reads slowly holds back the next metric (the socket's
 * backpressure) rather than letting the text pile up in memory.
 */
import type { ServerResponse } from 'node:http';
import { Registry } from 'prom-client';

/** Resolves once the response can take more, or has closed (a scraper that went away). */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * Answers 200 with the exposition, or 500 when the first metric already fails. A metric that
 * fails after the headers went out cuts the connection: the scraper sees a failed scrape, never
 * a complete-looking body with series missing.
 */
export async function writeExposition(registry: Registry, res: ServerResponse): Promise<void> {
  const metrics = registry.getMetricsAsArray();
  let started = false;
  try {
    // OpenMetrics separates and ends differently; this operator's registries use the default.
    if (registry.contentType !== Registry.PROMETHEUS_CONTENT_TYPE) {
      throw new Error('writeExposition writes the Prometheus text format only');
    }
    for (const [i, metric] of metrics.entries()) {
      // The separators registry.metrics() puts between metrics and at the end.
      const text =
        (await registry.getSingleMetricAsString(metric.name)) + (i === metrics.length - 1 ? '\n' : '\n\n');
      if (res.destroyed) return; // The scraper went away: format no more.
      if (!started) {
        res.writeHead(200, { 'Content-Type': registry.contentType });
        started = true;
      }
      if (!res.write(text)) await drained(res);
    }
    if (res.destroyed) return;
    if (!started) res.writeHead(200, { 'Content-Type': registry.contentType }).end('\n');
    else res.end();
  } catch {
    if (started) res.destroy();
    else res.writeHead(500).end();
  }
}
