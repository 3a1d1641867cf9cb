/**
 * `agentcard sidecar --dir DIR [--port 8095] [--max-age SECONDS] [--metrics-port 8096]`
 *
 * Serves the files of a published card ConfigMap (mounted at DIR) at /.well-known/ and keeps
 * serving the last good version while the kubelet swaps in new ones. Runs until SIGTERM/SIGINT.
 *
 * Memory: see ../../sidecar/runtime.ts for the Node.js settings the injected container uses.
 */
import { existsSync, statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { UserError } from '../../errors.ts';
import { createLogger } from '../../log.ts';
import { SIDECAR_DEFAULTS, startSidecar } from '../../sidecar/server.ts';
import { MAX_AGE_LIMIT } from '../../sidecar/version.ts';

const USAGE = `usage: agentcard sidecar --dir DIR [--port 8095] [--max-age SECONDS] [--metrics-port 8096] [--address ADDR]

Serves agent-card.json, agent.json and jwks.json from DIR (a mounted card ConfigMap) at
/.well-known/ (per-host variants host.<host>.<file> and wildcard.<suffix>.<file> selected by
Host), 200 at / and /healthz, and /healthz, /readyz, /metrics on the metrics port.

  --dir DIR                 directory with the ConfigMap's files (required)
  --port N                  card port (default 8095; 0 picks a free port)
  --max-age SECONDS         Cache-Control max-age when DIR has no cache-max-age-seconds file (default 300)
  --metrics-port N          health and metrics port (default 8096; 0 picks a free port)
  --address ADDR            listen address (default: all interfaces)
  --max-header-size BYTES   request header bytes accepted (default ${SIDECAR_DEFAULTS.maxHeaderBytes})
  --keep-alive SECONDS      idle keep-alive timeout (default ${SIDECAR_DEFAULTS.keepAliveSeconds}; keep it above the load balancer's)
  --trust-forwarded-host    select the card by X-Forwarded-Host (only behind a proxy that sets it);
                            also AGENTCARD_TRUST_FORWARDED_HOST=true
`;

export async function run(argv: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        dir: { type: 'string' },
        port: { type: 'string', default: '8095' },
        'max-age': { type: 'string', default: '300' },
        'metrics-port': { type: 'string', default: '8096' },
        address: { type: 'string' },
        'max-header-size': { type: 'string', default: String(SIDECAR_DEFAULTS.maxHeaderBytes) },
        'keep-alive': { type: 'string', default: String(SIDECAR_DEFAULTS.keepAliveSeconds) },
        'trust-forwarded-host': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new UserError(`sidecar: ${(err as Error).message}`, 2);
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (!values.dir) throw new UserError('sidecar: --dir is required', 2);
  if (!existsSync(values.dir) || !statSync(values.dir).isDirectory()) {
    throw new UserError(`sidecar: --dir ${values.dir} is not a directory`, 2);
  }
  const port = intFlag('--port', values.port, 0, 65535);
  const metricsPort = intFlag('--metrics-port', values['metrics-port'], 0, 65535);
  const maxAge = intFlag('--max-age', values['max-age'], 0, MAX_AGE_LIMIT);
  const maxHeaderSize = intFlag('--max-header-size', values['max-header-size'], 1024, 1024 * 1024);
  const keepAliveSeconds = intFlag('--keep-alive', values['keep-alive'], 1, 86_400);
  const trustEnv = process.env.AGENTCARD_TRUST_FORWARDED_HOST;
  if (trustEnv !== undefined && !['true', 'false', ''].includes(trustEnv)) {
    throw new UserError(
      `sidecar: AGENTCARD_TRUST_FORWARDED_HOST must be true or false, got '${trustEnv.slice(0, 20)}'`,
      2,
    );
  }
  const trustForwardedHost = values['trust-forwarded-host'] === true || trustEnv === 'true';
  if (port !== 0 && port === metricsPort)
    throw new UserError('sidecar: --port and --metrics-port must differ', 2);

  const logger = createLogger({ component: 'sidecar' });
  const sidecar = await startSidecar({
    dir: values.dir,
    port,
    metricsPort,
    host: values.address,
    defaultMaxAgeSeconds: maxAge,
    logger,
    maxHeaderSize,
    keepAliveSeconds,
    trustForwardedHost,
  });
  logger.info('listening', { port: sidecar.port, metricsPort: sidecar.metricsPort, dir: values.dir });

  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info('shutting down', { signal });
      void sidecar.close().then(resolve);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  return 0;
}

function intFlag(name: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max) {
    throw new UserError(`sidecar: ${name} must be an integer from ${min} to ${max}, got '${text}'`, 2);
  }
  return value;
}
