/**
 * The operator's HTTP endpoints on the metrics port: `/healthz` (the process serves requests),
 * `/readyz` (the caller's readiness check passes) and `/metrics` (Prometheus text format).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { writeExposition } from '../metrics/exposition.ts';

export interface HealthServerOptions {
  host: string;
  port: number;
  registry: Registry;
  /** Returns undefined when ready, else a short reason for the 503 body. */
  notReadyReason: () => string | undefined;
}

export interface HealthServer {
  server: Server;
  port: number;
  close(): Promise<void>;
}

export async function startHealthServer(opts: HealthServerOptions): Promise<HealthServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok\n');
    } else if (path === '/readyz') {
      const reason = opts.notReadyReason();
      res
        .writeHead(reason ? 503 : 200, { 'Content-Type': 'text/plain' })
        .end(reason ? `not ready: ${reason}\n` : 'ok\n');
    } else if (path === '/metrics') {
      void writeExposition(opts.registry, res);
    } else {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
    }
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
