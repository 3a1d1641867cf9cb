/**
 * The operator process: health and metrics endpoints, the admission webhook, and the runtime's
 * manager (runtime/manager.ts) with the controllers' runnables: caches on every replica (warm
 * standbys), reconcilers, probe scheduler and Event writer while this replica leads. Stops when
 * `signal` aborts (SIGTERM): no new work, in-flight reconciles finish, the Lease is released,
 * the webhook answers until its shutdown delay has passed (webhook/drain.ts), and the returned
 * promise resolves with the exit code; a part that cannot start ends it with 1.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { UserError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { describeApiError } from '../kube/errors.ts';
import { createRegistry } from '../metrics/registry.ts';
import { KubeClient } from '../kube/client.ts';
import { ApiHealth } from '../kube/health.ts';
import { RecoveryProbe } from '../kube/recovery-probe.ts';
import { Gauge } from 'prom-client';
import { contextNamespace, loadKubeConfig } from '../kube/config.ts';
import { EventRecorder } from '../kube/events.ts';
import { kubeLeaseStore } from '../kube/lease.ts';
import { resolveDeploymentOwner } from '../kube/owner.ts';
import { Controller } from '../controllers/agentcard/controller.ts';
import { CatalogController } from '../controllers/catalogs/controller.ts';
import { Cache } from '../runtime/cache.ts';
import type { Runtime } from '../runtime/builder.ts';
import { Channel } from '../runtime/channel.ts';
import { AdoptionController } from '../controllers/adoption/controller.ts';
import type { AdoptionPolicy } from '../controllers/adoption/plan.ts';
import { IssuerController } from '../controllers/issuer/controller.ts';
import type { IdentityPolicy } from '../controllers/issuer/plan.ts';
import { PolicyController } from '../controllers/policy/controller.ts';
import { PolicyMetrics } from '../controllers/policy/metrics.ts';
import { NetworkController } from '../controllers/network/controller.ts';
import { ImportController } from '../controllers/imports/controller.ts';
import { ImportMetrics } from '../controllers/imports/metrics.ts';
import { startHealthServer } from './health-server.ts';
import { DEFAULT_TIMING, LeaderElector } from '../kube/leader.ts';
import { Manager } from '../runtime/manager.ts';
import { ControllerMetrics } from '../controllers/metrics.ts';
import { readCaBundle } from '../probe/ca-bundle.ts';
import { NamespaceAddresses } from '../controllers/agentcard/namespace-addresses.ts';
import { noProbes, probeWiring } from '../controllers/agentcard/probes.ts';
import { noServedChecks, servedWiring } from '../controllers/agentcard/served.ts';
import { createAddressPolicy } from '../probe/policy.ts';
import { startWebhook } from '../webhook/server.ts';
import { drainOnAbort } from '../webhook/drain.ts';
import { sourceWiring } from '../source/wiring.ts';

export interface OperatorConfig {
  kubeconfig?: string;
  namespaces: string[];
  /** Named mode (`--secret-name`): the only Secrets read, each watched by name; empty: all. */
  secretNames: string[];
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
  probeDenyCidrs: string[];
  /** A PEM bundle of CA certificates that probes of TLS interfaces trust besides the system roots. */
  probeCaFile?: string;
  /** Infinity: never rewrite an unchanged lastProbeTime. */
  probeStatusRefreshMs: number;
  /** Reconcile AgentCatalogs and ClusterAgentCatalogs (on by default). */
  catalogs: boolean;
  /** Reconcile ClusterAgentCatalogs; undefined: when every namespace is watched. */
  clusterCatalogs?: boolean;
  /** Where ClusterAgentCatalogs publish and read their signing keys; default: the operator's namespace. */
  catalogNamespace?: string;
  /** Reconcile CatalogImports (controllers/imports/); undefined: with the catalogs. */
  catalogImports?: boolean;
  /** Label adoption of Deployments and StatefulSets (controllers/adoption/plan.ts); undefined: off. */
  adoption?: AdoptionPolicy;
  /** Signing certificates requested from cert-manager (issuer/): the identity policy; undefined: off. */
  issuer?: IdentityPolicy;
  /** Reconcile AgentPolicies and ClusterAgentPolicies (controllers/policy/); off by default. */
  policies?: boolean;
  /** Reconcile ClusterAgentPolicies; undefined: when every namespace is watched. */
  clusterPolicies?: boolean;
  /** Generate NetworkPolicies from Enforce policies' callers rules (controllers/network/); off by default. */
  networkPolicies?: boolean;
  /** Labels of the operator's own Pods, admitted by every generated NetworkPolicy (its probes). */
  operatorPodLabels?: Record<string, string>;
  webhook: {
    port: number;
    certMode: 'self-signed' | 'cert-manager';
    certDir?: string;
    secret?: string;
    service?: string;
    config?: string;
    /** How long the webhook keeps serving after the signal (webhook/drain.ts); 0: it closes at once. */
    shutdownDelayMs: number;
    sidecarImage?: string;
    sidecarMode: 'auto' | 'native' | 'container';
    sidecarServer?: 'node' | 'nginx';
    nginxImage?: string;
    trustForwardedHost?: boolean;
  };
  operatorNamespace?: string;
  /**
   * The Deployment (in the operator's namespace) that owns the webhook Secret and the Lease, so
   * deleting it (`helm uninstall`) deletes them (kube/owner.ts); none: they have no owner.
   */
  ownerDeployment?: string;
}

/** How long SIGTERM waits for in-flight reconciles before exiting anyway (under the 30 s default grace). */
const SHUTDOWN_BUDGET_MS = 20_000;

export async function runOperator(
  flags: OperatorConfig,
  opts: {
    signal: AbortSignal;
    log: Logger;
    onListening?: (metricsPort: number) => void;
    /** Called once the configuration is loaded, just before 'operator starting' is logged. */
    onStarting?: () => void;
    /** Called once, when the AgentCard controller has reconciled every card after its start. */
    onCaughtUp?: () => void;
    /** Tests only: the import controller's time between fetches (ImportControllerOptions). */
    importFetchIntervalMs?: (specIntervalMs: number) => number;
  },
): Promise<number> {
  const { log } = opts;
  const identity = `${process.env.POD_NAME || hostname()}_${randomBytes(4).toString('hex')}`;
  const kc = loadKubeConfig({ kubeconfig: flags.kubeconfig });
  // One breaker for the process: every request's outcome feeds it; the work queue reads it.
  const apiHealth = new ApiHealth();
  const client = new KubeClient(kc, { observe: (err) => apiHealth.observe(err) });
  // While the breaker is open, one GET /readyz a second sees the API server's return.
  const recovery = new RecoveryProbe({ health: apiHealth, check: (signal) => client.readyz(signal) });
  const registry = createRegistry();
  new Gauge({
    name: 'agentcard_api_unavailable',
    help: '1 while the API server is taken as unavailable (connection errors, 429 or 5xx) and the work queue is held, else 0.',
    registers: [registry],
    collect() {
      this.set(apiHealth.state === 'closed' ? 0 : 1);
    },
  });
  const metrics = new ControllerMetrics(registry);
  const events = new EventRecorder({
    client,
    log,
    reportingController: 'agentcard.dev/operator',
    reportingInstance: identity.slice(0, 128),
    onWrite: () => metrics.apiWrites.inc({ resource: 'event' }),
  });
  const operatorNamespace = flags.operatorNamespace ?? contextNamespace(kc) ?? 'default';
  const namespaceAddresses = new NamespaceAddresses({ client, log });
  // Read once at start: a bad bundle stops the process at once rather than failing every probe.
  const probeCa = flags.probes && flags.probeCaFile ? await readCaBundle(flags.probeCaFile) : undefined;
  const owner = flags.ownerDeployment
    ? await resolveDeploymentOwner(client, operatorNamespace, flags.ownerDeployment, log)
    : undefined;
  // The Pod admission webhook runs on every replica, leader or not (the API server calls any of
  // them through the Service). Started first: a bad webhook setting stops the process at once.
  const webhook =
    flags.webhook.port === 0
      ? undefined
      : await startWebhook({
          client,
          port: flags.webhook.port,
          host: flags.bindAddress,
          certMode: flags.webhook.certMode,
          certDir: flags.webhook.certDir,
          secretName: flags.webhook.secret,
          serviceName: flags.webhook.service,
          webhookConfigName: flags.webhook.config,
          operatorNamespace,
          owner,
          sidecarImage: flags.webhook.sidecarImage,
          sidecarMode: flags.webhook.sidecarMode,
          sidecarServer: flags.webhook.sidecarServer,
          nginxImage: flags.webhook.nginxImage,
          trustForwardedHost: flags.webhook.trustForwardedHost,
          logger: log,
          registry,
        }).catch((err: unknown) => {
          // A usage error stays as it is; an API error becomes one readable line.
          if (err instanceof UserError) throw err;
          throw new Error(`starting the admission webhook failed: ${describeApiError(err)}`);
        });

  // One cache for every controller (runtime/cache.ts): one watch per collection, on every replica.
  const cache = new Cache({ client, log, namespaces: flags.namespaces, gate: apiHealth });
  const runtime: Runtime = { log, gate: apiHealth, metrics: metrics.runtime };
  const countWrites = (prefix: string) => (resource: string) =>
    metrics.apiWrites.inc({ resource: `${prefix}-${resource}` });
  // The issuer tells the card controller, through a channel, when a card's certificate changed.
  const cardWake = new Channel();
  const issuer = flags.issuer
    ? new IssuerController({
        client,
        log,
        cache,
        runtime,
        policy: flags.issuer,
        resyncMs: flags.resyncMs,
        cardWake,
        onWrite: countWrites('issuer'),
      })
    : undefined;
  const controller = new Controller({
    client,
    cache,
    runtime,
    secretNames: flags.secretNames,
    ...(issuer ? { issuance: { state: (key: string) => issuer.issuance(key), wake: cardWake } } : {}),
    // --policies: each card is judged by the policies that select it (ClusterAgentPolicies as the
    // policy controller reconciles them).
    ...(flags.policies ? { policies: { cluster: flags.clusterPolicies ?? cache.allNamespaces } } : {}),
    concurrency: flags.concurrency,
    resyncMs: flags.resyncMs,
    log,
    metrics,
    events,
    ...(opts.onCaughtUp ? { onCaughtUp: opts.onCaughtUp } : {}),
    probes: (card) =>
      flags.probes
        ? probeWiring({
            allowCidrs: flags.probeAllowCidrs,
            // What each card's own namespace owns is allowed without a setting (ownership.ts).
            ownerFor: (ns) => namespaceAddresses.ownerFor(ns),
            servicePortFor: (ns) => namespaceAddresses.servicePortFor(ns),
            ...(probeCa ? { ca: probeCa } : {}),
            concurrency: flags.probeConcurrency,
            denyCidrs: flags.probeDenyCidrs,
            statusRefreshMs: flags.probeStatusRefreshMs,
            registry,
            log,
            ...card,
          })
        : noProbes(),
    // The served-card check (spec.audiences[].verifyServed), under the probes' address policy and
    // namespace rule; off with the probes (noServedChecks).
    served: (card) =>
      flags.probes
        ? servedWiring({
            policy: createAddressPolicy({
              allowCidrs: flags.probeAllowCidrs,
              denyCidrs: flags.probeDenyCidrs,
              allowSetting: 'Helm value probes.allowCidrs, flag --probe-allow-cidr',
            }),
            ownerFor: (ns) => namespaceAddresses.ownerFor(ns),
            ...(probeCa ? { ca: probeCa } : {}),
            registry,
            log,
            ...card,
          })
        : noServedChecks(),
    // spec.source is fetched under the probes' address policy and namespace rule.
    source: sourceWiring({
      client,
      allowCidrs: flags.probeAllowCidrs,
      denyCidrs: flags.probeDenyCidrs,
      ownerFor: (ns) => namespaceAddresses.ownerFor(ns),
      ...(probeCa ? { ca: probeCa } : {}),
    }),
  });
  const catalogs = flags.catalogs
    ? new CatalogController({
        client,
        log,
        cache,
        runtime,
        secretNames: flags.secretNames,
        clusterNamespace: flags.catalogNamespace ?? operatorNamespace,
        clusterCatalogs: flags.clusterCatalogs,
        resyncMs: flags.resyncMs,
        onWrite: countWrites('catalog'),
      })
    : undefined;
  const adoption = flags.adoption
    ? new AdoptionController({
        client,
        log,
        cache,
        runtime,
        policy: flags.adoption,
        resyncMs: flags.resyncMs,
        onWrite: countWrites('adoption'),
      })
    : undefined;
  // Off by default: an operator without the rights to write admission policies is unaffected.
  const policies = flags.policies
    ? new PolicyController({
        client,
        log,
        cache,
        runtime,
        events,
        metrics: new PolicyMetrics(registry),
        clusterPolicies: flags.clusterPolicies,
        resyncMs: flags.resyncMs,
        onWrite: countWrites('policy'),
      })
    : undefined;
  // Off by default: it needs to write NetworkPolicies, which the chart grants only then.
  const network = flags.networkPolicies
    ? new NetworkController({
        client,
        log,
        cache,
        runtime,
        events,
        registry,
        operator: { namespace: operatorNamespace, labels: flags.operatorPodLabels ?? {} },
        clusterPolicies: flags.clusterPolicies,
        resyncMs: flags.resyncMs,
        onWrite: countWrites('network'),
      })
    : undefined;
  // Remote catalogs are fetched under the probes' address policy and CA bundle (--probe-*).
  const imports =
    (flags.catalogImports ?? flags.catalogs)
      ? new ImportController({
          client,
          log,
          cache,
          runtime,
          events,
          metrics: new ImportMetrics(registry),
          policy: createAddressPolicy({
            allowCidrs: flags.probeAllowCidrs,
            denyCidrs: flags.probeDenyCidrs,
            allowSetting: 'Helm value probes.allowCidrs, flag --probe-allow-cidr',
          }),
          ...(flags.probeCaFile ? { ca: probeCa ?? (await readCaBundle(flags.probeCaFile)) } : {}),
          resyncMs: flags.resyncMs,
          ...(opts.importFetchIntervalMs ? { fetchIntervalMs: opts.importFetchIntervalMs } : {}),
          onWrite: countWrites('import'),
        })
      : undefined;
  const controllers = [controller, catalogs, adoption, issuer, policies, network, imports].filter(
    (c) => c !== undefined,
  );

  const leaseNamespace = flags.leaderElectionNamespace ?? contextNamespace(kc) ?? 'default';
  const elector = flags.leaderElect
    ? new LeaderElector(
        // An ownerReference only reaches objects of the owner's namespace.
        kubeLeaseStore(
          client,
          leaseNamespace,
          flags.leaderElectionId,
          leaseNamespace === operatorNamespace ? owner : undefined,
        ),
        identity,
        log,
        {
          ...DEFAULT_TIMING,
          leaseDurationSeconds: flags.leaseDurationSeconds,
          renewDeadlineMs: flags.renewDeadlineMs,
          retryPeriodMs: flags.retryPeriodMs,
        },
      )
    : undefined;
  const manager = new Manager({
    log,
    election: elector,
    shutdownBudgetMs: SHUTDOWN_BUDGET_MS,
    onLeading: (leading) => metrics.leader.set(leading ? 1 : 0),
  });
  // Stopped in the reverse order: the reconcilers first, then the probe scheduler, then the
  // Events they recorded are flushed; the cache, on every replica, after the controllers.
  manager.add(
    cache.runnable(),
    // Lost leadership drops the Events still queued: another replica may lead already.
    { name: 'events', mode: 'leader', start: async () => {}, stop: () => events.flush(3_000), cancel() {} },
    {
      name: 'probe-scheduler',
      mode: 'leader',
      start: async () => {},
      stop: () => Promise.all([controller.probes.stop(), controller.served.stop()]).then(() => {}),
    },
    ...controllers.flatMap((c) => c.runnables()),
  );

  const health = await startHealthServer({
    host: flags.bindAddress,
    port: flags.metricsPort,
    registry,
    notReadyReason: () => {
      if (elector && !manager.isLeading) return undefined; // a standby is ready to take over
      const unsynced = cache.unsynced();
      return unsynced.length ? `informers not synced: ${unsynced.join(', ')}` : undefined;
    },
  });
  opts.onListening?.(health.port);
  opts.onStarting?.();
  log.info('operator starting', {
    identity,
    metricsPort: health.port,
    namespaces: flags.namespaces.length ? flags.namespaces : 'all',
    leaderElect: flags.leaderElect,
    probes: flags.probes,
  });
  // On the signal the webhook keeps answering for the delay while the Service stops sending to
  // this Pod (webhook/drain.ts); the controllers stop meanwhile, the Lease is released at once.
  const drain = webhook
    ? drainOnAbort({
        signal: opts.signal,
        delayMs: flags.webhook.shutdownDelayMs,
        log,
        close: () => webhook.close(),
      })
    : undefined;
  if (elector)
    log.info('campaigning for the leader lease', {
      leaseNamespace,
      lease: flags.leaderElectionId,
      identity,
    });
  const exitCode = await manager.run(opts.signal);
  recovery.stop();
  // A failure (or a lost Lease) ends the process at once; only a signal drains the webhook.
  if (exitCode === 0 && opts.signal.aborted) await drain?.drained;
  else await drain?.closeNow();
  await health.close();
  log.info('operator stopped', { exitCode });
  return exitCode;
}
