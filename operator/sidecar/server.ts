/**
 * The sidecar: serves the current card version on one port and health plus metrics on another.
 * It never writes a file (the root file system is read-only in the Pod).
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import type { Logger } from '../log.ts';
import { UserError } from '../errors.ts';
import { METRICS_CONTENT_TYPE, createSidecarMetrics } from './metrics.ts';
import { ResponseWriter, serveConnection } from './http1.ts';
import { answer } from './respond.ts';
import { watchDirectory } from './source.ts';
import { prepareVersion } from './version.ts';
import type { CardVersion } from './version.ts';

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
  /** Bounds: request header bytes and simultaneous connections. */
  maxHeaderSize?: number;
  maxConnections?: number;
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

const KEEP_ALIVE_MS = 5_000;

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

  // The card port: the HTTP/1.1 subset of http1.ts on plain TCP (the hot path).
  const writer = new ResponseWriter(KEEP_ALIVE_MS / 1000);
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    serveConnection(socket, {
      maxHeadBytes: opts.maxHeaderSize ?? 8192,
      headTimeoutMs: 10_000,
      keepAliveMs: KEEP_ALIVE_MS,
      writer,
      respond(head) {
        const ans = answer({ method: head.method, url: head.target, headers: head.headers }, current);
        metrics.request(ans.route, ans.status);
        return ans;
      },
    });
  });
  server.maxConnections = opts.maxConnections ?? 1024;

  const health = createHttpServer({ maxHeaderSize: 8192 }, (req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path === '/healthz') return void res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok\n');
    if (path === '/readyz') {
      return void res
        .writeHead(current ? 200 : 503, { 'Content-Type': 'text/plain' })
        .end(current ? 'ok\n' : 'no card loaded\n');
    }
    if (path === '/metrics')
      return void res.writeHead(200, { 'Content-Type': METRICS_CONTENT_TYPE }).end(metrics.render());
    res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
  });
  health.maxConnections = 64;

  try {
    await listen(server, opts.port, opts.host);
    await listen(health, opts.metricsPort, opts.host);
  } catch (err) {
    source.close();
    server.close();
    health.close();
    throw err;
  }

  return {
    port: (server.address() as AddressInfo).port,
    metricsPort: (health.address() as AddressInfo).port,
    current: () => current,
    reload: () => source.check(),
    async close() {
      source.close();
      const closed = Promise.all([
        new Promise<void>((resolve) => server.close(() => resolve())),
        new Promise<void>((resolve) => health.close(() => resolve())),
      ]);
      health.closeIdleConnections();
      // Every answer is written synchronously, so no connection is in the middle of one: end them.
      for (const socket of sockets) socket.end();
      const force = setTimeout(() => {
        for (const socket of sockets) socket.destroy();
        health.closeAllConnections();
      }, 3_000);
      await closed;
      clearTimeout(force);
    },
  };
}

function sameDocs(a: CardVersion, b: CardVersion): boolean {
  if (a.maxAgeSeconds !== b.maxAgeSeconds || a.documents.size !== b.documents.size) return false;
  for (const [path, doc] of a.documents) {
    const other = b.documents.get(path);
    if (!other || other.etag !== doc.etag || other.lastModifiedSeconds !== doc.lastModifiedSeconds)
      return false;
  }
  return true;
}

function listen(server: Server, port: number, host: string | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') reject(new UserError(`port ${port} is already in use`));
      else if (err.code === 'EACCES') reject(new UserError(`not allowed to listen on port ${port}`));
      else reject(err);
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
