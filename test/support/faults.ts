/**
 * The fault suite's harness: a private control plane (test/controlplane/instance.ts) with the
 * AgentCard CRD, a burst of AgentCards applied with retries (the way a GitOps tool keeps applying
 * through an outage), convergence checks, and an observer that records every card version each
 * published ConfigMap has held, so a test can prove that no ConfigMap ever went back to an older
 * card.
 */
import { KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import { OWNED_SELECTOR, PLURAL, GROUP, VERSION } from '../../operator/api/names.ts';
import { DATA_KEYS } from '../../operator/api/names.ts';
import { KubeClient } from '../../operator/kube/client.ts';
import { ResilientInformer } from '../../operator/kube/informer.ts';
import { createLogger } from '../../operator/log.ts';
import { ControlPlaneInstance } from '../controlplane/instance.ts';
import {
  Api,
  condition,
  installCrd,
  metricValue,
  operatorMetrics,
  sampleCard,
  sleep,
  waitFor,
  type AgentCardLive,
  type ChildOperator,
} from './operator.ts';

export interface FaultCluster {
  instance: ControlPlaneInstance;
  kc: KubeConfig;
  api: Api;
}

const log = (line: string) => process.stderr.write(`[fault control plane] ${line}\n`);

/** Starts a private control plane with the CRD installed. */
export async function startFaultCluster(): Promise<FaultCluster> {
  const instance = await ControlPlaneInstance.start(log);
  const kc = new KubeConfig();
  kc.loadFromFile(instance.kubeconfig);
  await installCrd(kc);
  return { instance, kc, api: new Api(kc) };
}

/** Whether an error is the API server being away (refused, reset, 5xx, 429), worth retrying. */
export function isTransient(err: unknown): boolean {
  const code = (err as { code?: number | string }).code;
  if (typeof code === 'number') return code === 429 || code >= 500;
  return true; // a connection error: no HTTP status at all
}

/**
 * Runs `fn` until it succeeds, retrying transient failures every 200 ms for up to `timeoutMs`.
 * With `conflicts`, a 409 is retried too: for a read-then-replace whose object someone else (the
 * operator's status write) changed in between, which the API server's optimistic concurrency
 * refuses, as any client that re-reads and tries again expects.
 */
export async function retrying<T>(
  fn: () => Promise<T>,
  timeoutMs = 120_000,
  opts: { conflicts?: boolean } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      const conflict = opts.conflicts && (err as { code?: unknown }).code === 409;
      if ((!isTransient(err) && !conflict) || Date.now() > deadline) throw err;
      await sleep(200);
    }
  }
}

export const cardName = (i: number) => `card-${String(i).padStart(3, '0')}`;

/** The spec of burst card `i` at `version`, signed with the key in Secret `secret`. */
export function burstSpec(version: string, secret: string): Record<string, unknown> {
  return { card: sampleCard(version), signing: { keys: [{ secretRef: { name: secret, key: 'jwk' } }] } };
}

/**
 * Creates `names` (10 in flight), each retried through an outage. A create that reached the
 * server before its connection broke comes back as 409 on the retry: that counts as created.
 */
export async function createBurst(
  api: Api,
  namespace: string,
  names: string[],
  spec: (name: string) => Record<string, unknown>,
  onEach?: (done: number) => Promise<void> | void,
): Promise<void> {
  let done = 0;
  for (let i = 0; i < names.length; i += 10) {
    await Promise.all(
      names.slice(i, i + 10).map((name) =>
        retrying(async () => {
          try {
            await api.createCard(namespace, name, spec(name));
          } catch (err) {
            if ((err as { code?: number }).code !== 409) throw err;
          }
        }),
      ),
    );
    done += Math.min(10, names.length - i);
    await onEach?.(done);
  }
}

export async function listCards(api: Api, namespace: string): Promise<AgentCardLive[]> {
  const list = (await api.custom.listNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    plural: PLURAL,
    namespace,
  })) as { items: AgentCardLive[] };
  return list.items;
}

/**
 * Whether a card has converged: Ready, status for the current generation, and a published
 * ConfigMap (`cm`) that serves the card version of the current spec, the version the status
 * reports (pure).
 */
function isConverged(card: AgentCardLive, cm: V1ConfigMap | undefined): boolean {
  const want = (card.spec.card as { version?: string }).version;
  return (
    condition(card, 'Ready')?.status === 'True' &&
    card.status?.observedGeneration === card.metadata.generation &&
    cm !== undefined &&
    servedVersion(cm) === want &&
    card.status?.card?.version === want
  );
}

/** The namespace's cards, each with its published ConfigMap (one list of each). */
async function cardsWithConfigMaps(
  api: Api,
  namespace: string,
): Promise<Array<{ card: AgentCardLive; cm: V1ConfigMap | undefined }>> {
  const [cards, cms] = await Promise.all([
    listCards(api, namespace),
    api.core.listNamespacedConfigMap({ namespace, labelSelector: OWNED_SELECTOR }),
  ]);
  const byName = new Map(cms.items.map((cm) => [cm.metadata?.name ?? '', cm]));
  return cards.map((card) => ({ card, cm: byName.get(`${card.metadata.name}-agent-card`) }));
}

/** Cards that have converged (isConverged). */
export async function convergedCards(api: Api, namespace: string): Promise<Set<string>> {
  const done = new Set<string>();
  for (const { card, cm } of await cardsWithConfigMaps(api, namespace))
    if (isConverged(card, cm)) done.add(card.metadata.name);
  return done;
}

/**
 * Waits until `count` cards of the namespace have converged. On a timeout the error says which
 * cards have not and why (generation, Ready, the version served), with the last lines each given
 * operator logged: a slow machine and a stalled operator look alike from the count alone.
 */
export async function waitForConverged(
  api: Api,
  namespace: string,
  count: number,
  timeoutMs: number,
  operators: ChildOperator[] = [],
): Promise<void> {
  try {
    await waitFor(
      `${count} converged`,
      async () => (await convergedCards(api, namespace)).size === count,
      timeoutMs,
    );
  } catch (err) {
    const all = await cardsWithConfigMaps(api, namespace);
    const waiting = all.filter(({ card, cm }) => !isConverged(card, cm));
    const pending = waiting.slice(0, 5).map(({ card, cm }) => {
      const ready = condition(card, 'Ready');
      return (
        `${card.metadata.name}: generation ${card.metadata.generation}, observed ${card.status?.observedGeneration}, ` +
        `Ready ${ready ? `${ready.status} (${ready.reason})` : 'not set'}, wants ${(card.spec.card as { version?: string }).version}, ` +
        `serves ${cm ? servedVersion(cm) : 'nothing'}`
      );
    });
    const logs = operators.map(
      (op, i) => `operator ${i} (exit ${op.child.exitCode}):\n${op.lines.slice(-15).join('\n')}`,
    );
    throw new Error(
      [
        `${(err as Error).message}: ${all.length - waiting.length} of ${all.length} converged`,
        ...pending,
        ...logs,
      ].join('\n'),
      { cause: err },
    );
  }
}

/** The card version a published ConfigMap serves. */
export function servedVersion(cm: V1ConfigMap): string | undefined {
  const text = cm.data?.[DATA_KEYS.card];
  if (!text) return undefined;
  try {
    return (JSON.parse(text) as { version?: string }).version;
  } catch {
    return undefined;
  }
}

/**
 * Records the card versions each published ConfigMap of a namespace holds over time, through
 * the operator's own list+watch cache (which resumes and relists through outages, so a version
 * that stays is seen). `reverted()` names the ConfigMaps that went from a newer card version to
 * an older one.
 */
export class PublishedHistory {
  readonly versions = new Map<string, string[]>();
  private readonly informer: ResilientInformer<V1ConfigMap>;

  constructor(kc: KubeConfig, namespace: string) {
    this.informer = new ResilientInformer<V1ConfigMap>({
      name: 'published-history',
      client: new KubeClient(kc),
      path: `/api/v1/namespaces/${namespace}/configmaps`,
      labelSelector: OWNED_SELECTOR,
      log: createLogger({}, { write: () => {} }),
      backoff: { baseMs: 200, maxMs: 1_000 },
    });
    const note = (cm: V1ConfigMap) => {
      const name = cm.metadata?.name ?? '';
      const version = servedVersion(cm);
      if (!version) return;
      const seen = this.versions.get(name) ?? [];
      if (seen[seen.length - 1] !== version) seen.push(version);
      this.versions.set(name, seen);
    };
    this.informer.on('add', note);
    this.informer.on('update', note);
  }

  async start(): Promise<void> {
    await this.informer.start();
    await this.informer.waitForSync();
  }

  stop(): Promise<void> {
    return this.informer.stop();
  }

  /** ConfigMaps whose served version ever decreased (versions compare as semver x.y.z). */
  reverted(): string[] {
    const num = (v: string) => v.split('.').map(Number);
    const older = (a: string, b: string) => {
      const [x, y] = [num(a), num(b)];
      for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return x[i]! < y[i]!;
      return false;
    };
    return [...this.versions]
      .filter(([, seen]) => seen.some((v, i) => i > 0 && older(v, seen[i - 1]!)))
      .map(([name]) => name);
  }
}

/** Events per (card, reason) in a namespace, with how many times each was recorded. */
export async function eventCounts(api: Api, namespace: string): Promise<Map<string, number>> {
  const list = await api.core.listNamespacedEvent({ namespace });
  const counts = new Map<string, number>();
  for (const e of list.items) {
    const key = `${e.involvedObject.name}/${e.reason}/${e.message ?? ''}`;
    counts.set(key, (counts.get(key) ?? 0) + Math.max(1, e.count ?? 1));
  }
  return counts;
}

/** The operator's own count of API writes it attempted, by resource (configmap, status, event). */
export async function attemptedWrites(metricsPort: number): Promise<Record<string, number>> {
  const text = await operatorMetrics(metricsPort);
  const out: Record<string, number> = {};
  for (const resource of ['configmap', 'status', 'event'])
    out[resource] = metricValue(text, 'agentcard_api_writes_total', { resource });
  return out;
}
