// Helpers of the controller's integration tests: the CRD, sample AgentCards and keys, the
// operator in-process or as real child processes, polling, and write counting through the API
// server's own metrics.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { afterAll, beforeAll } from 'vitest';
import { generateSigningJwk } from '../../operator/card/keygen.ts';
import { CRD_FILE } from '../../operator/card/crd.ts';
import { CATALOG_CRDS } from '../../operator/catalog/crd.ts';
import { POLICY_CRDS } from '../../operator/policy/crd.ts';
import { IMPORT_CRD_FILE } from '../../operator/federation/crd.ts';
import {
  CATALOG_PLURAL,
  CLUSTER_CATALOG_PLURAL,
  CLUSTER_POLICY_PLURAL,
  GROUP,
  IMPORT_PLURAL,
  PLURAL,
  POLICY_PLURAL,
  VERSION,
} from '../../operator/api/names.ts';
import { parseOperatorFlags } from '../../operator/cli/commands/operator.ts';
import { runOperator } from '../../operator/manager/manager.ts';
import { createLogger } from '../../operator/log.ts';
import { applyYaml, waitForCrdEstablished } from './apply.ts';
import { kubeConfig, kubeconfigPath, testNamespace, type TestNamespace } from './cluster.ts';
import { repoRoot } from './paths.ts';
import { agentcardBin } from './test-package.ts';

export const RESOURCE = { group: GROUP, version: VERSION, plural: PLURAL };

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns a value other than undefined/false; fails after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ''}`,
      );
    }
    await sleep(100);
  }
}

/**
 * Installs (server-side applies) the generated AgentCard CRD and waits until it is served. Goes
 * through test/support's applyYaml, which keeps the CEL rules and enums (a raw object through
 * KubernetesObjectApi would lose them) and uses the same field manager as the other tests.
 */
export async function installCrd(kc: KubeConfig): Promise<void> {
  await applyYaml(readFileSync(join(repoRoot, CRD_FILE), 'utf8'), { kc });
  await waitForCrdEstablished(`${PLURAL}.${GROUP}`, 30_000, kc);
}

/** Installs the AgentCatalog and ClusterAgentCatalog CRDs too (after the AgentCard CRD). */
export async function installCatalogCrds(kc: KubeConfig): Promise<void> {
  await installCrd(kc);
  for (const { file } of CATALOG_CRDS) await applyYaml(readFileSync(join(repoRoot, file), 'utf8'), { kc });
  await waitForCrdEstablished(`${CATALOG_PLURAL}.${GROUP}`, 30_000, kc);
  await waitForCrdEstablished(`${CLUSTER_CATALOG_PLURAL}.${GROUP}`, 30_000, kc);
}

/** Installs the AgentPolicy and ClusterAgentPolicy CRDs too (after the card and catalog CRDs). */
export async function installPolicyCrds(kc: KubeConfig): Promise<void> {
  await installCatalogCrds(kc);
  for (const { file } of POLICY_CRDS) await applyYaml(readFileSync(join(repoRoot, file), 'utf8'), { kc });
  await waitForCrdEstablished(`${POLICY_PLURAL}.${GROUP}`, 30_000, kc);
  await waitForCrdEstablished(`${CLUSTER_POLICY_PLURAL}.${GROUP}`, 30_000, kc);
}

/** Installs the CatalogImport CRD (operator/federation/) and waits until it is served. */
export async function installImportCrd(kc: KubeConfig): Promise<void> {
  await applyYaml(readFileSync(join(repoRoot, IMPORT_CRD_FILE), 'utf8'), { kc });
  await waitForCrdEstablished(`${IMPORT_PLURAL}.${GROUP}`, 30_000, kc);
}

export { sampleCard } from './cards.ts';

export function agentCard(
  namespace: string,
  name: string,
  spec: Record<string, unknown>,
): KubernetesObject & { spec: unknown } {
  return { apiVersion: `${GROUP}/${VERSION}`, kind: 'AgentCard', metadata: { name, namespace }, spec };
}

export interface AgentCardLive {
  metadata: { name: string; namespace: string; generation: number; uid: string; resourceVersion: string };
  spec: Record<string, unknown>;
  status?: {
    observedGeneration?: number;
    conditions?: Array<{
      type: string;
      status: string;
      reason: string;
      message: string;
      observedGeneration?: number;
      lastTransitionTime: string;
    }>;
    card?: { digest: string; bytes: number; version: string; configMap: string };
    signatures?: Array<{ kid: string; alg: string }>;
  };
}

export class Api {
  readonly core: CoreV1Api;
  readonly custom: CustomObjectsApi;
  readonly kc: KubeConfig;
  constructor(kc: KubeConfig) {
    this.kc = kc;
    this.core = kc.makeApiClient(CoreV1Api);
    this.custom = kc.makeApiClient(CustomObjectsApi);
  }

  createCard(namespace: string, name: string, spec: Record<string, unknown>): Promise<unknown> {
    return this.custom.createNamespacedCustomObject({
      ...RESOURCE,
      namespace,
      body: agentCard(namespace, name, spec),
    });
  }

  async replaceSpec(namespace: string, name: string, spec: Record<string, unknown>): Promise<void> {
    const live = await this.getCard(namespace, name);
    await this.custom.replaceNamespacedCustomObject({
      ...RESOURCE,
      namespace,
      name,
      body: {
        ...agentCard(namespace, name, spec),
        metadata: { name, namespace, resourceVersion: live!.metadata.resourceVersion },
      },
    });
  }

  async getCard(namespace: string, name: string): Promise<AgentCardLive | undefined> {
    try {
      return (await this.custom.getNamespacedCustomObject({ ...RESOURCE, namespace, name })) as AgentCardLive;
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  }

  deleteCard(namespace: string, name: string): Promise<unknown> {
    return this.custom.deleteNamespacedCustomObject({ ...RESOURCE, namespace, name });
  }

  async getConfigMap(namespace: string, name: string) {
    try {
      return await this.core.readNamespacedConfigMap({ namespace, name });
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  }

  /** The card a card's published ConfigMap serves (agent-card.json, parsed), or undefined. */
  async publishedCard(namespace: string, name: string): Promise<Record<string, unknown> | undefined> {
    const text = (await this.getConfigMap(namespace, `${name}-agent-card`))?.data?.['agent-card.json'];
    return text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
  }

  /** Creates or replaces a Secret holding `material` under `key`. */
  async putSecret(
    namespace: string,
    name: string,
    data: Record<string, string>,
    labelled: boolean,
  ): Promise<void> {
    const labels: Record<string, string> = labelled ? { 'agentcard.dev/signing-key': 'true' } : {};
    const body = {
      metadata: { name, namespace, labels },
      stringData: data,
    };
    try {
      await this.core.createNamespacedSecret({ namespace, body });
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
      await this.core.replaceNamespacedSecret({ namespace, name, body });
    }
  }

  async events(
    namespace: string,
    name: string,
  ): Promise<Array<{ type?: string; reason?: string; message?: string }>> {
    const list = await this.core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.name=${name}`,
    });
    return list.items.map((e) => ({ type: e.type, reason: e.reason, message: e.message }));
  }
}

export function condition(card: AgentCardLive | undefined, type: string) {
  return card?.status?.conditions?.find((c) => c.type === type);
}

/** A private JWK (JSON text) for a Secret. */
export async function privateJwk(kid: string, alg = 'ES256'): Promise<string> {
  return JSON.stringify(await generateSigningJwk(alg, kid));
}

const baseFlags = (namespace: string, kubeconfig = kubeconfigPath()) => [
  '--kubeconfig',
  kubeconfig,
  '--namespace',
  namespace,
  '--metrics-port',
  '0',
  '--bind-address',
  '127.0.0.1',
  '--webhook-port',
  '0',
];

export interface InProcessOperator {
  logs: string[];
  metricsPort: () => number;
  stop(): Promise<number>;
}

/**
 * Runs the operator in this process, without leader election; probes are off unless `probes` is
 * set (true: only loopback, where the tests' A2A peers listen, is allowed; 'default': the address
 * policy an installed operator has, no --probe-allow-cidr).
 */
export async function startOperator(
  namespace: string,
  extra: string[] = [],
  opts: {
    probes?: boolean | 'default';
    kubeconfig?: string;
    /** The import controller's time between fetches for a spec.interval (runOperator's, tests only). */
    importFetchIntervalMs?: (specIntervalMs: number) => number;
  } = {},
): Promise<InProcessOperator> {
  const probeFlags =
    opts.probes === 'default' ? [] : opts.probes ? ['--probe-allow-cidr', '127.0.0.1/32'] : ['--no-probes'];
  const flags = parseOperatorFlags([
    ...baseFlags(namespace, opts.kubeconfig),
    '--no-leader-elect',
    ...probeFlags,
    ...extra,
  ]);
  if (flags === 'help') throw new Error('unexpected help');
  const logs: string[] = [];
  const logFile = process.env.AGENTCARD_TEST_OPERATOR_LOG;
  const log = createLogger(
    { component: 'operator' },
    {
      level: 'debug',
      write: (line) => {
        logs.push(line);
        if (logFile) appendFileSync(logFile, line);
      },
    },
  );
  const abort = new AbortController();
  let port = 0;
  const done = runOperator(flags, {
    signal: abort.signal,
    log,
    onListening: (p) => (port = p),
    ...(opts.importFetchIntervalMs ? { importFetchIntervalMs: opts.importFetchIntervalMs } : {}),
  });
  await waitFor('the operator to listen', async () => port !== 0, 10_000);
  return {
    logs,
    metricsPort: () => port,
    stop: async () => {
      abort.abort();
      return done;
    },
  };
}

export interface OperatorFixtureOptions {
  /** Flags after startOperator's defaults (a function when they name the file's namespace). */
  flags?: string[] | ((namespace: string) => string[]);
  probes?: boolean;
  /** Installs the AgentCatalog and ClusterAgentCatalog CRDs too. */
  catalogs?: boolean;
  /** Runs once the namespace exists, before the operator starts: peers, Secrets, policies. */
  before?: () => Promise<void>;
  /** Runs after the operator has stopped, before the namespace is deleted. */
  after?: () => Promise<void>;
}

/**
 * The set-up most controller integration files share, registered as the file's beforeAll and
 * afterAll: the AgentCard CRD (and the catalog CRDs on request), a namespace of the file's own, and an in-process operator watching
 * it. The namespace's name is fixed when the file loads; `op` answers from beforeAll on.
 */
export function useOperatorInNamespace(
  prefix: string,
  options: OperatorFixtureOptions = {},
): { kc: KubeConfig; api: Api; ns: TestNamespace; op: InProcessOperator } {
  const kc = kubeConfig();
  const namespace = testNamespace(prefix, kc);
  let running: InProcessOperator | undefined;
  const started = (): InProcessOperator => {
    if (!running) throw new Error('the operator starts in beforeAll');
    return running;
  };
  beforeAll(async () => {
    await (options.catalogs ? installCatalogCrds(kc) : installCrd(kc));
    await namespace.create();
    await options.before?.();
    const flags = typeof options.flags === 'function' ? options.flags(namespace.name) : options.flags;
    running = await startOperator(namespace.name, flags, { probes: options.probes });
  });
  afterAll(async () => {
    await running?.stop();
    await options.after?.();
    await namespace.cleanup();
  });
  return {
    kc,
    api: new Api(kc),
    ns: { name: namespace.name, cleanup: namespace.cleanup },
    op: {
      get logs() {
        return started().logs;
      },
      metricsPort: () => started().metricsPort(),
      stop: () => started().stop(),
    },
  };
}

export interface ChildOperator {
  child: ChildProcess;
  lines: string[];
  exited: Promise<number | null>;
  /** Waits for a JSON log line whose msg equals `msg` (and matches `fields`). */
  waitForLog(msg: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  metricsPort(): Promise<number>;
}

/**
 * Collects a child operator's JSON log lines (stdout and stderr); `find` returns the first line
 * whose msg equals `msg`.
 */
export function watchLogs(child: ChildProcess): {
  lines: string[];
  exited: Promise<number | null>;
  find(msg: string): Record<string, unknown> | undefined;
} {
  const lines: string[] = [];
  let buffer = '';
  const onData = (chunk: Buffer) => {
    buffer += chunk.toString();
    const parts = buffer.split('\n');
    buffer = parts.pop()!;
    lines.push(...parts.filter(Boolean));
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const find = (msg: string) => {
    for (const line of lines) {
      try {
        const parsed = JSON.parse(line) as Record<string, unknown>;
        if (parsed.msg === msg) return parsed;
      } catch {
        // not JSON
      }
    }
    return undefined;
  };
  return { lines, exited, find };
}

/**
 * Runs `agentcard operator` (the package as it ships: test-package.ts) on the Node.js 24 of
 * node_modules, as a real child process
 * (against the shared control plane unless `opts.kubeconfig` names another; `opts.env` adds
 * environment variables such as POD_NAME).
 */
export function spawnOperator(
  namespace: string,
  extra: string[],
  opts: { kubeconfig?: string; env?: Record<string, string> } = {},
): ChildOperator {
  const node = join(repoRoot, 'node_modules', '.bin', 'node');
  const child = spawn(
    node,
    [agentcardBin(), 'operator', ...baseFlags(namespace, opts.kubeconfig), ...extra],
    {
      cwd: repoRoot,
      env: { ...process.env, AGENTCARD_LOG_LEVEL: 'info', KUBECONFIG: '', ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const { lines, exited, find } = watchLogs(child);
  return {
    child,
    lines,
    exited,
    waitForLog: (msg, timeoutMs = 30_000) => waitFor(`log line "${msg}"`, async () => find(msg), timeoutMs),
    metricsPort: async () =>
      Number((await waitFor('operator start', async () => find('operator starting'), 30_000)).metricsPort),
  };
}

/** GET on the API server with the test's admin credentials. */
export async function apiGet(kc: KubeConfig, path: string): Promise<string> {
  const server = kc.getCurrentCluster()!.server;
  const url = new URL(path, server);
  const opts: Parameters<typeof request>[1] = { method: 'GET' };
  await kc.applyToHTTPSOptions(opts);
  return new Promise((resolvePromise, reject) => {
    const req = request(url, opts, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () =>
        res.statusCode === 200 ? resolvePromise(body) : reject(new Error(`GET ${path}: ${res.statusCode}`)),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Sum of apiserver_request_total over the series whose labels match every given value, e.g.
 * {verb: 'PATCH', resource: 'configmaps'}.
 */
export async function apiRequests(
  kc: KubeConfig,
  match: Record<string, string | string[] | ((value: string) => boolean)>,
): Promise<number> {
  const text = await apiGet(kc, '/metrics');
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    const ok = Object.entries(match).every(([k, v]) =>
      typeof v === 'function'
        ? v(labels[k] ?? '')
        : Array.isArray(v)
          ? v.includes(labels[k] ?? '')
          : labels[k] === v,
    );
    if (ok) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

/**
 * Patches (server-side apply is counted as APPLY or PATCH) of ConfigMaps and of AgentCard status,
 * and every write of an AgentCard itself, as the API server counts them. Other writers on the
 * test control plane are left out: the kube-root-ca.crt publisher creates and updates ConfigMaps,
 * never patches them, and the namespace controller, emptying another test's namespace, deletes
 * AgentCards by collection (counted as DELETE at namespace scope, even for an empty collection).
 */
export async function controllerWrites(
  kc: KubeConfig,
): Promise<{ configMaps: number; status: number; cards: number }> {
  const patch = ['PATCH', 'APPLY'];
  const [configMaps, status, cardWrites, cardDeletes] = await Promise.all([
    apiRequests(kc, { verb: patch, resource: 'configmaps', subresource: '' }),
    apiRequests(kc, { verb: patch, resource: PLURAL, subresource: 'status' }),
    apiRequests(kc, { verb: ['PATCH', 'APPLY', 'PUT', 'POST'], resource: PLURAL, subresource: '' }),
    apiRequests(kc, { verb: 'DELETE', scope: 'resource', resource: PLURAL, subresource: '' }),
  ]);
  return { configMaps, status, cards: cardWrites + cardDeletes };
}

/**
 * The same patches of ConfigMaps and of AgentCard status, split by the API server's answer:
 * `ok` (2xx) and `failed` (anything else). A request whose client went away before the answer
 * (a process killed mid-request) is still counted by the API server, as 504 "request did not
 * complete", though it normally stored nothing.
 */
export async function controllerWriteOutcomes(kc: KubeConfig): Promise<{
  configMaps: { ok: number; failed: number };
  status: { ok: number; failed: number };
}> {
  const patch = ['PATCH', 'APPLY'];
  const ok = (code: string) => code.startsWith('2');
  const failed = (code: string) => !code.startsWith('2');
  const [cmOk, cmFailed, stOk, stFailed] = await Promise.all([
    apiRequests(kc, { verb: patch, resource: 'configmaps', subresource: '', code: ok }),
    apiRequests(kc, { verb: patch, resource: 'configmaps', subresource: '', code: failed }),
    apiRequests(kc, { verb: patch, resource: PLURAL, subresource: 'status', code: ok }),
    apiRequests(kc, { verb: patch, resource: PLURAL, subresource: 'status', code: failed }),
  ]);
  return { configMaps: { ok: cmOk, failed: cmFailed }, status: { ok: stOk, failed: stFailed } };
}

/** A value of one metric series from a Prometheus text page. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== '{' && rest[0] !== ' ') continue;
    const found = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v))
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

export async function operatorMetrics(port: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

/**
 * One controller's work queue as its metrics tell it: finished reconciles (every result), and
 * whether nothing is queued or running. A delayed add (a backoff retry, a requeue-after) is not
 * queued until due, so an idle queue says no reconcile is under way, not that none is scheduled.
 */
export async function controllerQueue(
  port: number,
  controller: string,
): Promise<{ reconciles: number; idle: boolean }> {
  const text = await operatorMetrics(port);
  const labels = { controller };
  return {
    reconciles: metricValue(text, 'controller_runtime_reconcile_total', labels),
    idle:
      metricValue(text, 'workqueue_depth', labels) === 0 &&
      metricValue(text, 'controller_runtime_active_workers', labels) === 0,
  };
}
