/**
 * `agentcard operator`: runs the AgentCard controller (and the Pod admission webhook when a
 * sidecar image is given) against the cluster of --kubeconfig / KUBECONFIG / the in-cluster
 * service account / ~/.kube/config.
 *
 * With no flags at all it runs locally against the current kubeconfig context, the way `make run`
 * runs a kubebuilder project: the webhook stays off (the API server could not call a webhook on a
 * developer's machine, and there is no image to inject), and the leader Lease goes in the
 * context's namespace (else `default`), so a local run waits instead of fighting an operator
 * already deployed in the cluster. The Helm chart passes every setting explicitly.
 */
import { parseArgs } from 'node:util';
import { parseDuration } from '../../card/resource.ts';
import { parseCidr } from '../../probe/ip.ts';
import { parseNamespaceLabel } from '../../controllers/adoption/plan.ts';
import {
  checkIdentityTemplate,
  DEFAULT_IDENTITY_TEMPLATE,
  DEFAULT_TRUST_DOMAIN,
} from '../../card/identity.ts';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import type { OperatorConfig } from '../../manager/manager.ts';
import { UserError } from '../../errors.ts';
import { DEFAULT_WEBHOOK_SHUTDOWN_DELAY_MS, MAX_WEBHOOK_SHUTDOWN_DELAY_MS } from '../../webhook/drain.ts';
import { createLogger, type Logger } from '../../log.ts';
import {
  HEAP_FROM_LIMIT_ENV,
  MEMORY_LIMIT_ENV,
  planHeapLimit,
  restartArgs,
  type HeapPlan,
} from '../heap-limit.ts';

const USAGE = `usage: agentcard operator [options]

Reconciles AgentCard resources into signed, published cards (ConfigMap <name>-agent-card)
with status, events and metrics.

Cluster:
  --kubeconfig FILE                 kubeconfig (default: KUBECONFIG, else in-cluster, else ~/.kube/config)
  --namespace NS                    watch only this namespace (repeatable; default: all namespaces)
  --secret-name NAME                read only Secrets of this name, each watched by name (repeatable;
                                    default: every Secret of the watched namespaces)
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
  --probe-allow-cidr CIDR           allow probing this otherwise refused range (repeatable); without
                                    it, private addresses of the AgentCard's own namespace's Pods
                                    and selector Services are allowed, other private ones refused
  --probe-ca-file FILE              PEM CA bundle trusted for https/TLS interfaces, besides the
                                    system roots (e.g. a mounted trust-manager ConfigMap)
  --probe-concurrency N             probes in flight at most (default 64)
  --probe-deny-cidr CIDR            never probe this range (repeatable; e.g. cluster ranges in public space)
  --probe-status-refresh DURATION   rewrite an unchanged interface's lastProbeTime this often
                                    (default 0 = never: no status writes while nothing changes)
Catalogs:
  --no-catalogs                     do not reconcile AgentCatalogs and ClusterAgentCatalogs (default: on)
  --cluster-catalogs / --no-cluster-catalogs
                                    reconcile ClusterAgentCatalogs: they list the watched namespaces'
                                    cards and publish in --operator-namespace (default: on when every
                                    namespace is watched; needs to list and watch Namespaces)
  --catalog-namespace NS            where ClusterAgentCatalogs publish and read their signing keys
                                    (default: --operator-namespace)
  --no-catalog-imports              do not reconcile CatalogImports (default: on with the catalogs;
                                    remote catalogs are fetched under the --probe-* address policy)
Adoption (label agentcard.dev/adopt=true on a Deployment or StatefulSet; off unless allowed):
  --adopt-namespace NS              allow adoption in NS (repeatable)
  --adopt-namespace-label KEY[=VAL] allow adoption in namespaces with this label (needs to list and
                                    watch Namespaces)
Signing certificates requested from cert-manager (spec.signing.keys[].issuerRef; off by default):
  --cert-manager                    create and own a cert-manager Certificate for each AgentCard that
                                    names an issuerRef, and sign with the Secret it issues (needs to
                                    manage certificates.cert-manager.io)
  --trust-domain DOMAIN             trust domain of the identities (default cluster.local)
  --identity-template TEMPLATE      the certificate's URI SAN; {trustDomain}, {namespace},
                                    {serviceAccount}, {name} (the AgentCard); must hold {namespace}
                                    (default spiffe://{trustDomain}/ns/{namespace}/sa/{serviceAccount})
Policies (AgentPolicy, ClusterAgentPolicy; off by default):
  --policies                        reconcile policies: check each whole, generate and own its
                                    ValidatingAdmissionPolicy and binding, count the cards it
                                    selects (needs to manage validatingadmissionpolicies and
                                    validatingadmissionpolicybindings)
  --cluster-policies / --no-cluster-policies
                                    reconcile ClusterAgentPolicies too; their counts cover the
                                    watched namespaces (default: on when every namespace is
                                    watched; needs to list and watch Namespaces)
  --network-policies                with --policies: generate a NetworkPolicy per agent from the
                                    callers rules (and quarantine) of Enforce policies (needs to
                                    manage networkpolicies and to watch Services)
  --operator-pod-label KEY=VALUE    a label of the operator's own Pods (repeatable): the generated
                                    NetworkPolicies admit them, in --operator-namespace, on every
                                    port (its probes); none: every Pod of that namespace
Webhook and sidecar injection (off unless --sidecar-image is given):
  --webhook-port PORT               (default 9443 with --sidecar-image, else 0 = no webhook)
  --webhook-cert-mode MODE          self-signed | cert-manager (default self-signed)
  --webhook-cert-dir DIR            certificate files in cert-manager mode
  --webhook-secret NAME             Secret for the self-signed CA and certificate
  --webhook-service NAME            Service in front of the webhook
  --webhook-config NAME             MutatingWebhookConfiguration whose caBundle is kept current
  --webhook-shutdown-delay DURATION keep answering reviews this long after SIGTERM, while the
                                    Service stops sending to this Pod (default 5s; 0 = close at
                                    once; at most 20s, under the 30 s termination grace period)
  --sidecar-image IMAGE             image of the injected sidecar
  --sidecar-mode MODE               auto | native | container (default auto)
  --sidecar-server SERVER           node | nginx: what serves the card in the Pod (default node)
  --sidecar-nginx-image IMAGE       the nginx image for --sidecar-server nginx
  --trust-forwarded-host            select the card by X-Forwarded-Host (only behind a proxy that sets it)
  --operator-namespace NS           namespace the operator runs in (default: POD_NAMESPACE)
  --owner-deployment NAME           the operator's Deployment (in --operator-namespace): the webhook
                                    Secret and the Lease name it as owner, so deleting it deletes them
`;

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

const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

/** --operator-pod-label KEY=VALUE flags, each a Kubernetes label (a typo is a usage error at start). */
function podLabels(texts: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const text of texts) {
    const eq = text.indexOf('=');
    const key = eq < 0 ? text : text.slice(0, eq);
    const value = eq < 0 ? undefined : text.slice(eq + 1);
    if (value === undefined || !LABEL_KEY.test(key) || key.length > 317 || !LABEL_VALUE.test(value))
      throw new UserError(
        `--operator-pod-label must be KEY=VALUE, a Kubernetes label, got "${text.slice(0, 100)}"`,
        2,
      );
    labels[key] = value;
  }
  return labels;
}

/** Repeated CIDR flags, checked here so that a typo is a usage error at start. */
function cidrs(flag: string, texts: string[] | undefined): string[] {
  for (const text of texts ?? []) {
    try {
      parseCidr(text);
    } catch (err) {
      throw new UserError(`--${flag}: ${err instanceof Error ? err.message : String(err)}`, 2);
    }
  }
  return texts ?? [];
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
): OperatorConfig | 'help' {
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
        'secret-name': { type: 'string', multiple: true },
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
        'probe-ca-file': { type: 'string' },
        'probe-concurrency': { type: 'string' },
        'probe-deny-cidr': { type: 'string', multiple: true },
        'probe-status-refresh': { type: 'string' },
        catalogs: { type: 'boolean', default: true },
        'cluster-catalogs': { type: 'boolean' },
        'catalog-namespace': { type: 'string' },
        'catalog-imports': { type: 'boolean' },
        'adopt-namespace': { type: 'string', multiple: true },
        'adopt-namespace-label': { type: 'string' },
        'cert-manager': { type: 'boolean' },
        policies: { type: 'boolean' },
        'cluster-policies': { type: 'boolean' },
        'network-policies': { type: 'boolean' },
        'operator-pod-label': { type: 'string', multiple: true },
        'trust-domain': { type: 'string' },
        'identity-template': { type: 'string' },
        'webhook-port': { type: 'string' },
        'webhook-cert-mode': { type: 'string' },
        'webhook-cert-dir': { type: 'string' },
        'webhook-secret': { type: 'string' },
        'webhook-service': { type: 'string' },
        'webhook-config': { type: 'string' },
        'webhook-shutdown-delay': { type: 'string' },
        'sidecar-image': { type: 'string' },
        'sidecar-mode': { type: 'string' },
        'sidecar-server': { type: 'string' },
        'sidecar-nginx-image': { type: 'string' },
        'trust-forwarded-host': { type: 'boolean' },
        'operator-namespace': { type: 'string' },
        'owner-deployment': { type: 'string' },
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
  const sidecarServer = oneOf('sidecar-server', values['sidecar-server'], ['node', 'nginx'], 'node');
  if (sidecarServer === 'nginx' && !values['sidecar-nginx-image']) {
    throw new UserError('--sidecar-server nginx needs --sidecar-nginx-image', 2);
  }
  for (const name of values['secret-name'] ?? []) {
    // A Secret's name is a DNS subdomain; anything else could never match (and is not put in a
    // field selector).
    if (name.length > 253 || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(name))
      throw new UserError(
        `--secret-name must be a Secret name (a DNS subdomain), got "${name.slice(0, 64)}"`,
        2,
      );
  }
  if (values['network-policies'] && !values.policies)
    throw new UserError('--network-policies needs --policies (the policies it enforces)', 2);
  const identity = identityPolicy(values['trust-domain'], values['identity-template']);
  const sidecarImage = values['sidecar-image'] || undefined;
  // The webhook exists to inject the sidecar: without an image it stays off, so a bare local run
  // (no flags) starts.
  const webhookPort = integer('webhook-port', values['webhook-port'], sidecarImage ? 9443 : 0, 0, 65535);
  if (webhookPort !== 0 && !sidecarImage) {
    throw new UserError('the admission webhook needs --sidecar-image (the image to inject)', 2);
  }
  const webhookShutdownDelayMs = duration(
    'webhook-shutdown-delay',
    values['webhook-shutdown-delay'],
    `${DEFAULT_WEBHOOK_SHUTDOWN_DELAY_MS / 1000}s`,
  );
  // The delay and the controllers' shutdown (20 s budget) run side by side; both must end inside
  // the Pod's termination grace period (30 s by default) or the kubelet's SIGKILL cuts them off.
  if (webhookShutdownDelayMs > MAX_WEBHOOK_SHUTDOWN_DELAY_MS) {
    throw new UserError(
      `--webhook-shutdown-delay must be at most ${MAX_WEBHOOK_SHUTDOWN_DELAY_MS / 1000}s (well under the Pod's terminationGracePeriodSeconds), got "${values['webhook-shutdown-delay']}"`,
      2,
    );
  }
  return {
    kubeconfig: values.kubeconfig,
    namespaces: [...new Set(values.namespace ?? [])],
    secretNames: [...new Set(values['secret-name'] ?? [])],
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
    probeAllowCidrs: cidrs('probe-allow-cidr', values['probe-allow-cidr']),
    ...(values['probe-ca-file'] ? { probeCaFile: values['probe-ca-file'] } : {}),
    probeConcurrency: integer('probe-concurrency', values['probe-concurrency'], 64, 1, 4096),
    probeDenyCidrs: cidrs('probe-deny-cidr', values['probe-deny-cidr']),
    // Off by default: a timestamp rewritten while nothing changes is a status write per card per
    // period (1,000 a minute at 10,000 cards every 10 minutes). Kubernetes took node heartbeats
    // out of NodeStatus into Leases for the same reason (KEP-589); the probe metrics say when
    // each interface was last probed.
    probeStatusRefreshMs:
      duration('probe-status-refresh', values['probe-status-refresh'], '0') || Number.POSITIVE_INFINITY,
    catalogs: values.catalogs ?? true,
    clusterCatalogs: values['cluster-catalogs'],
    catalogNamespace: values['catalog-namespace'],
    catalogImports: values['catalog-imports'] ?? values.catalogs ?? true,
    adoption: adoptionPolicy(values['adopt-namespace'], values['adopt-namespace-label']),
    ...(values['cert-manager'] ? { issuer: identity } : {}),
    policies: values.policies ?? false,
    clusterPolicies: values['cluster-policies'],
    ...(values['network-policies'] ? { networkPolicies: true } : {}),
    ...(values['operator-pod-label']?.length
      ? { operatorPodLabels: podLabels(values['operator-pod-label']) }
      : {}),
    webhook: {
      port: webhookPort,
      certMode,
      certDir: values['webhook-cert-dir'],
      secret: values['webhook-secret'],
      service: values['webhook-service'],
      config: values['webhook-config'],
      shutdownDelayMs: webhookShutdownDelayMs,
      sidecarImage,
      sidecarMode: oneOf('sidecar-mode', values['sidecar-mode'], ['auto', 'native', 'container'], 'auto'),
      sidecarServer,
      ...(values['sidecar-nginx-image'] ? { nginxImage: values['sidecar-nginx-image'] } : {}),
      ...(values['trust-forwarded-host'] ? { trustForwardedHost: true } : {}),
    },
    operatorNamespace: values['operator-namespace'] ?? (env.POD_NAMESPACE || undefined),
    ...(values['owner-deployment'] ? { ownerDeployment: values['owner-deployment'] } : {}),
  };
}

/** The old generation's growth between full collections once the start's burst is over. */
const STEADY_STATE_HEAP_GROWTH_PERCENT = 25;

export async function run(argv: string[]): Promise<number> {
  const flags = parseOperatorFlags(argv);
  if (flags === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  const heap = planHeapLimit({
    limit: process.env[MEMORY_LIMIT_ENV],
    execArgv: process.execArgv,
    nodeOptions: process.env.NODE_OPTIONS,
  });
  if (heap.action === 'restart') restartWithHeapLimit(heap.oldSpaceMiB);
  // A long-running process with a small working set: V8's size-over-speed mode keeps the young
  // generation and the heap's growth small (peak RSS at 1,000 AgentCards about 30 MiB lower; other
  // flag sets measured in bench/scale.bench.ts saved less). Set before the controller's modules
  // load, hence the dynamic import below.
  setFlagsFromString('--optimize-for-size');
  const { runOperator } = await import('../../manager/manager.ts');
  const log = createLogger({ component: 'operator' });
  const shutdown = new AbortController();
  const onSignal = (signal: string) => {
    if (shutdown.signal.aborted) return;
    log.info('shutting down', { signal });
    shutdown.abort();
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  const exitCode = await runOperator(flags, {
    signal: shutdown.signal,
    log,
    // After the configuration loaded: a usage error stays the one line on stderr.
    onStarting: () => logHeapLimit(log, heap),
    // Size-over-speed mode alone lets the old generation grow by only 10 % of what a full
    // collection kept: with probes on at 10,000 AgentCards, a full collection of a 150 MiB heap
    // every 1.5 s, half of the process's CPU. 25 % collects about three times less often, for up
    // to 26 MiB more RSS between scrapes. Set once every card has been reconciled: set from the
    // start, it raised the peak of a start at 10,000 AgentCards by about 20 MiB (docs/scaling.md,
    // "How often the garbage collector runs"). V8 reads it at every full collection, so it applies
    // from the next one.
    onCaughtUp: () => {
      setFlagsFromString(`--heap-growing-percent=${STEADY_STATE_HEAP_GROWTH_PERCENT}`);
      log.info('heap growth set for the steady state', {
        heapGrowingPercent: STEADY_STATE_HEAP_GROWTH_PERCENT,
      });
    },
  });
  // A replica that lost the leader lease exits at once: requests still in flight must not reach
  // the API server after another replica took over (stderr is a pipe or file: written already).
  if (exitCode !== 0) process.exit(exitCode);
  // Idle keep-alive sockets of the Kubernetes client must not hold the process open.
  setTimeout(() => process.exit(exitCode), 1_000).unref();
  return exitCode;
}

/**
 * Replaces this process (same PID, signals and stdio: no parent left behind) with the same
 * command line plus `--max-old-space-size`, which V8 reads only when the heap is set up. Done
 * before the controller's modules load; only when this process was started as the `agentcard`
 * command (never inside a test runner that imported this module). Where process.execve is
 * missing (Node.js before 22.15) the operator runs on with Node.js's own sizing, and says so.
 */
function restartWithHeapLimit(oldSpaceMiB: number): void {
  const script = process.argv[1] ?? '';
  if (typeof process.execve !== 'function' || !/(^|[/\\])agentcard(\.js)?$/.test(script)) return;
  try {
    process.execve(
      process.execPath,
      restartArgs(process.execPath, process.execArgv, process.argv, oldSpaceMiB),
      {
        ...process.env,
        [HEAP_FROM_LIMIT_ENV]: String(oldSpaceMiB),
      },
    );
  } catch {
    // Left to logHeapLimit, which reports the heap limit the process runs with.
  }
}

const MiB = 1024 * 1024;

/** One line at start: the heap limit V8 runs with, and where it came from. */
function logHeapLimit(log: Logger, plan: HeapPlan): void {
  const heapSizeLimitMiB = Math.round(getHeapStatistics().heap_size_limit / MiB);
  const memoryLimit = process.env[MEMORY_LIMIT_ENV];
  if (plan.action === 'invalid') {
    log.warn(`${MEMORY_LIMIT_ENV} is not a number of bytes; the heap is sized by Node.js`, {
      value: plan.value,
      heapSizeLimitMiB,
    });
    return;
  }
  log.info('heap limit', {
    heapSizeLimitMiB,
    ...(plan.action === 'keep' && plan.reason === 'flag-given' && process.env[HEAP_FROM_LIMIT_ENV]
      ? {
          source: 'memory limit',
          memoryLimitMiB: Math.round(Number(memoryLimit) / MiB),
          oldSpaceMiB: Number(process.env[HEAP_FROM_LIMIT_ENV]),
        }
      : { source: plan.action === 'keep' && plan.reason === 'flag-given' ? 'flag' : 'node' }),
  });
}

/** --trust-domain and --identity-template, checked at start (card/identity.ts). */
function identityPolicy(
  trustDomain: string | undefined,
  template: string | undefined,
): NonNullable<OperatorConfig['issuer']> {
  const policy = {
    trustDomain: trustDomain ?? DEFAULT_TRUST_DOMAIN,
    template: template ?? DEFAULT_IDENTITY_TEMPLATE,
  };
  try {
    checkIdentityTemplate(policy.template, policy.trustDomain);
  } catch (err) {
    throw new UserError(`operator: --identity-template / --trust-domain: ${(err as Error).message}`, 2);
  }
  return policy;
}

/** The adoption policy of --adopt-namespace and --adopt-namespace-label; undefined: adoption off. */
function adoptionPolicy(
  namespaces: string[] | undefined,
  label: string | undefined,
): OperatorConfig['adoption'] {
  const names = [...new Set((namespaces ?? []).flatMap((n) => n.split(',')).map((n) => n.trim()))].filter(
    (n) => n !== '',
  );
  for (const ns of names)
    if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(ns))
      throw new UserError(`operator: --adopt-namespace '${ns.slice(0, 70)}' is not a namespace name`, 2);
  let namespaceLabel;
  if (label !== undefined && label.trim() !== '') {
    try {
      namespaceLabel = parseNamespaceLabel(label);
    } catch (err) {
      throw new UserError(`operator: --adopt-namespace-label: ${(err as Error).message}`, 2);
    }
  }
  if (names.length === 0 && !namespaceLabel) return undefined;
  return { namespaces: names, ...(namespaceLabel ? { namespaceLabel } : {}) };
}
