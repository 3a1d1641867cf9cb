/**
 * The sidecar: serves the current card version on one port and health plus metrics on another
 * (http.ts, shared with the central card server). It never writes a file (the root file system
 * is read-only in the Pod).
 */
import type { Logger } from '../log.ts';
import { startCardHttp } from './http.ts';
import { createSidecarMetrics } from './metrics.ts';
import { watchDirectory } from './source.ts';
import { prepareVersion } from './version.ts';
import type { CardVersion } from './version.ts';

export { SIDECAR_DEFAULTS, clientErrorStatus } from './http.ts';

export interface SidecarOptions {
  dir: string;
  port: number;
  metricsPort: number;
  /** Listen address; default: all interfaces. */
  host?: string | undefined;
  /** Used when the directory has no `cache-max-age-seconds` file. */
  defaultMaxAgeSeconds: number;
  logger: Logger;
  /** Safety-net poll of the directory (the watcher normally reacts first). */
  pollMs?: number;
  /** Request header bytes accepted (all fields together); default SIDECAR_DEFAULTS.maxHeaderBytes. */
  maxHeaderSize?: number;
  /** Idle time after which a keep-alive connection is closed; default SIDECAR_DEFAULTS.keepAliveSeconds. */
  keepAliveSeconds?: number;
  /** Select the audience by the first X-Forwarded-Host instead of Host (only behind a trusted proxy). */
  trustForwardedHost?: boolean;
  /**
   * Open connections above which idle keep-alive connections are closed to make room; a new
   * client is never refused for the count (as nginx reuses idle connections under pressure).
   */
  idleConnectionsSoftLimit?: number;
}

export interface Sidecar {
  port: number;
  metricsPort: number;
  /** The version being served (undefined until a valid one was read). */
  current(): CardVersion | undefined;
  /** Re-reads the directory now. */
  reload(): Promise<void>;
  close(): Promise<void>;
}

export async function startSidecar(opts: SidecarOptions): Promise<Sidecar> {
  const { logger } = opts;
  const metrics = createSidecarMetrics();
  let current: CardVersion | undefined;

  const source = watchDirectory(opts.dir, {
    pollMs: opts.pollMs,
    onChange(snapshot) {
      const result = prepareVersion(snapshot.files, { defaultMaxAgeSeconds: opts.defaultMaxAgeSeconds });
      if (!result.ok && !current && snapshot.files.size === 0) {
        // An optional ConfigMap volume stays empty until the card is published: not a failure.
        logger.info('waiting for the card files', { dir: opts.dir });
        return;
      }
      if (!result.ok) {
        metrics.refused();
        logger.warn(
          current ? 'refused new card files; still serving the previous card' : 'refused card files',
          {
            dir: opts.dir,
            problem: result.problem,
            ...(current ? { servingDigest: current.digest } : {}),
          },
        );
        return;
      }
      if (current?.digest === result.version.digest && sameDocs(current, result.version)) return;
      // One assignment swaps all three documents at once.
      current = result.version;
      metrics.loaded(current.digest, current.cardVersion);
      logger.info('card loaded', {
        dir: opts.dir,
        digest: current.digest,
        version: current.cardVersion,
        maxAgeSeconds: current.maxAgeSeconds,
      });
    },
    onError(err) {
      logger.warn('could not read the card directory', { dir: opts.dir, error: (err as Error).message });
    },
  });

  // A card already in the directory is served from the first request on.
  await source.check();

  let http;
  try {
    http = await startCardHttp({
      port: opts.port,
      metricsPort: opts.metricsPort,
      host: opts.host,
      maxHeaderSize: opts.maxHeaderSize,
      keepAliveSeconds: opts.keepAliveSeconds,
      trustForwardedHost: opts.trustForwardedHost,
      idleConnectionsSoftLimit: opts.idleConnectionsSoftLimit,
      // One card: every host gets it, and respond.ts picks the audience's variant by host.
      select: (host) => ({ version: current, host }),
      notReadyReason: () => (current ? undefined : 'no card loaded'),
      metrics,
    });
  } catch (err) {
    source.close();
    throw err;
  }
  const served = http;

  return {
    port: served.port,
    metricsPort: served.metricsPort,
    current: () => current,
    reload: () => source.check(),
    async close() {
      source.close();
      await served.close();
    },
  };
}

function sameDocs(a: CardVersion, b: CardVersion): boolean {
  if (a.maxAgeSeconds !== b.maxAgeSeconds) return false;
  return sameMap(a.documents, b.documents) && sameMap(a.variants, b.variants);
}

function sameMap(a: CardVersion['documents'], b: CardVersion['documents']): boolean {
  if (a.size !== b.size) return false;
  for (const [key, doc] of a) {
    const other = b.get(key);
    if (!other || other.etag !== doc.etag || other.lastModifiedSeconds !== doc.lastModifiedSeconds)
      return false;
  }
  return true;
}
