/**
 * The sidecar's Prometheus metrics, written in the text exposition format (version 0.0.4)
 * without prom-client: the sidecar runs in every agent Pod, and the client library alone would
 * add about 8 MiB to its resident memory. Counts are plain numbers on the hot path.
 */
import { memoryUsage } from 'node:process';

export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export interface SidecarMetrics {
  request(route: string, status: number): void;
  loaded(digest: string, cardVersion: string): void;
  refused(): void;
  /** The exposition text, built when /metrics is scraped. */
  render(): string;
}

export function createSidecarMetrics(): SidecarMetrics {
  const counts = new Map<string, Map<number, number>>();
  let card: { digest: string; version: string } | undefined;
  let reloads = 0;
  let failures = 0;
  const startSeconds = Math.floor(Date.now() / 1000);

  return {
    request(route, status) {
      let byCode = counts.get(route);
      if (!byCode) counts.set(route, (byCode = new Map()));
      byCode.set(status, (byCode.get(status) ?? 0) + 1);
    },
    loaded(digest, version) {
      card = { digest, version };
      reloads++;
    },
    refused() {
      failures++;
    },
    render() {
      const lines: string[] = [];
      const family = (name: string, type: string, help: string, samples: string[]) =>
        lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples);
      const requests: string[] = [];
      for (const [path, byCode] of counts) {
        for (const [code, n] of byCode) {
          requests.push(`agentcard_sidecar_requests_total{path="${label(path)}",code="${code}"} ${n}`);
        }
      }
      family(
        'agentcard_sidecar_requests_total',
        'counter',
        'HTTP requests answered, by path (or "other") and status code.',
        requests,
      );
      family(
        'agentcard_sidecar_card_info',
        'gauge',
        'The card being served: sha256 digest of agent-card.json and the card version (value 1).',
        card
          ? [`agentcard_sidecar_card_info{digest="${label(card.digest)}",version="${label(card.version)}"} 1`]
          : [],
      );
      family('agentcard_sidecar_card_loaded', 'gauge', '1 when a valid card is being served, else 0.', [
        `agentcard_sidecar_card_loaded ${card ? 1 : 0}`,
      ]);
      family(
        'agentcard_sidecar_reloads_total',
        'counter',
        'Card versions loaded from the mounted directory.',
        [`agentcard_sidecar_reloads_total ${reloads}`],
      );
      family(
        'agentcard_sidecar_reload_failures_total',
        'counter',
        'Versions of the card files refused as invalid (the last good version stays served).',
        [`agentcard_sidecar_reload_failures_total ${failures}`],
      );
      // The usual process gauges, under the names prom-client's default metrics use.
      const mem = memoryUsage();
      family('process_resident_memory_bytes', 'gauge', 'Resident memory size in bytes.', [
        `process_resident_memory_bytes ${mem.rss}`,
      ]);
      family('process_start_time_seconds', 'gauge', 'Start time of the process since the epoch in seconds.', [
        `process_start_time_seconds ${startSeconds}`,
      ]);
      family('nodejs_heap_size_total_bytes', 'gauge', 'Process heap size from Node.js in bytes.', [
        `nodejs_heap_size_total_bytes ${mem.heapTotal}`,
      ]);
      family('nodejs_heap_size_used_bytes', 'gauge', 'Process heap size used from Node.js in bytes.', [
        `nodejs_heap_size_used_bytes ${mem.heapUsed}`,
      ]);
      return lines.join('\n') + '\n';
    },
  };
}

/** Label value escaping of the text format: backslash, double quote and line feed. */
export function label(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : '\\' + c));
}
