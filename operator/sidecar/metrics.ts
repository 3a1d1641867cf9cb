/**
 * The sidecar's Prometheus metrics. Request counts are kept in plain numbers on the hot path
 * and handed to prom-client only when /metrics is scraped.
 */
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';

export interface SidecarMetrics {
  request(route: string, status: number): void;
  loaded(digest: string, cardVersion: string): void;
  refused(): void;
}

export function createSidecarMetrics(registry: Registry): SidecarMetrics {
  const counts = new Map<string, Map<number, number>>();
  new Counter({
    name: 'agentcard_sidecar_requests_total',
    help: 'HTTP requests answered, by path (or "other") and status code.',
    labelNames: ['path', 'code'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [path, byCode] of counts) {
        for (const [code, n] of byCode) this.inc({ path, code: String(code) }, n);
      }
    },
  });
  const info = new Gauge({
    name: 'agentcard_sidecar_card_info',
    help: 'The card being served: sha256 digest of agent-card.json and the card version (value 1).',
    labelNames: ['digest', 'version'] as const,
    registers: [registry],
  });
  const loaded = new Gauge({
    name: 'agentcard_sidecar_card_loaded',
    help: '1 when a valid card is being served, else 0.',
    registers: [registry],
  });
  const reloads = new Counter({
    name: 'agentcard_sidecar_reloads_total',
    help: 'New card versions loaded from the mounted directory.',
    registers: [registry],
  });
  const failures = new Counter({
    name: 'agentcard_sidecar_reload_failures_total',
    help: 'New versions of the card files refused as invalid (the last good version stays served).',
    registers: [registry],
  });
  loaded.set(0);

  return {
    request(route, status) {
      let byCode = counts.get(route);
      if (!byCode) counts.set(route, (byCode = new Map()));
      byCode.set(status, (byCode.get(status) ?? 0) + 1);
    },
    loaded(digest, cardVersion) {
      info.reset();
      info.set({ digest, version: cardVersion }, 1);
      loaded.set(1);
      reloads.inc();
    },
    refused() {
      failures.inc();
    },
  };
}
