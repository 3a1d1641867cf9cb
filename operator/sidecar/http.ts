/**
 * The card port and the health port, shared by the two servers of prepared card versions: the
 * sidecar (one version, read from a mounted ConfigMap directory: server.ts) and the central card
 * server (one version per published ConfigMap, chosen by Host: ../cardserver/server.ts). Both
 * answer through respond.ts's `answer`, so their HTTP semantics are one code path.
 *
 * The card port is Node's standard HTTP server (llhttp), tuned for what sits in front of it
 * rather than for request rate: a card endpoint sees a few requests a minute, behind load
 * balancers and proxies that keep idle connections for minutes and send large cookies. Every
 * answer is prepared once per card version (version.ts); a request only selects one.
 */
import { createServer as createHttpServer } from 'node:http';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { AddressInfo, Server, Socket } from 'node:net';
import { UserError } from '../errors.ts';
import { requestHost } from './audience.ts';
import { METRICS_CONTENT_TYPE } from './metrics.ts';
import { answer } from './respond.ts';
import type { CardVersion } from './version.ts';

/**
 * Defaults shared by both serving modes (nginx.ts writes the same limits).
 * - Header limit: two 5 KB cookies and a proxy's added fields must fit; nginx accepts header
 *   lines up to 8 KiB each by default and node:http 16 KiB in all, so 32 KiB is above both.
 * - Keep-alive: a backend must keep an idle connection open longer than the load balancer in
 *   front of it, or the balancer reuses a connection the backend is closing and the client gets
 *   an error. Cloud load balancers keep idle connections for 60 s (AWS ALB, Azure) up to 600 s
 *   (Google Cloud), and recommend a backend timeout above theirs: 620 s outlasts them all.
 */
export const SIDECAR_DEFAULTS = {
  maxHeaderBytes: 32 * 1024,
  keepAliveSeconds: 620,
  idleConnectionsSoftLimit: 4096,
} as const;

/** What answers a request: the version to answer from and the audience host to look up in it. */
export interface Selection {
  /** Undefined: nothing loaded yet (503 on the card paths). */
  version: CardVersion | undefined;
  /** The audience's host for respond.ts's lookup; undefined selects the default documents. */
  host: string | undefined;
}

export interface CardHttpOptions {
  port: number;
  metricsPort: number;
  /** Listen address; default: all interfaces. */
  host?: string | undefined;
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
  /** The version and audience for a request's host (audience.ts requestHost, already normalized). */
  select(host: string | undefined): Selection;
  /** Why /readyz answers 503, or undefined when ready. */
  notReadyReason(): string | undefined;
  metrics: {
    request(route: string, status: number): void;
    render(): string;
  };
}

export interface CardHttp {
  port: number;
  metricsPort: number;
  close(): Promise<void>;
}

export async function startCardHttp(opts: CardHttpOptions): Promise<CardHttp> {
  const { metrics } = opts;
  const keepAliveMs = (opts.keepAliveSeconds ?? SIDECAR_DEFAULTS.keepAliveSeconds) * 1000;
  const trust = opts.trustForwardedHost ?? false;
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const selected = opts.select(requestHost(req.headers, trust));
    const ans = answer(
      {
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers: req.headers,
        host: selected.host,
      },
      selected.version,
    );
    metrics.request(ans.route, ans.status);
    // A request body is never read. Closing after the answer (instead of reading and discarding
    // the body) also answers `Expect: 100-continue` without a 100 (RFC 9110 section 10.1.1).
    if (
      req.headers['content-length'] !== undefined
        ? req.headers['content-length'] !== '0'
        : req.headers['transfer-encoding'] !== undefined
    ) {
      res.shouldKeepAlive = false;
    }
    res.writeHead(ans.status, ans.headers as string[]);
    res.end(ans.body);
  };
  const server = createHttpServer(
    {
      maxHeaderSize: opts.maxHeaderSize ?? SIDECAR_DEFAULTS.maxHeaderBytes,
      keepAliveTimeout: keepAliveMs,
      // A request's head must arrive within 30 s of its first byte, the whole request within 60 s.
      headersTimeout: 30_000,
      requestTimeout: 60_000,
      joinDuplicateHeaders: true,
    },
    onRequest,
  );
  // Answer `Expect: 100-continue` directly with the final status (the body is never wanted).
  server.on('checkContinue', onRequest);
  // Bytes that are not HTTP/1.x (a TLS ClientHello, garbage), heads over the limit and timeouts:
  // an immediate answer, counted like any other, then the connection is closed.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    const status = clientErrorStatus(err.code);
    if (status === undefined || !socket.writable) {
      socket.destroy();
      return;
    }
    metrics.request('other', status);
    socket.end(CLIENT_ERROR_ANSWERS[status]);
  });
  // No lockout at a connection count: above the soft limit, idle keep-alive connections make room.
  const softLimit = opts.idleConnectionsSoftLimit ?? SIDECAR_DEFAULTS.idleConnectionsSoftLimit;
  let open = 0;
  server.on('connection', (socket: Socket) => {
    open++;
    socket.once('close', () => open--);
    if (open > softLimit) server.closeIdleConnections();
  });

  const health = createHttpServer({ maxHeaderSize: 16 * 1024 }, (req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path === '/healthz') return void res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok\n');
    if (path === '/readyz') {
      const reason = opts.notReadyReason();
      return void res
        .writeHead(reason === undefined ? 200 : 503, { 'Content-Type': 'text/plain' })
        .end(reason === undefined ? 'ok\n' : `${reason}\n`);
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
    server.close();
    health.close();
    throw err;
  }

  return {
    port: (server.address() as AddressInfo).port,
    metricsPort: (health.address() as AddressInfo).port,
    async close() {
      const closed = Promise.all([
        new Promise<void>((resolve) => server.close(() => resolve())),
        new Promise<void>((resolve) => health.close(() => resolve())),
      ]);
      server.closeIdleConnections();
      health.closeIdleConnections();
      // Every answer is written at once, so connections are only briefly busy: then end them all.
      const force = setTimeout(() => {
        server.closeAllConnections();
        health.closeAllConnections();
      }, 3_000);
      await closed;
      clearTimeout(force);
    },
  };
}

/** The status for a node:http client error (llhttp's codes), undefined to close silently. */
export function clientErrorStatus(code: string | undefined): 400 | 408 | 431 | undefined {
  if (code === 'HPE_HEADER_OVERFLOW') return 431;
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'HPE_HEADERS_TIMEOUT') return 408;
  if (code === 'ECONNRESET' || code === 'EPIPE') return undefined; // the client is gone
  return 400;
}

const CLIENT_ERROR_ANSWERS: Record<400 | 408 | 431, string> = {
  400: clientErrorAnswer(400, 'Bad Request', 'bad request'),
  408: clientErrorAnswer(408, 'Request Timeout', 'request timeout'),
  431: clientErrorAnswer(431, 'Request Header Fields Too Large', 'request header fields too large'),
};

function clientErrorAnswer(status: number, reason: string, text: string): string {
  return (
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\n` +
    `Content-Length: ${text.length + 1}\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${text}\n`
  );
}

function listen(server: Server | HttpServer, port: number, host: string | undefined): Promise<void> {
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
