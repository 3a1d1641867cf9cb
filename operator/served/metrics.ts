/**
 * agentcard_served_card: the served-card check's verdict per public host of each AgentCard
 * (always 1; a new verdict replaces the series, like agentcard_condition).
 */
import { Gauge, type Registry } from 'prom-client';
import type { ServedVerdictName } from './compare.ts';

type Labels = 'namespace' | 'name' | 'audience' | 'host' | 'verdict';

export class ServedMetrics {
  readonly verdict: Gauge<Labels>;
  /** The labels of each card's current series, to replace or drop them. */
  #series = new Map<string, Array<Record<Labels, string>>>();

  constructor(registry: Registry) {
    this.verdict = new Gauge({
      name: 'agentcard_served_card',
      help: 'What a client receives from each public host checked (spec.audiences[].verifyServed): 1 for the current verdict (ServedAsSigned, ServedAsPublished, Rewritten, SignatureBroken, Unreachable).',
      labelNames: ['namespace', 'name', 'audience', 'host', 'verdict'],
      registers: [registry],
    });
  }

  /** Replaces the card's series with one per checked host. */
  set(
    card: { namespace: string; name: string },
    hosts: ReadonlyArray<{ audience: string; host: string; verdict: ServedVerdictName }>,
  ): void {
    this.forget(card);
    const series = hosts.map((h) => ({ ...card, audience: h.audience, host: h.host, verdict: h.verdict }));
    for (const labels of series) this.verdict.set(labels, 1);
    this.#series.set(`${card.namespace}/${card.name}`, series);
  }

  forget(card: { namespace: string; name: string }): void {
    const key = `${card.namespace}/${card.name}`;
    for (const labels of this.#series.get(key) ?? []) this.verdict.remove(labels);
    this.#series.delete(key);
  }
}
