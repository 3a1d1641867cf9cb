/**
 * `agentcard operator`: runs the AgentCard controller (and, once available, the Pod admission
 * webhook) against the cluster of --kubeconfig / KUBECONFIG / the in-cluster service account.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { parseDuration } from '../../card/resource.ts';
import { Controller, type ProbeHooks } from '../../controller/controller.ts';
import { startHealthServer } from '../../controller/http.ts';
import { DEFAULT_TIMING, LeaderElector } from '../../controller/leader.ts';
import { ControllerMetrics } from '../../controller/metrics.ts';
import { noProbes, pendingProbes } from '../../controller/probes.ts';
import { UserError } from '../../errors.ts';
import { makeClients } from '../../kube/api.ts';
import { contextNamespace, loadKubeConfig } from '../../kube/config.ts';
import { EventRecorder } from '../../kube/events.ts';
import { kubeLeaseStore } from '../../kube/lease.ts';
import { createLogger } from '../../log.ts';
import { createRegistry } from '../../metrics/registry.ts';

const USAGE = `usage: agentcard operator [options]

Reconciles AgentCard resources into signed, published cards (ConfigMap <name>-agent-card)
with status, events and metrics.

Cluster:
  --kubeconfig FILE                 kubeconfig (default: KUBECONFIG, else in-cluster, else ~/.kube/config)
  --namespace NS                    watch only this namespace (repeatable; default: all namespaces)
Controller:
  --concurrency N                   AgentCards reconciled in parallel (default 4)
  --resync DURATION                 re-check every AgentCard this often (default 10m; 0 = never)
Leader election (coordination.k8s.io Lease):
  --leader-elect / --no-leader-elect   (default: on)
  --leader-election-namespace NS    (default: POD_NAMESPACE, else the kubeconfig context's, else default)
  --leader-election-id NAME         Lease name (default agentcard-operator)
  --lease-duration DURATION         (default 15s)
  --renew-deadline DURATION         (default 10s)
  --retry-period DURATION           (default 2s)
Endpoints:
  --metrics-port PORT               /metrics, /healthz, /readyz (default 8080; 0 = any free port)
  --bind-address ADDR               address of that port (default 0.0.0.0)
Probes:
  --no-probes                       do not probe interfaces (InterfacesReachable=Unknown, ProbesDisabled)
  --probe-allow-cidr CIDR           allow probing this otherwise refused range (repeatable)
  --probe-concurrency N             probes in flight at most (default 64)
Webhook and sidecar injection:
  --webhook-port PORT               (default 9443; 0 = no webhook)
  --webhook-cert-mode MODE          self-signed | cert-manager (default self-signed)
  --webhook-cert-dir DIR            certificate files in cert-manager mode
  --webhook-secret NAME             Secret for the self-signed CA and certificate
  --webhook-service NAME            Service in front of the webhook
  --webhook-config NAME             MutatingWebhookConfiguration whose caBundle is kept current
  --sidecar-image IMAGE             image of the injected sidecar
  --sidecar-mode MODE               auto | native | container (default auto)
  --operator-namespace NS           namespace the operator runs in (default: POD_NAMESPACE)
`;

export interface OperatorFlags {
  kubeconfig?: string;
  namespaces: string[];
  concurrency: number;
  resyncMs: number;
  leaderElect: boolean;
  leaderElectionNamespace?: string;
  leaderElectionId: string;
  leaseDurationSeconds: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  metricsPort: number;
  bindAddress: string;
  probes: boolean;
  probeAllowCidrs: string[];
  probeConcurrency: number;
  webhook: {
    port: number;
    certMode: 'self-signed' | 'cert-manager';
    certDir?: string;
    secret?: string;
    service?: string;
    config?: string;
    sidecarImage?: string;
    sidecarMode: 'auto' | 'native' | 'container';
  };
  operatorNamespace?: string;
}

function integer(flag: string, text: string | undefined, fallback: number, min: number, max: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new UserError(`--${flag} must be an integer from ${min} to ${max}, got "${text}"`, 2);
  }
  return n;
}

function duration(flag: string, text: string | undefined, fallback: string): number {
  const value = text ?? fallback;
  if (value === '0') return 0;
  try {
    return parseDuration(value);
  } catch {
    throw new UserError(`--${flag} must be a duration such as "30s", "10m" or "1h", got "${value}"`, 2);
  }
}

function oneOf<T extends string>(
  flag: string,
  text: string | undefined,
  allowed: readonly T[],
  fallback: T,
): T {
  if (text === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(text)) {
    throw new UserError(`--${flag} must be one of ${allowed.join(', ')}, got "${text}"`, 2);
  }
  return text as T;
}

/** Parses the flags (exported for tests); throws UserError (exit 2) on a usage error. */
export function parseOperatorFlags(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
): OperatorFlags | 'help' {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      allowPositionals: false,
      allowNegative: true,
      options: {
        help: { type: 'boolean', short: 'h' },
        kubeconfig: { type: 'string' },
        namespace: { type: 'string', multiple: true },
        concurrency: { type: 'string' },
        resync: { type: 'string' },
        'leader-elect': { type: 'boolean', default: true },
        'leader-election-namespace': { type: 'string' },
        'leader-election-id': { type: 'string' },
        'lease-duration': { type: 'string' },
        'renew-deadline': { type: 'string' },
        'retry-period': { type: 'string' },
        'metrics-port': { type: 'string' },
        'bind-address': { type: 'string' },
        probes: { type: 'boolean', default: true },
        'probe-allow-cidr': { type: 'string', multiple: true },
        'probe-concurrency': { type: 'string' },
        'webhook-port': { type: 'string' },
        'webhook-cert-mode': { type: 'string' },
        'webhook-cert-dir': { type: 'string' },
        'webhook-secret': { type: 'string' },
        'webhook-service': { type: 'string' },
        'webhook-config': { type: 'string' },
        'sidecar-image': { type: 'string' },
        'sidecar-mode': { type: 'string' },
        'operator-namespace': { type: 'string' },
      },
    }));
  } catch (err) {
    throw new UserError(
      `${err instanceof Error ? err.message : String(err)} (see agentcard operator --help)`,
      2,
    );
  }
  if (values.help) return 'help';
  const leaseDurationMs = duration('lease-duration', values['lease-duration'], '15s');
  const renewDeadlineMs = duration('renew-deadline', values['renew-deadline'], '10s');
  const retryPeriodMs = duration('retry-period', values['retry-period'], '2s');
  if (!(retryPeriodMs > 0 && retryPeriodMs < renewDeadlineMs && renewDeadlineMs < leaseDurationMs)) {
    throw new UserError('leader election needs 0 < --retry-period < --renew-deadline < --lease-duration', 2);
  }
  if (leaseDurationMs % 1000 !== 0) throw new UserError('--lease-duration must be whole seconds', 2);
  const certMode = oneOf(
    'webhook-cert-mode',
    values['webhook-cert-mode'],
    ['self-signed', 'cert-manager'],
    'self-signed',
  );
  if (certMode === 'cert-manager' && !values['webhook-cert-dir']) {
    throw new UserError('--webhook-cert-mode cert-manager needs --webhook-cert-dir', 2);
  }
  return {
    kubeconfig: values.kubeconfig,
    namespaces: [...new Set(values.namespace ?? [])],
    concurrency: integer('concurrency', values.concurrency, 4, 1, 256),
    resyncMs: duration('resync', values.resync, '10m'),
    leaderElect: values['leader-elect'] ?? true,
    leaderElectionNamespace: values['leader-election-namespace'] ?? (env.POD_NAMESPACE || undefined),
    leaderElectionId: values['leader-election-id'] ?? 'agentcard-operator',
    leaseDurationSeconds: leaseDurationMs / 1000,
    renewDeadlineMs,
    retryPeriodMs,
    metricsPort: integer('metrics-port', values['metrics-port'], 8080, 0, 65535),
    bindAddress: values['bind-address'] ?? '0.0.0.0',
    probes: values.probes ?? true,
    probeAllowCidrs: values['probe-allow-cidr'] ?? [],
    probeConcurrency: integer('probe-concurrency', values['probe-concurrency'], 64, 1, 4096),
    webhook: {
      port: integer('webhook-port', values['webhook-port'], 9443, 0, 65535),
      certMode,
      certDir: values['webhook-cert-dir'],
      secret: values['webhook-secret'],
      service: values['webhook-service'],
      config: values['webhook-config'],
      sidecarImage: values['sidecar-image'],
      sidecarMode: oneOf('sidecar-mode', values['sidecar-mode'], ['auto', 'native', 'container'], 'auto'),
    },
    operatorNamespace: values['operator-namespace'] ?? (env.POD_NAMESPACE || undefined),
  };
}

/** How long SIGTERM waits for in-flight reconciles before exiting anyway (under the 30 s default grace). */
const SHUTDOWN_BUDGET_MS = 20_000;

export async function run(argv: string[]): Promise<number> {
  const flags = parseOperatorFlags(argv);
  if (flags === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  const identity = `${process.env.POD_NAME || hostname()}_${randomBytes(4).toString('hex')}`;
  const log = createLogger({ component: 'operator' });
  const kc = loadKubeConfig({ kubeconfig: flags.kubeconfig });
  const clients = makeClients(kc);
  const registry = createRegistry();
  const metrics = new ControllerMetrics(registry);
  const events = new EventRecorder({
    clients,
    log,
    reportingController: 'agentcard.dev/operator',
    reportingInstance: identity.slice(0, 128),
    onWrite: () => metrics.apiWrites.inc({ resource: 'event' }),
  });
  // TODO(probe): wire operator/probe's ProbeScheduler here (allow CIDRs, concurrency).
  const probes: ProbeHooks = flags.probes ? pendingProbes() : noProbes();
  // TODO(webhook): start operator/webhook's startWebhook(flags.webhook, ...) here once it lands;
  // until then the webhook and sidecar flags are parsed and validated but unused.
  if (flags.webhook.port !== 0) {
    log.warn('the admission webhook is not part of this build yet; --webhook-* flags are ignored', {
      webhookPort: flags.webhook.port,
    });
  }

  let controller: Controller | undefined;
  let elector: LeaderElector | undefined;
  const shutdown = new AbortController();
  const health = await startHealthServer({
    host: flags.bindAddress,
    port: flags.metricsPort,
    registry,
    notReadyReason: () => {
      if (elector && !elector.isLeader) return undefined; // a standby is ready to take over
      if (!controller) return 'starting';
      const unsynced = controller.unsynced();
      return unsynced.length ? `informers not synced: ${unsynced.join(', ')}` : undefined;
    },
  });
  log.info('operator starting', {
    identity,
    metricsPort: health.port,
    namespaces: flags.namespaces.length ? flags.namespaces : 'all',
    leaderElect: flags.leaderElect,
    probes: flags.probes,
  });

  const onSignal = (signal: string) => {
    if (shutdown.signal.aborted) return;
    log.info('shutting down', { signal });
    shutdown.abort();
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));

  const newController = () =>
    new Controller({
      kubeConfig: kc,
      clients,
      namespaces: flags.namespaces,
      concurrency: flags.concurrency,
      resyncMs: flags.resyncMs,
      log,
      metrics,
      events,
      probes,
    });

  /** Stops the controller within the budget; true if everything in flight finished. */
  const stopController = async (): Promise<boolean> => {
    if (!controller) return true;
    const c = controller;
    const finished = await Promise.race([
      c.stop().then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), SHUTDOWN_BUDGET_MS).unref()),
    ]);
    await probes.stop();
    if (!finished) log.warn('reconciles still running at the end of the shutdown budget', {});
    return finished;
  };

  let exitCode = 0;
  if (flags.leaderElect) {
    const leaseNamespace = flags.leaderElectionNamespace ?? contextNamespace(kc) ?? 'default';
    elector = new LeaderElector(
      kubeLeaseStore(clients, leaseNamespace, flags.leaderElectionId),
      identity,
      log,
      {
        ...DEFAULT_TIMING,
        leaseDurationSeconds: flags.leaseDurationSeconds,
        renewDeadlineMs: flags.renewDeadlineMs,
        retryPeriodMs: flags.retryPeriodMs,
      },
    );
    log.info('campaigning for the leader lease', { leaseNamespace, lease: flags.leaderElectionId, identity });
    if (await elector.acquire(shutdown.signal)) {
      metrics.leader.set(1);
      controller = newController();
      const started = controller.start(shutdown.signal).catch((err: unknown) => {
        if (!shutdown.signal.aborted) log.error('controller failed to start', { error: String(err) });
      });
      const { lost } = await elector.holdUntilLost(shutdown.signal);
      metrics.leader.set(0);
      await stopController();
      await started;
      if (lost) {
        // Another replica may be working already: exit, and let the restart campaign again.
        exitCode = 1;
      } else {
        await elector.release();
      }
    }
  } else {
    metrics.leader.set(1);
    controller = newController();
    await Promise.race([
      controller.start(shutdown.signal).catch((err: unknown) => {
        if (!shutdown.signal.aborted) log.error('controller failed to start', { error: String(err) });
      }),
      new Promise((r) => shutdown.signal.addEventListener('abort', r, { once: true })),
    ]);
    if (!shutdown.signal.aborted)
      await new Promise((r) => shutdown.signal.addEventListener('abort', r, { once: true }));
    await stopController();
  }
  await health.close();
  log.info('operator stopped', { exitCode });
  // Idle keep-alive sockets of the Kubernetes client must not hold the process open.
  setTimeout(() => process.exit(exitCode), 1_000).unref();
  return exitCode;
}
