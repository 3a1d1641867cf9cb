/**
 * The central card server: serves every AgentCard that chose `spec.serving.server: Central` by
 * Host at /.well-known/agent-card.json, agent.json and jwks.json, from the ConfigMaps the
 * controller publishes for them, through the sidecar's HTTP code (sidecar/http.ts and
 * respond.ts) and its document checks (sidecar/version.ts).
 *
 * It finds the cards by a label (names.ts CENTRAL_SELECTOR) with one list+watch of ConfigMaps per
 * namespace it serves (or one cluster-wide), read-only: the only API access it needs is
 * get/list/watch on ConfigMaps. The cards live in memory, so it keeps answering while an agent
 * has no Pods and while the API server is unreachable (the informer keeps its cache and resumes
 * its watch). A ConfigMap whose files are refused (invalid JSON, a card over 1 MiB) keeps its last
 * good version served, as the sidecar keeps its last good directory.
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import { CENTRAL_SELECTOR, SERVING_HOSTS_KEY } from '../api/names.ts';
import { collectionPath } from '../kube/api.ts';
import type { KubeClient } from '../kube/client.ts';
import { ResilientInformer } from '../kube/informer.ts';
import type { Logger } from '../log.ts';
import { startCardHttp } from '../sidecar/http.ts';
import { createSidecarMetrics, label } from '../sidecar/metrics.ts';
import { prepareVersion, type CardVersion } from '../sidecar/version.ts';
import { configMapFiles } from './files.ts';
import { buildHostIndex, parseServingHosts, resolveHost, type HostIndex } from './hosts.ts';

export interface CardServerOptions {
  client: KubeClient;
  /** Namespaces to serve; empty: every namespace (one cluster-wide watch). */
  namespaces: readonly string[];
  port: number;
  metricsPort: number;
  host?: string | undefined;
  trustForwardedHost?: boolean;
  maxHeaderSize?: number;
  keepAliveSeconds?: number;
  /** Used when a ConfigMap has no `cache-max-age-seconds` (the controller always writes it). */
  defaultMaxAgeSeconds: number;
  logger: Logger;
}

export interface CardServer {
  port: number;
  metricsPort: number;
  /** The current host index (for tests and logs). */
  index(): HostIndex;
  /** Whether every watch has loaded its first list. */
  synced(): boolean;
  close(): Promise<void>;
}

/** A version with no documents: every card path answers 404 (an unknown or conflicted host). */
const NO_CARD: CardVersion = {
  documents: new Map(),
  variants: new Map(),
  digest: '',
  cardVersion: '',
  maxAgeSeconds: 0,
};

interface Served {
  version: CardVersion;
  defaultHosts: string[];
  dataKeys: string[];
  /** The ConfigMap's resourceVersion the version was prepared from. */
  resourceVersion: string | undefined;
}

export async function startCardServer(opts: CardServerOptions): Promise<CardServer> {
  const { logger } = opts;
  const metrics = createSidecarMetrics();
  const cards = new Map<string, Served>();
  let index: HostIndex = buildHostIndex([]);
  const scopes = opts.namespaces.length > 0 ? [...opts.namespaces] : [''];
  const informers = scopes.map(
    (ns) =>
      new ResilientInformer<V1ConfigMap>({
        name: `configmaps/${ns || '*'}`,
        client: opts.client,
        path: collectionPath('/api/v1', 'configmaps', ns || undefined),
        labelSelector: CENTRAL_SELECTOR,
        log: logger,
        // Only what is served is kept, and of managedFields their times (Last-Modified, files.ts).
        keepManagedFields: true,
        trim: (cm) => {
          cm.metadata = {
            name: cm.metadata?.name,
            namespace: cm.metadata?.namespace,
            resourceVersion: cm.metadata?.resourceVersion,
            creationTimestamp: cm.metadata?.creationTimestamp,
            managedFields: cm.metadata?.managedFields?.map((f) => ({ time: f.time })),
          };
          cm.binaryData = undefined; // Not deleted: a delete makes it a slower dictionary object.
        },
      }),
  );

  const reindex = () => {
    const before = index.conflicts;
    index = buildHostIndex(
      [...cards].map(([key, c]) => ({ key, defaultHosts: c.defaultHosts, dataKeys: c.dataKeys })),
    );
    for (const [host, keys] of index.conflicts) {
      if (before.get(host)?.join() !== keys.join())
        logger.warn('two cards claim one host; serving neither for it', { host, configMaps: keys });
    }
  };
  const upsert = (cm: V1ConfigMap) => {
    const key = `${cm.metadata?.namespace ?? ''}/${cm.metadata?.name ?? ''}`;
    const previous = cards.get(key);
    if (previous && previous.resourceVersion === cm.metadata?.resourceVersion) return;
    const result = prepareVersion(configMapFiles(cm), { defaultMaxAgeSeconds: opts.defaultMaxAgeSeconds });
    if (!result.ok) {
      metrics.refused();
      logger.warn(
        previous ? 'refused a new card version; still serving the previous one' : 'refused card files',
        { configMap: key, problem: result.problem },
      );
      return;
    }
    cards.set(key, {
      version: result.version,
      defaultHosts: parseServingHosts(cm.data?.[SERVING_HOSTS_KEY]),
      dataKeys: Object.keys(cm.data ?? {}),
      resourceVersion: cm.metadata?.resourceVersion,
    });
    metrics.loaded(result.version.digest, result.version.cardVersion);
    if (previous?.version.digest !== result.version.digest)
      logger.info('card loaded', { configMap: key, digest: result.version.digest });
    reindex();
  };
  const remove = (cm: V1ConfigMap) => {
    const key = `${cm.metadata?.namespace ?? ''}/${cm.metadata?.name ?? ''}`;
    if (cards.delete(key)) {
      logger.info('card removed', { configMap: key });
      reindex();
    }
  };
  for (const inf of informers) {
    inf.addEventHandler({ add: upsert, update: (_old, now) => upsert(now), delete: remove });
  }

  const synced = () => informers.every((i) => i.synced);
  const http = await startCardHttp({
    port: opts.port,
    metricsPort: opts.metricsPort,
    host: opts.host,
    maxHeaderSize: opts.maxHeaderSize,
    keepAliveSeconds: opts.keepAliveSeconds,
    trustForwardedHost: opts.trustForwardedHost,
    select: (host) => {
      // Before the first list: 503 on the card paths, as the sidecar before its first card.
      if (!synced() && cards.size === 0) return { version: undefined, host };
      const found = resolveHost(index, host);
      if (found.kind !== 'card') return { version: NO_CARD, host: undefined };
      const card = cards.get(found.key);
      if (!card) return { version: NO_CARD, host: undefined };
      return { version: card.version, host: found.isDefault ? undefined : host };
    },
    // Ready once the cards are listed; a later outage keeps it ready (the cards are in memory).
    notReadyReason: () => (synced() || cards.size > 0 ? undefined : 'the card ConfigMaps are not listed yet'),
    metrics: {
      request: (route, status) => metrics.request(route, status),
      render: () =>
        metrics.render() +
        [
          '# HELP agentcard_card_server_cards Cards served (published ConfigMaps with central serving).',
          '# TYPE agentcard_card_server_cards gauge',
          `agentcard_card_server_cards ${cards.size}`,
          '# HELP agentcard_card_server_host_conflicts Hosts claimed by two or more cards (served by neither), by host.',
          '# TYPE agentcard_card_server_host_conflicts gauge',
          ...[...index.conflicts].map(
            ([host, keys]) => `agentcard_card_server_host_conflicts{host="${label(host)}"} ${keys.length}`,
          ),
        ].join('\n') +
        '\n',
    },
  });
  for (const inf of informers) void inf.start();

  return {
    port: http.port,
    metricsPort: http.metricsPort,
    index: () => index,
    synced,
    async close() {
      await Promise.all(informers.map((i) => i.stop()));
      await http.close();
    },
  };
}
