/**
 * Writes a Registry's exposition to an HTTP response one metric at a time: the same bytes as
 * `registry.metrics()`, without holding them all at once.
 *
 * `registry.metrics()` formats every metric at the same time and joins the results. At 10,000
 * AgentCards (a dozen series each, 13 MiB of text) a registry alone grew its process by about
 * 90 MiB for the scrape, 66 MiB when written metric by metric (docs/scaling.md, "What a metrics
 * scrape costs"); the operator's benchmark reached its peak RSS at its scrapes. Here each metric
 * is formatted by prom-client's own `getSingleMetricAsString`, written, and let go before the
 * next (a scrape-time gauge fifty series at a time); a scraper that reads slowly holds back
 * the next piece (the socket's backpressure) rather than letting the text pile up in memory.
 */
import type { ServerResponse } from 'node:http';
import { Registry } from 'prom-client';
import { ScrapeTimeGauge } from './scrape-time.ts';

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
 * Series per piece of a scrape-time gauge, about 5 KiB of text. A registry filled like the
 * operator's at 10,000 AgentCards (130,000 series, a 12.9 MiB page), scraped by another process
 * twelve times per kind: the peak RSS rose by 27 to 70 MiB a scrape written metric by metric, by 12
 * to 45 MiB with pieces of 1,000 series, by 1 to 16 MiB with pieces of 50; a scrape took 0.26 to
 * 0.35 s of CPU instead of 0.75 to 0.96 (its garbage dies young: a scavenge's work, not a full
 * collection's), and 0.3 s instead of 0.6 from the first byte to the last. Pieces of 25 and of 100
 * did no better (docs/scaling.md, "What a metrics scrape costs").
 */
const PIECE_SERIES = 50;

/** Lets timers and I/O run between two pieces of a large metric. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Answers 200 with the exposition, or 500 when the first metric already fails. A metric that
 * fails after the headers went out cuts the connection: the scraper sees a failed scrape, never
 * a complete-looking body with series missing.
 *
 * Scrape-time gauges (one series or more per AgentCard) are written in pieces of
 * `PIECE_SERIES` series (ScrapeTimeGauge.pieces), with the event loop's other work let in between:
 * formatted whole, the largest of them kept 50,000 lines alive at once at 10,000 AgentCards.
 */
export async function writeExposition(registry: Registry, res: ServerResponse): Promise<void> {
  const metrics = registry.getMetricsAsArray();
  let started = false;
  /** Writes `text`, waiting while the socket is full; false once the scraper has gone away. */
  const send = async (text: string): Promise<boolean> => {
    if (res.destroyed) return false; // The scraper went away: format no more.
    if (!started) {
      res.writeHead(200, { 'Content-Type': registry.contentType });
      started = true;
    }
    if (!res.write(text)) await drained(res);
    return !res.destroyed;
  };
  try {
    // OpenMetrics separates and ends differently; this operator's registries use the default.
    if (registry.contentType !== Registry.PROMETHEUS_CONTENT_TYPE) {
      throw new Error('writeExposition writes the Prometheus text format only');
    }
    for (const [i, metric] of metrics.entries()) {
      // registry.metrics() joins the metrics with a blank line and ends the page with "\n".
      const separator = i === 0 ? '' : '\n\n';
      if (metric instanceof ScrapeTimeGauge) {
        let first = true;
        for await (const piece of metric.pieces(registry, PIECE_SERIES)) {
          if (!first) await nextTurn();
          if (!(await send((first ? separator : '\n') + piece))) return;
          first = false;
        }
      } else if (!(await send(separator + (await registry.getSingleMetricAsString(metric.name))))) {
        return;
      }
    }
    if (res.destroyed) return;
    if (!started) res.writeHead(200, { 'Content-Type': registry.contentType });
    res.end('\n');
  } catch {
    if (started) res.destroy();
    else res.writeHead(500).end();
  }
}
