import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { writeExposition } from '../../../operator/metrics/exposition.ts';
import { ScrapeTimeGauge } from '../../../operator/metrics/scrape-time.ts';
import { ControllerMetrics } from '../../../operator/controllers/metrics.ts';

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** 0, 1, …, n - 1: records of a gauge under test. */
function* range(n: number): Generator<number> {
  for (let i = 0; i < n; i++) yield i;
}

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
    {
      records: () => range(cards),
      seriesOf: (i) => [{ labels: { name: `card-${i}-with "quotes" and \\ backslash` }, value: i % 2 }],
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
        {
          records: () => range(15_000),
          seriesOf: (i) => [{ labels: { name: `agent-card-number-${i}-${'x'.repeat(40)}` }, value: i }],
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
      new ScrapeTimeGauge(
        { name, help: 'h', labelNames: [], registers: [registry] },
        {
          records: () => {
            throw new Error('collect failed');
          },
          seriesOf: () => [],
        },
      );
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

  it('writes scrape-time gauges in pieces with the same bytes, whatever the piece boundaries', async () => {
    const registry = new Registry();
    new Counter({ name: 'a_total', help: 'h', registers: [registry] }).inc();
    // Series counts around the piece size (50), and none: the page must not change.
    for (const count of [0, 1, 49, 50, 51, 2_500]) {
      new ScrapeTimeGauge(
        { name: `g_${count}`, help: 'line one\nline "two"', labelNames: ['name'], registers: [registry] },
        { records: () => range(count), seriesOf: (i) => [{ labels: { name: `card-${i}` }, value: i }] },
      );
    }
    const res = await fetch(await serve(registry));
    expect(await res.text()).toBe(await registry.metrics());
  });

  it('cuts a gauge into pieces prom-client formats, the later ones without HELP and TYPE', async () => {
    const registry = new Registry();
    const gauge = new ScrapeTimeGauge(
      { name: 'g', help: 'h', labelNames: ['name'], registers: [registry] },
      { records: () => range(7), seriesOf: (i) => [{ labels: { name: `n${i}` }, value: i }] },
    );
    const pieces: string[] = [];
    for await (const piece of gauge.pieces(registry, 3)) pieces.push(piece);
    expect(pieces).toEqual([
      '# HELP g h\n# TYPE g gauge\ng{name="n0"} 0\ng{name="n1"} 1\ng{name="n2"} 2',
      'g{name="n3"} 3\ng{name="n4"} 4\ng{name="n5"} 5',
      'g{name="n6"} 6',
    ]);
    expect(pieces.join('\n')).toBe(await registry.getSingleMetricAsString('g'));
  });

  it('reads the records as they were when its first piece was made', async () => {
    const registry = new Registry();
    const records = new Map([...'abcd'].map((name, i) => [name, { name, value: i }]));
    const gauge = new ScrapeTimeGauge(
      { name: 'g', help: 'h', labelNames: ['name'], registers: [registry] },
      { records: () => records.values(), seriesOf: ({ name, value }) => [{ labels: { name }, value }] },
    );
    const pieces: string[] = [];
    for await (const piece of gauge.pieces(registry, 2)) {
      if (pieces.length === 0) {
        // Between two pieces: "a" removed and added again (a Map puts it last), "c" changed in place,
        // "e" added. A scrape that started before reports "a" once and not "e".
        records.delete('a');
        records.set('a', { name: 'a', value: 10 });
        records.get('c')!.value = 12;
        records.set('e', { name: 'e', value: 4 });
      }
      pieces.push(piece);
    }
    expect(pieces.join('\n').split('\n').slice(2)).toEqual([
      'g{name="a"} 0',
      'g{name="b"} 1',
      'g{name="c"} 12',
      'g{name="d"} 3',
    ]);
  });

  it('gives concurrent scrapes the whole page each', async () => {
    const registry = operatorLikeRegistry(3_500);
    const url = await serve(registry);
    const bodies = await Promise.all([1, 2, 3].map(() => fetch(url).then((r) => r.text())));
    const ready = (text: string) =>
      text
        .split('\n\n')
        .find((block) => block.startsWith('# HELP t_ready'))
        ?.trimEnd();
    const expected = ready(await registry.metrics());
    expect(expected?.split('\n')).toHaveLength(3_502);
    for (const body of bodies) expect(ready(body)).toBe(expected);
  });

  it('lets other work run between pieces, and reports a card changed meanwhile once', async () => {
    const registry = new Registry();
    const cards = new ControllerMetrics(registry);
    for (let i = 0; i < 2_000; i++)
      cards.setCard('ns', `card-${i}`, { ready: 'False', version: '1.0.0', digest: 'sha256:aa' });
    server = createServer((_req, res) => {
      // Runs at the scrape's first turn of the event loop: between two pieces of agentcard_ready.
      setImmediate(() => {
        cards.forgetCard('ns', 'card-0');
        cards.setCard('ns', 'card-0', { ready: 'True', version: '2.0.0', digest: 'sha256:bb' });
      });
      void writeExposition(registry, res);
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const body = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`).then((r) =>
      r.text(),
    );
    const lines = body.split('\n');
    // agentcard_ready was read before the change (its first piece already out), agentcard_info after.
    expect(lines.filter((l) => l.startsWith('agentcard_ready{namespace="ns",name="card-0",'))).toEqual([
      'agentcard_ready{namespace="ns",name="card-0",condition="True"} 0',
      'agentcard_ready{namespace="ns",name="card-0",condition="False"} 1',
      'agentcard_ready{namespace="ns",name="card-0",condition="Unknown"} 0',
    ]);
    expect(lines.filter((l) => l.startsWith('agentcard_info{namespace="ns",name="card-0",'))).toEqual([
      'agentcard_info{namespace="ns",name="card-0",version="2.0.0",digest="sha256:bb"} 1',
    ]);
    expect(lines.filter((l) => l.startsWith('agentcard_info{'))).toHaveLength(2_000);
  });
});
