/**
 * Probe metrics in the style of blackbox_exporter, on a registry the caller gives. Label values
 * are bounded: an interface is named by its index in supportedInterfaces (never its URL) and a
 * custom binding by 'custom' (binding strings are user input).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
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

export function createProbeMetrics(registry: Registry): ProbeMetrics {
  const success = new Gauge({
    name: 'agentcard_probe_success',
    help: 'Whether the last probe proved the interface speaks its declared binding (1) or not (0).',
    labelNames: ['namespace', 'name', 'interface', 'binding'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'agentcard_probe_duration_seconds',
    help: 'Duration of probe phases (dns, connect, tls, request).',
    labelNames: ['binding', 'phase'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const notAfter = new Gauge({
    name: 'agentcard_probe_tls_not_after_seconds',
    help: 'notAfter of the TLS certificate an interface presented, in Unix seconds.',
    labelNames: ['namespace', 'name', 'interface'],
    registers: [registry],
  });
  const total = new Counter({
    name: 'agentcard_probes_total',
    help: 'Probes run, by binding and verdict reason.',
    labelNames: ['binding', 'reason'],
    registers: [registry],
  });
  // What each interface's series carry, by card then interface index: the binding label, so a
  // changed binding drops the old series and forgetting a card touches only its own series (the
  // scheduler forgets every card at shutdown: a scan of all series per card was quadratic, 71 s of
  // CPU at 10,000 cards); and whether a TLS expiry series exists, so that the probes of plain HTTP
  // interfaces (most of them) do not build a label set to remove one that is not there.
  const seriesOf = new Map<string, Map<number, { binding: string; tls: boolean }>>();

  return {
    record(card, index, result) {
      const binding = bindingLabel(result.protocolBinding);
      const cardKey = `${card.namespace}/${card.name}`;
      const iface = String(index);
      let series = seriesOf.get(cardKey);
      if (!series) seriesOf.set(cardKey, (series = new Map()));
      let known = series.get(index);
      if (!known) series.set(index, (known = { binding, tls: false }));
      if (known.binding !== binding) {
        success.remove({
          namespace: card.namespace,
          name: card.name,
          interface: iface,
          binding: known.binding,
        });
        known.binding = binding;
      }
      success.set(
        { namespace: card.namespace, name: card.name, interface: iface, binding },
        result.reachable ? 1 : 0,
      );
      total.inc({ binding, reason: result.reason });
      const { dnsMs, connectMs, tlsMs, requestMs } = result.phases;
      if (dnsMs !== undefined) duration.observe({ binding, phase: 'dns' }, dnsMs / 1000);
      if (connectMs !== undefined) duration.observe({ binding, phase: 'connect' }, connectMs / 1000);
      if (tlsMs !== undefined) duration.observe({ binding, phase: 'tls' }, tlsMs / 1000);
      if (requestMs !== undefined) duration.observe({ binding, phase: 'request' }, requestMs / 1000);
      if (result.tlsNotAfter) {
        const labels = { namespace: card.namespace, name: card.name, interface: iface };
        notAfter.set(labels, Math.floor(Date.parse(result.tlsNotAfter) / 1000));
        known.tls = true;
      } else if (known.tls) {
        notAfter.remove({ namespace: card.namespace, name: card.name, interface: iface });
        known.tls = false;
      }
    },
    forget(card, fromIndex = 0) {
      const cardKey = `${card.namespace}/${card.name}`;
      const series = seriesOf.get(cardKey);
      if (!series) return;
      for (const [index, known] of series) {
        if (index < fromIndex) continue;
        const labels = { namespace: card.namespace, name: card.name, interface: String(index) };
        success.remove({ ...labels, binding: known.binding });
        if (known.tls) notAfter.remove(labels);
        series.delete(index);
      }
      if (series.size === 0) seriesOf.delete(cardKey);
    },
  };
}
