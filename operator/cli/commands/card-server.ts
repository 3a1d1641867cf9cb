/**
 * `agentcard card-server [--namespace NS]... [--port 8095] [--metrics-port 8096]`
 *
 * The central card server (../../cardserver/server.ts): serves every AgentCard with
 * `spec.serving.server: Central` by Host at /.well-known/, from the ConfigMaps the controller
 * publishes. Reads ConfigMaps only (get/list/watch). Runs until SIGTERM/SIGINT.
 */
import { parseArgs } from 'node:util';
import { UserError } from '../../errors.ts';
import { createLogger } from '../../log.ts';
import { startCardServer } from '../../cardserver/server.ts';
import { KubeClient } from '../../kube/client.ts';
import { loadKubeConfig } from '../../kube/config.ts';
import { SIDECAR_DEFAULTS } from '../../sidecar/http.ts';
import { MAX_AGE_LIMIT } from '../../sidecar/version.ts';

const USAGE = `usage: agentcard card-server [--namespace NS]... [--port 8095] [--metrics-port 8096] [--address ADDR]

Serves, by Host, the cards of every AgentCard with spec.serving.server Central at
/.well-known/agent-card.json, agent.json and jwks.json, from their published ConfigMaps
(labelled agentcard.dev/serving=central). A host no card claims, or one two cards claim,
gets 404. /healthz, /readyz and /metrics are on the metrics port.

  --namespace NS            serve the cards of NS (repeatable; default: every namespace)
  --kubeconfig FILE         kubeconfig (default: KUBECONFIG, then the in-cluster service account)
  --port N                  card port (default 8095; 0 picks a free port)
  --metrics-port N          health and metrics port (default 8096; 0 picks a free port)
  --address ADDR            listen address (default: all interfaces)
  --max-age SECONDS         Cache-Control max-age for a ConfigMap without cache-max-age-seconds (default 300)
  --max-header-size BYTES   request header bytes accepted (default ${SIDECAR_DEFAULTS.maxHeaderBytes})
  --keep-alive SECONDS      idle keep-alive timeout (default ${SIDECAR_DEFAULTS.keepAliveSeconds}; keep it above the load balancer's)
  --trust-forwarded-host    select the card by X-Forwarded-Host (only behind a proxy that sets it)
`;

export async function run(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        namespace: { type: 'string', multiple: true, default: [] },
        kubeconfig: { type: 'string' },
        port: { type: 'string', default: '8095' },
        'metrics-port': { type: 'string', default: '8096' },
        address: { type: 'string' },
        'max-age': { type: 'string', default: '300' },
        'max-header-size': { type: 'string', default: String(SIDECAR_DEFAULTS.maxHeaderBytes) },
        'keep-alive': { type: 'string', default: String(SIDECAR_DEFAULTS.keepAliveSeconds) },
        'trust-forwarded-host': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new UserError(`card-server: ${(err as Error).message}`, 2);
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const port = intFlag('--port', values.port, 0, 65535);
  const metricsPort = intFlag('--metrics-port', values['metrics-port'], 0, 65535);
  const maxAge = intFlag('--max-age', values['max-age'], 0, MAX_AGE_LIMIT);
  const maxHeaderSize = intFlag('--max-header-size', values['max-header-size'], 1024, 1024 * 1024);
  const keepAliveSeconds = intFlag('--keep-alive', values['keep-alive'], 1, 86_400);
  if (port !== 0 && port === metricsPort)
    throw new UserError('card-server: --port and --metrics-port must differ', 2);
  const namespaces = values.namespace.flatMap((n) => n.split(',')).map((n) => n.trim());
  for (const ns of namespaces) {
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(ns))
      throw new UserError(`card-server: --namespace '${ns.slice(0, 70)}' is not a namespace name`, 2);
  }

  const logger = createLogger({ component: 'card-server' });
  const client = new KubeClient(loadKubeConfig({ kubeconfig: values.kubeconfig }));
  const server = await startCardServer({
    client,
    namespaces,
    port,
    metricsPort,
    host: values.address,
    defaultMaxAgeSeconds: maxAge,
    maxHeaderSize,
    keepAliveSeconds,
    trustForwardedHost: values['trust-forwarded-host'] === true,
    logger,
  });
  logger.info('listening', {
    port: server.port,
    metricsPort: server.metricsPort,
    namespaces: namespaces.length ? namespaces : 'all',
  });

  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info('shutting down', { signal });
      void server.close().then(resolve);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  return 0;
}

function intFlag(name: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max) {
    throw new UserError(`card-server: ${name} must be an integer from ${min} to ${max}, got '${text}'`, 2);
  }
  return value;
}
