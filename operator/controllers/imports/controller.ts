/**
 * The import controller: for each CatalogImport, fetches the remote AI Catalog every
 * spec.interval (operator/federation/: crawl, verify, keep the last good), stores what verified in
 * the ConfigMaps the import owns (federation/store.ts, the contract local catalogs read), and
 * reports counts and conditions in its status and one Event per distinct problem.
 *
 * What triggers a run:
 * - the import is added or its metadata.generation changes (never its own status writes): a
 *   fetch now;
 * - one of its ConfigMaps is changed or deleted by someone else (not the echo of its own apply):
 *   a fetch now (with ETags, the origin answers 304 and only the store is put back);
 * - its interval: each run asks to be queued again when the next fetch is due; a resync or any
 *   other run before then writes nothing and fetches nothing.
 *
 * Writes: the ConfigMaps whose bytes changed (a shard no longer used is emptied),
 * and the status when it changed (plan.ts): an import whose origin has not changed writes nothing.
 */
import type { KubernetesObject, V1ConfigMap } from '@kubernetes/client-node';
import { API_VERSION, GROUP, IMPORT_KIND, IMPORT_LABEL, IMPORT_PLURAL, VERSION } from '../../api/names.ts';
import { parseDuration } from '../../card/resource.ts';
import { loadTrust, type TrustDocument, type TrustSources } from '../../catalog/trust.ts';
import { crawlImport } from '../../federation/crawl.ts';
import { ImportCache, importFetcher } from '../../federation/fetch.ts';
import { mergeImport } from '../../federation/merge.ts';
import {
  CatalogImportSpecSchema,
  type CatalogImportSpec,
  type CatalogImportStatus,
} from '../../federation/resource.ts';
import { importConfigMaps, readImportedEntries, type ImportedEntry } from '../../federation/store.ts';
import { readOptional } from '../../kube/api.ts';
import type { KubeClient } from '../../kube/client.ts';
import { systemClock, type Clock } from '../../kube/clock.ts';
import { describeApiError } from '../../kube/errors.ts';
import type { EventRecorder } from '../../kube/events.ts';
import type { Logger } from '../../log.ts';
import type { CaOption, Resolver } from '../../probe/connect.ts';
import type { AddressPolicy } from '../../probe/policy.ts';
import {
  ControllerBuilder,
  type BuiltController,
  type EventType,
  type Runtime,
} from '../../runtime/builder.ts';
import type { Cache, SharedInformer } from '../../runtime/cache.ts';
import { configMapUpToDate } from '../../runtime/configmaps.ts';
import { objectKey, splitKey } from '../../runtime/keys.ts';
import type { Runnable } from '../../runtime/manager.ts';
import type { HandlerResult, WorkQueue } from '../../runtime/workqueue.ts';
import { Writer } from '../../runtime/writes.ts';
import { CATALOG_IMPORTS, OWNED_CONFIGMAPS } from '../cache/collections.ts';
import type { CachedConfigMap } from '../cache/configmap-trim.ts';
import { CONTROLLER_NAMES } from '../metrics.ts';
import type { ImportMetrics } from './metrics.ts';
import { importEvents, importStatus, type RunSummary } from './plan.ts';

export interface ImportControllerOptions {
  client: KubeClient;
  log: Logger;
  cache: Cache;
  runtime: Runtime;
  events: EventRecorder;
  metrics: ImportMetrics;
  /** The address policy every remote document is fetched under (the probes' flags). */
  policy: AddressPolicy;
  /** CA certificates trusted besides the system roots (--probe-ca-file). */
  ca?: CaOption;
  /** Tests only: a resolver for names the machine's DNS does not know. */
  resolver?: Resolver;
  resyncMs: number;
  /**
   * Tests only: the time between fetches for an import's spec.interval (default: the interval
   * itself). The schema's 30 s floor protects the origins of a user's cluster; a test of what
   * happens "within one interval" passes a fraction of it to see the same in less time.
   */
  fetchIntervalMs?: (specIntervalMs: number) => number;
  concurrency?: number;
  onWrite?: (resource: string) => void;
}

type ImportObject = KubernetesObject & {
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    generation?: number;
    resourceVersion?: string;
    deletionTimestamp?: unknown;
  };
  spec?: unknown;
  status?: CatalogImportStatus;
};

/** What the controller remembers of an import between runs (lost on restart: the store and status say the rest). */
interface ImportState {
  uid: string;
  generation: number;
  /** When the last fetch ran (ms). */
  fetchedAt: number;
  /** A fetch is due before the interval (the store was changed by someone else). */
  dirty: boolean;
  lastGood: Map<string, number>;
  lastSuccess?: number;
  cache: ImportCache;
  /** Refusals already reported as Events. */
  reported: Set<string>;
}

export class ImportController {
  readonly queue: WorkQueue;
  private readonly opts: ImportControllerOptions;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly imports: SharedInformer<ImportObject>;
  private readonly configMaps: SharedInformer<CachedConfigMap>;
  private readonly writer: Writer<ImportObject>;
  private readonly built: BuiltController;
  private readonly states = new Map<string, ImportState>();

  constructor(opts: ImportControllerOptions) {
    this.opts = opts;
    this.log = opts.log.child({ controller: 'imports' });
    this.clock = opts.runtime.clock ?? systemClock;
    this.writer = new Writer({ client: opts.client, onWrite: (resource) => opts.onWrite?.(resource) });
    this.imports = opts.cache.informer<ImportObject>(CATALOG_IMPORTS);
    this.configMaps = opts.cache.informer(OWNED_CONFIGMAPS);
    this.built = new ControllerBuilder(
      { ...opts.runtime, log: this.log },
      {
        name: CONTROLLER_NAMES.imports,
        concurrency: opts.concurrency ?? 4,
        resyncMs: opts.resyncMs,
        failure: 'catalog import failed; retrying',
        fields: (key) => ({ catalogImport: key }),
      },
    )
      .watches(this.imports, (obj, event) => this.onImport(obj, event))
      .owns(this.configMaps, {
        kinds: [IMPORT_KIND],
        key: (owner, cm, { type }) => this.onConfigMap(owner, cm, type === 'delete'),
      })
      .complete(this);
    this.queue = this.built.queue;
  }

  unsynced(): string[] {
    return this.built.unsynced();
  }

  runnables(): Runnable[] {
    return this.built.runnables();
  }

  *keys(): Iterable<{ key: string }> {
    for (const i of this.imports.list()) yield { key: objectKey(i.metadata.namespace, i.metadata.name) };
  }

  started(lanes: { high: number; low: number }): void {
    this.log.info('caches synced; importing catalogs', { catalogImports: lanes.high + lanes.low });
  }

  private onImport(obj: ImportObject, { type, old }: { type: EventType; old?: ImportObject }): string[] {
    const key = objectKey(obj.metadata.namespace, obj.metadata.name);
    if (type === 'delete') {
      this.states.delete(key);
      this.writer.forgetOwner(key);
      this.opts.metrics.forget(key);
      return [];
    }
    if (type === 'update' && (old?.metadata.generation ?? 0) === (obj.metadata.generation ?? 0)) return [];
    return [key];
  }

  private onConfigMap(owner: string, cm: CachedConfigMap, deleted: boolean): string | undefined {
    if (cm.metadata?.labels?.[IMPORT_LABEL] === undefined) return undefined;
    const namespace = cm.metadata.namespace ?? '';
    if (deleted) this.writer.forgetConfigMap(namespace, cm.metadata.name ?? '');
    else if (this.writer.isConfigMapEcho(cm)) return undefined;
    const key = objectKey(namespace, owner);
    const state = this.states.get(key);
    if (state) state.dirty = true;
    return key;
  }

  /** The store's ConfigMaps of this import (its uid), freshest view first. */
  private stored(namespace: string, uid: string): V1ConfigMap[] {
    return this.configMaps
      .list(namespace)
      .filter(
        (cm) =>
          cm.metadata?.labels?.[IMPORT_LABEL] !== undefined &&
          (cm.metadata.ownerReferences ?? []).some((r) => r.uid === uid && r.controller),
      )
      .map((cm) => this.writer.readConfigMap(namespace, cm.metadata!.name!, cm) ?? cm);
  }

  async reconcile(key: string, signal: AbortSignal): Promise<HandlerResult> {
    const [namespace, name] = splitKey(key);
    const obj = this.writer.readOwner(key, this.imports.get(name, namespace));
    if (!obj || obj.metadata.deletionTimestamp) return;
    const generation = obj.metadata.generation ?? 0;
    const now = this.clock.now();
    const parsed = CatalogImportSpecSchema.safeParse(obj.spec);
    if (!parsed.success) {
      const message = parsed.error.issues
        .slice(0, 3)
        .map(
          (i) =>
            `spec${i.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('')}: ${i.message}`,
        )
        .join('; ');
      await this.finish(obj, { kind: 'invalid', message }, undefined, signal);
      return;
    }
    const spec = parsed.data;
    const specIntervalMs = parseDuration(spec.interval);
    const intervalMs = this.opts.fetchIntervalMs?.(specIntervalMs) ?? specIntervalMs;
    let state = this.states.get(key);
    if (!state || state.uid !== obj.metadata.uid) {
      const success = obj.status?.lastSuccessTime ? Date.parse(obj.status.lastSuccessTime) : undefined;
      state = {
        uid: obj.metadata.uid,
        generation: -1,
        fetchedAt: 0,
        dirty: false,
        lastGood: new Map(),
        ...(success !== undefined && Number.isFinite(success) ? { lastSuccess: success } : {}),
        cache: new ImportCache(),
        reported: new Set(),
      };
      this.states.set(key, state);
    }
    const due = state.fetchedAt + intervalMs;
    if (state.generation === generation && !state.dirty && now < due) return { requeueAfterMs: due - now };
    state.generation = generation;
    state.dirty = false;
    state.fetchedAt = now;
    try {
      await this.run(obj, spec, state, signal);
    } catch (err) {
      state.dirty = true; // the retry (with backoff) runs the whole fetch again
      throw err;
    }
    return { requeueAfterMs: intervalMs };
  }

  private async run(obj: ImportObject, spec: CatalogImportSpec, state: ImportState, signal: AbortSignal) {
    const { namespace, name, uid } = obj.metadata;
    const now = this.clock.now();
    const maxStalenessMs = parseDuration(spec.maxStaleness);
    const live = this.stored(namespace, uid);
    const previous: ImportedEntry[] = readImportedEntries(live);
    const fallbackGood = state.lastSuccess ?? now;

    const trust = loadTrust(spec.trust, await this.readTrustSources(namespace, spec.trust, signal));
    let outcome: Awaited<ReturnType<typeof crawlImport>>;
    if (!trust.ok) {
      outcome = { ok: false, reason: 'Pending', message: trust.error };
    } else {
      const fetcher = importFetcher({
        policy: this.opts.policy,
        ...(this.opts.ca ? { ca: this.opts.ca } : {}),
        ...(this.opts.resolver ? { resolver: this.opts.resolver } : {}),
        cache: state.cache,
        signal,
      });
      try {
        outcome = await crawlImport({
          url: spec.url,
          maxDepth: spec.maxDepth,
          catalogSignature: spec.catalogSignature,
          trust: trust.trust,
          ...(spec.origin ? { origin: spec.origin } : {}),
          get: fetcher.get,
        });
      } finally {
        await fetcher.close(false);
      }
      if (outcome.ok) state.cache.prune();
    }
    if (signal.aborted) return;
    const merged = mergeImport({
      previous,
      lastGood: state.lastGood,
      fallbackGood,
      outcome,
      now,
      maxStalenessMs,
    });
    state.lastGood = merged.lastGood;
    if (outcome.ok) state.lastSuccess = now;

    // The store: only the ConfigMaps whose bytes changed. A shard no longer used is emptied, not
    // deleted (the operator's role deletes no ConfigMap; the garbage collector removes them with
    // the import), and used again when the entries grow.
    const desired = importConfigMaps({ namespace, name, uid }, merged.entries);
    const wanted = new Set(desired.map((cm) => cm.metadata.name));
    const [empty] = importConfigMaps({ namespace, name, uid }, []);
    for (const cm of live) {
      const cmName = cm.metadata?.name;
      if (cmName && !wanted.has(cmName) && Object.keys(cm.data ?? {}).length > 0)
        desired.push({ ...empty!, metadata: { ...empty!.metadata, name: cmName } });
    }
    const changed = desired.filter(
      (cm) =>
        !configMapUpToDate(
          live.find((l) => l.metadata?.name === cm.metadata.name),
          cm,
        ),
    );
    const published = await this.writer.publish(
      changed,
      (ns, n) => this.configMaps.get(n, ns)?.metadata?.resourceVersion,
      signal,
    );
    if (!published.ok) {
      this.log.warn('writing an import ConfigMap failed', {
        catalogImport: `${namespace}/${name}`,
        configMap: published.name,
        error: published.message,
      });
      throw published.error;
    }

    const run: RunSummary = !trust.ok
      ? { kind: 'untrusted', message: trust.error, stale: merged.stale, imported: merged.entries.length }
      : {
          kind: 'fetched',
          ...(outcome.ok
            ? { origin: outcome.origin, digest: outcome.digest, catalogs: outcome.catalogs }
            : {
                failure: { reason: outcome.reason, message: outcome.message },
                ...((spec.origin ?? obj.status?.origin) ? { origin: spec.origin ?? obj.status?.origin } : {}),
              }),
          imported: merged.entries.length,
          stale: merged.stale,
          refused: merged.refused,
          configMaps: wanted.size,
        };
    const refusedCounts: Record<string, number> = {};
    for (const r of merged.refused) refusedCounts[r.reason] = (refusedCounts[r.reason] ?? 0) + 1;
    this.opts.metrics.set(objectKey(namespace, name), {
      namespace,
      name,
      imported: merged.entries.length,
      stale: merged.stale,
      refused: refusedCounts,
      ...(state.lastSuccess !== undefined ? { lastSuccess: state.lastSuccess } : {}),
    });
    await this.finish(obj, run, state, signal, maxStalenessMs);
    if (changed.length > 0 || merged.refused.length > 0 || !outcome.ok)
      this.log.info('catalog imported', {
        catalogImport: `${namespace}/${name}`,
        imported: merged.entries.length,
        stale: merged.stale,
        refused: merged.refused.length,
        wroteConfigMaps: changed.length,
        ...(outcome.ok ? {} : { failure: outcome.reason }),
      });
  }

  /** Writes the status when it changed, and records the Events of what changed. */
  private async finish(
    obj: ImportObject,
    run: RunSummary,
    state: ImportState | undefined,
    signal: AbortSignal,
    maxStalenessMs = 0,
  ): Promise<void> {
    const { namespace, name } = obj.metadata;
    const key = objectKey(namespace, name);
    const { status, changed } = importStatus({
      generation: obj.metadata.generation ?? 0,
      previous: obj.status,
      run,
      now: new Date(this.clock.now()),
      ...(state?.lastSuccess !== undefined ? { lastSuccess: state.lastSuccess } : {}),
      maxStalenessMs,
    });
    const events = importEvents(
      obj.status?.conditions,
      status.conditions,
      run.kind === 'fetched' ? run.refused : [],
      state?.reported ?? new Set(),
    );
    for (const e of events)
      this.opts.events.record(
        { apiVersion: API_VERSION, kind: IMPORT_KIND, name, namespace, uid: obj.metadata.uid },
        e,
      );
    if (!changed) return;
    await this.writer.writeStatus(
      key,
      { group: GROUP, version: VERSION, plural: IMPORT_PLURAL },
      namespace,
      name,
      { apiVersion: API_VERSION, kind: IMPORT_KIND, metadata: { name, namespace }, status },
      obj.metadata.resourceVersion,
      signal,
    );
  }

  /**
   * The ConfigMaps spec.trust references, read at each fetch (they are not the operator's, so its
   * ConfigMap cache does not hold them). A LIST by name, not a GET: the operator's role lists
   * ConfigMaps, and one verb fewer is one permission fewer (as the catalogs read theirs).
   */
  private async readTrustSources(
    namespace: string,
    trust: CatalogImportSpec['trust'],
    signal: AbortSignal,
  ): Promise<TrustSources> {
    const read = async (
      ref: { configMap: { name: string; key: string } } | undefined,
    ): Promise<TrustDocument | undefined> => {
      if (!ref) return undefined;
      const { name, key } = ref.configMap;
      try {
        const list = await readOptional<{ items?: V1ConfigMap[] }>(
          this.opts.client,
          `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps?fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`,
          signal,
        );
        const found = list?.items?.[0];
        if (!found) return { error: `ConfigMap ${namespace}/${name} not found` };
        const text = found.data?.[key];
        return text === undefined ? { error: `ConfigMap ${namespace}/${name} has no key ${key}` } : { text };
      } catch (err) {
        return { error: `reading ConfigMap ${namespace}/${name}: ${describeApiError(err)}` };
      }
    };
    const [trustBundle, jwks] = await Promise.all([read(trust.trustBundle), read(trust.jwks)]);
    return { ...(trustBundle ? { trustBundle } : {}), ...(jwks ? { jwks } : {}) };
  }
}
