import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { writeExposition } from '../../../operator/metrics/exposition.ts';
import { ScrapeTimeGauge } from '../../../operator/metrics/scrape-time.ts';

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function serve(registry: Registry): Promise<string> {
  server = createServer((_req, res) => void writeExposition(registry, res));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
}

/** A registry like the operator's: process metrics, labelled counters, a histogram, scrape-time series. */
function operatorLikeRegistry(cards: number): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const writes = new Counter({
    name: 't_writes_total',
    help: 'w',
    labelNames: ['resource'],
    registers: [registry],
  });
  writes.inc({ resource: 'status' }, 3);
  writes.inc({ resource: 'configmap' });
  const latency = new Histogram({
    name: 't_seconds',
    help: 'l',
    labelNames: ['phase'],
    registers: [registry],
  });
  latency.observe({ phase: 'connect' }, 0.02);
  new Gauge({ name: 't_empty', help: 'no series', registers: [registry] });
  new ScrapeTimeGauge(
    { name: 't_ready', help: 'r "quoted" \\ help', labelNames: ['name'], registers: [registry] },
    function* () {
      for (let i = 0; i < cards; i++)
        yield { labels: { name: `card-${i}-with "quotes" and \\ backslash` }, value: i % 2 };
    },
  );
  return registry;
}

describe('writeExposition', () => {
  it('answers the same bytes as registry.metrics(), metric by metric', async () => {
    const registry = operatorLikeRegistry(50);
    const url = await serve(registry);
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(registry.contentType);
    const body = await res.text();
    // Process metrics change between two reads (CPU, memory): compare the rest exactly.
    const stable = (text: string) =>
      text
        .split('\n\n')
        .filter((block) => block.includes('# HELP t_'))
        .join('\n\n');
    expect(stable(body)).toBe(stable(await registry.metrics()));
    expect(stable(body)).toContain('t_ready{name="card-49-with \\"quotes\\" and \\\\ backslash"} 1');
    expect(body.endsWith('}\n') || body.endsWith(' 0\n') || /\d\n$/.test(body)).toBe(true);
    expect(body.split('\n\n').length).toBe(registry.getMetricsAsArray().length);
  });

  it('writes an exposition larger than the socket buffers completely to a slow reader', async () => {
    // About 5 MiB of text: the response is written under backpressure, metric after metric.
    const registry = new Registry();
    for (let m = 0; m < 4; m++) {
      new ScrapeTimeGauge(
        { name: `big_${m}`, help: 'h', labelNames: ['name'], registers: [registry] },
        function* () {
          for (let i = 0; i < 15_000; i++)
            yield { labels: { name: `agent-card-number-${i}-${'x'.repeat(40)}` }, value: i };
        },
      );
    }
    const expected = await registry.metrics();
    const url = new URL(await serve(registry));
    const body = await new Promise<string>((resolve, reject) => {
      request(url, (res) => {
        const chunks: Buffer[] = [];
        res.pause();
        // Read a chunk every few milliseconds: the server must wait for 'drain' in between.
        const timer = setInterval(() => {
          let chunk: Buffer | null;
          while ((chunk = res.read() as Buffer | null) !== null) chunks.push(chunk);
        }, 5);
        res.on('end', () => {
          clearInterval(timer);
          resolve(Buffer.concat(chunks).toString('utf8'));
        });
        res.on('error', reject);
      })
        .on('error', reject)
        .end();
    });
    expect(expected.length).toBeGreaterThan(4 * 2 ** 20);
    expect(body).toBe(expected);
  });

  it('answers 500 when the first metric fails, and cuts the connection when a later one does', async () => {
    const failing = (name: string, registry: Registry) =>
      new ScrapeTimeGauge({ name, help: 'h', labelNames: [], registers: [registry] }, () => {
        throw new Error('collect failed');
      });
    const first = new Registry();
    failing('a_fails', first);
    new Counter({ name: 'b_total', help: 'h', registers: [first] });
    const res = await fetch(await serve(first));
    expect(res.status).toBe(500);
    expect(await res.text()).toBe('');
    await new Promise<void>((resolve) => server!.close(() => resolve()));

    const later = new Registry();
    new Counter({ name: 'a_total', help: 'h', registers: [later] }).inc();
    failing('b_fails', later);
    // A scrape that ends early must fail at the scraper, not look complete with series missing
    // (the headers and the first metric may or may not have reached it before the cut).
    const url = await serve(later);
    await expect(fetch(url).then((r) => r.text())).rejects.toThrow();
  });
});
