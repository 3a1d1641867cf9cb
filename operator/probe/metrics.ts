/**
 * Probe metrics in the style of blackbox_exporter, on a registry the caller gives. Label values
 * are bounded: an interface is named by its index in supportedInterfaces (never its URL) and a
 * custom binding by 'custom' (binding strings are user input).
 *
 * The per-interface series (success, certificate expiry) are built at scrape time from one small
 * record per interface kept here (metrics/scrape-time.ts): prom-client's own label sets for them
 * held about 11 MiB at 10,000 AgentCards (30,000 interfaces), and each probe rebuilt and hashed
 * two of them.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import { ScrapeTimeGauge } from '../metrics/scrape-time.ts';
import { KNOWN_BINDINGS, type ProbeResult } from './types.ts';

export interface ProbeMetrics {
  /** Records one probe of interface `index` of AgentCard namespace/name. */
  record(card: { namespace: string; name: string }, index: number, result: ProbeResult): void;
  /** Drops the per-interface series of a card, from interface `fromIndex` on (all by default). */
  forget(card: { namespace: string; name: string }, fromIndex?: number): void;
}

export function bindingLabel(binding: string): string {
  return (KNOWN_BINDINGS as readonly string[]).includes(binding) ? binding : 'custom';
}

/** The last probe of one interface, as its series report it. */
interface InterfaceSample {
  binding: string;
  success: 0 | 1;
  /** notAfter of the certificate it presented, in Unix seconds; undefined without TLS. */
  notAfter: number | undefined;
}

/** One card's interfaces, by index in supportedInterfaces (holes: not probed yet or forgotten). */
interface CardSamples {
  namespace: string;
  name: string;
  interfaces: (InterfaceSample | undefined)[];
}

export function createProbeMetrics(registry: Registry): ProbeMetrics {
  // By "namespace/name": forgetting a card touches only its own record (the scheduler forgets
  // every card at shutdown: a scan of all series per card was quadratic, 71 s of CPU at 10,000).
  const cards = new Map<string, CardSamples>();
  new ScrapeTimeGauge(
    {
      name: 'agentcard_probe_success',
      help: 'Whether the last probe proved the interface speaks its declared binding (1) or not (0).',
      labelNames: ['namespace', 'name', 'interface', 'binding'],
      registers: [registry],
    },
    {
      records: () => cards.values(),
      *seriesOf({ namespace, name, interfaces }: CardSamples) {
        for (const [i, s] of interfaces.entries())
          if (s)
            yield { labels: { namespace, name, interface: String(i), binding: s.binding }, value: s.success };
      },
    },
  );
  const duration = new Histogram({
    name: 'agentcard_probe_duration_seconds',
    help: 'Duration of probe phases (dns, connect, tls, request).',
    labelNames: ['binding', 'phase'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  new ScrapeTimeGauge(
    {
      name: 'agentcard_probe_tls_not_after_seconds',
      help: 'notAfter of the TLS certificate an interface presented, in Unix seconds.',
      labelNames: ['namespace', 'name', 'interface'],
      registers: [registry],
    },
    {
      records: () => cards.values(),
      *seriesOf({ namespace, name, interfaces }: CardSamples) {
        for (const [i, s] of interfaces.entries())
          if (s?.notAfter !== undefined)
            yield { labels: { namespace, name, interface: String(i) }, value: s.notAfter };
      },
    },
  );
  const total = new Counter({
    name: 'agentcard_probes_total',
    help: 'Probes run, by binding and verdict reason.',
    labelNames: ['binding', 'reason'],
    registers: [registry],
  });

  return {
    record(card, index, result) {
      const binding = bindingLabel(result.protocolBinding);
      const key = `${card.namespace}/${card.name}`;
      let samples = cards.get(key);
      if (!samples)
        cards.set(key, (samples = { namespace: card.namespace, name: card.name, interfaces: [] }));
      const success = result.reachable ? 1 : 0;
      const notAfter = result.tlsNotAfter ? Math.floor(Date.parse(result.tlsNotAfter) / 1000) : undefined;
      const sample = samples.interfaces[index];
      // Updated in place: the probes of an interface already recorded make no new record.
      if (sample) {
        sample.binding = binding;
        sample.success = success;
        sample.notAfter = notAfter;
      } else samples.interfaces[index] = { binding, success, notAfter };
      total.inc({ binding, reason: result.reason });
      const { dnsMs, connectMs, tlsMs, requestMs } = result.phases;
      if (dnsMs !== undefined) duration.observe({ binding, phase: 'dns' }, dnsMs / 1000);
      if (connectMs !== undefined) duration.observe({ binding, phase: 'connect' }, connectMs / 1000);
      if (tlsMs !== undefined) duration.observe({ binding, phase: 'tls' }, tlsMs / 1000);
      if (requestMs !== undefined) duration.observe({ binding, phase: 'request' }, requestMs / 1000);
    },
    forget(card, fromIndex = 0) {
      const key = `${card.namespace}/${card.name}`;
      const samples = cards.get(key);
      if (!samples) return;
      samples.interfaces.length = Math.min(samples.interfaces.length, fromIndex);
      if (!samples.interfaces.some((s) => s !== undefined)) cards.delete(key);
    },
  };
}
