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

const PHASES = ['dns', 'connect', 'tls', 'request'] as const;

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
  // Which binding label each interface series carries, by card then interface index, so a changed
  // binding drops the old series and forgetting a card touches only its own series (the scheduler
  // forgets every card at shutdown: a scan of all series per card was quadratic, 71 s of CPU at
  // 10,000 cards).
  const seriesBinding = new Map<string, Map<number, string>>();

  return {
    record(card, index, result) {
      const binding = bindingLabel(result.protocolBinding);
      const cardKey = `${card.namespace}/${card.name}`;
      const iface = String(index);
      let bindings = seriesBinding.get(cardKey);
      if (!bindings) seriesBinding.set(cardKey, (bindings = new Map()));
      const old = bindings.get(index);
      if (old !== undefined && old !== binding) {
        success.remove({ namespace: card.namespace, name: card.name, interface: iface, binding: old });
      }
      bindings.set(index, binding);
      success.set(
        { namespace: card.namespace, name: card.name, interface: iface, binding },
        result.reachable ? 1 : 0,
      );
      total.inc({ binding, reason: result.reason });
      const ms = result.phases;
      const values = { dns: ms.dnsMs, connect: ms.connectMs, tls: ms.tlsMs, request: ms.requestMs };
      for (const phase of PHASES) {
        const v = values[phase];
        if (v !== undefined) duration.observe({ binding, phase }, v / 1000);
      }
      const labels = { namespace: card.namespace, name: card.name, interface: iface };
      if (result.tlsNotAfter) notAfter.set(labels, Math.floor(Date.parse(result.tlsNotAfter) / 1000));
      else notAfter.remove(labels);
    },
    forget(card, fromIndex = 0) {
      const cardKey = `${card.namespace}/${card.name}`;
      const bindings = seriesBinding.get(cardKey);
      if (!bindings) return;
      for (const [index, binding] of bindings) {
        if (index < fromIndex) continue;
        const labels = { namespace: card.namespace, name: card.name, interface: String(index) };
        success.remove({ ...labels, binding });
        notAfter.remove(labels);
        bindings.delete(index);
      }
      if (bindings.size === 0) seriesBinding.delete(cardKey);
    },
  };
}
