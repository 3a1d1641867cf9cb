import { Registry, collectDefaultMetrics } from 'prom-client';

/**
 * One Prometheus registry per process. Each concern (controller, probe, sidecar, webhook)
 * registers its own metrics on the registry it is given, so tests can use a fresh one.
 */
export function createRegistry(opts: { processMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  if (opts.processMetrics ?? true) collectDefaultMetrics({ register: registry });
  return registry;
}
