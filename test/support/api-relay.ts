/**
 * A loopback HTTPS relay in front of a real kube-apiserver, for fault tests: it forwards every
 * request (watches stream through) until told to misbehave, then answers 429 or 500 itself, or
 * holds requests without ever answering (a partition that drops packets instead of refusing
 * them). It counts what it sees per second, so a test measures the client's request rate during
 * backoff from the wire rather than from log text.
 *
 * It serves the control plane's own serving certificate (valid for 127.0.0.1) and forwards with
 * the admin client certificate, so a kubeconfig that points at it differs from the admin one by
 * the server URL only. A request that carries its own credentials (a ServiceAccount token's
 * Authorization header) is forwarded without that certificate, so the API server authenticates
 * and authorizes it as that ServiceAccount.
 *
 * `hold` delays chosen requests (not answered, not forwarded) until the test lets them through to
 * the API server: a test orders what a client does concurrently (here: which of two requests the
 * API server answers first) while every answer still comes from the API server.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';

export type RelayMode =
  | { kind: 'pass' }
  /**
   * Answer every new request with this status (a Kubernetes Status body, Retry-After when set).
   * With `only: 'writes'`, reads and running watches pass and only writes fail: an API server
   * that pushes back on writes (API Priority and Fairness) while its watch cache keeps streaming,
   * so changes keep reaching the client while nothing it writes is taken.
   */
  | { kind: 'fail'; status: 429 | 500 | 503; retryAfterSeconds?: number; only?: 'writes' }
  /** Accept new requests and never answer them; running streams stop delivering too. */
  | { kind: 'hang' };

export interface RelayRequest {
  at: number;
  method: string;
  path: string;
  /** The query string's parameters (watch, labelSelector, limit...). */
  query: URLSearchParams;
  /** 'pass' when forwarded, else the status the relay answered, or 'hang'. */
  outcome: 'pass' | 'hang' | number;
  /** Forwarded: the API server's status, and whether its answer carried a 410 Gone (a watch sends it as an ERROR event). */
  upstreamStatus?: number;
  gone?: boolean;
}

/** Requests `ApiRelay.hold` keeps back, until `release`. */
export interface HeldRequests {
  /** Resolves with the first request held (the client has sent it and waits for the answer). */
  readonly first: Promise<RelayRequest>;
  /** How many are held now. */
  readonly count: number;
  /** Forwards the held requests, and every later one it would have held, to the API server. */
  release(): void;
}

export class ApiRelay {
  readonly port: number;
  /** Every request seen, in order (method, path, query, what the relay did). */
  readonly requests: RelayRequest[] = [];
  private mode: RelayMode = { kind: 'pass' };
  private readonly server: Server;
  private readonly upstream: URL;
  private readonly tls: { ca: Buffer; cert: Buffer; key: Buffer };
  private readonly held = new Set<ServerResponse>();
  private readonly sockets = new Set<Socket>();
  /** Answers being relayed now (watch streams, mostly), with the client's response. */
  private readonly streams = new Map<IncomingMessage, ServerResponse>();
  /** Streams stalled by 'hang': nothing more reaches the client, the connection stays open. */
  private readonly stalled = new Map<IncomingMessage, ServerResponse>();
  /** Active holds: which requests each keeps back, and where it puts them. */
  private readonly holds = new Set<{
    match: (r: RelayRequest) => boolean;
    keep: (forward: () => void, record: RelayRequest) => void;
  }>();

  private constructor(server: Server, upstream: string, pkiDir: string) {
    this.server = server;
    this.upstream = new URL(upstream);
    this.tls = {
      ca: readFileSync(join(pkiDir, 'ca.crt')),
      cert: readFileSync(join(pkiDir, 'admin.crt')),
      key: readFileSync(join(pkiDir, 'admin.key')),
    };
    this.port = (server.address() as AddressInfo).port;
  }

  /** Starts a relay to `upstream` (https://127.0.0.1:port) with the control plane's pki folder. */
  static async start(upstream: string, pkiDir: string): Promise<ApiRelay> {
    const server = createServer({
      cert: readFileSync(join(pkiDir, 'serving.crt')),
      key: readFileSync(join(pkiDir, 'serving.key')),
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const relay = new ApiRelay(server, upstream, pkiDir);
    server.on('request', (req: IncomingMessage, res: ServerResponse) => relay.handle(req, res));
    server.on('secureConnection', (socket: Socket) => {
      relay.sockets.add(socket);
      socket.once('close', () => relay.sockets.delete(socket));
    });
    return relay;
  }

  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  /**
   * Switches behaviour. 'hang' also stalls the running streams (no byte more reaches the client,
   * the connection stays open, as in a partition that drops packets); 'fail' ends them, so every
   * client comes back through the new mode. Leaving 'hang' resets the held requests and stalled
   * streams (as a partition that heals finds the old connections closed on the server's side).
   */
  setMode(mode: RelayMode): void {
    const previous = this.mode;
    this.mode = mode;
    if (mode.kind === 'hang') {
      for (const [answer, res] of this.streams) {
        answer.unpipe(res);
        answer.pause();
        this.stalled.set(answer, res);
      }
    } else if (mode.kind === 'fail' && mode.only === undefined) {
      for (const [answer, res] of this.streams) {
        answer.destroy();
        res.destroy();
      }
    }
    if (previous.kind === 'hang' && mode.kind !== 'hang') {
      for (const res of this.held) res.socket?.destroy();
      this.held.clear();
      for (const [answer, res] of this.stalled) {
        answer.destroy();
        res.socket?.destroy();
      }
      this.stalled.clear();
    }
  }

  /** Requests per second seen in [from, to) (milliseconds since the epoch), optionally filtered. */
  rate(from: number, to: number, filter: (r: RelayRequest) => boolean = () => true): number {
    const n = this.requests.filter((r) => r.at >= from && r.at < to && filter(r)).length;
    return n / ((to - from) / 1000);
  }

  /**
   * Keeps back every request `match` selects (method, path without query) from now on: the relay
   * reads it and neither answers nor forwards it until `release()`, which forwards them all.
   */
  hold(match: (r: RelayRequest) => boolean): HeldRequests {
    const waiting: Array<() => void> = [];
    let firstHeld: (r: RelayRequest) => void = () => {};
    const first = new Promise<RelayRequest>((resolve) => (firstHeld = resolve));
    const hold = {
      match,
      keep: (forward: () => void, record: RelayRequest) => {
        waiting.push(forward);
        firstHeld(record);
      },
    };
    this.holds.add(hold);
    return {
      first,
      get count() {
        return waiting.length;
      },
      release: () => {
        this.holds.delete(hold);
        for (const forward of waiting.splice(0)) forward();
      },
    };
  }

  /** Writes a copy of `kubeconfig` whose cluster server is this relay. */
  writeKubeconfig(kubeconfig: string, file: string): void {
    const doc = parse(readFileSync(kubeconfig, 'utf8')) as {
      clusters: Array<{ cluster: { server: string } }>;
    };
    for (const c of doc.clusters) c.cluster.server = this.url;
    writeFileSync(file, stringify(doc), { mode: 0o600 });
  }

  async close(): Promise<void> {
    for (const res of this.held) res.socket?.destroy();
    for (const [answer] of this.streams) answer.destroy();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const read = req.method === 'GET' || req.method === 'HEAD';
    const spared = this.mode.kind === 'fail' && this.mode.only === 'writes' && read;
    const mode: RelayMode = spared ? { kind: 'pass' } : this.mode;
    const record: RelayRequest = {
      at: Date.now(),
      method: req.method ?? 'GET',
      path: (req.url ?? '/').split('?', 1)[0]!,
      query: new URL(req.url ?? '/', 'https://relay.invalid').searchParams,
      outcome: mode.kind === 'pass' ? 'pass' : mode.kind === 'hang' ? 'hang' : mode.status,
    };
    this.requests.push(record);
    if (mode.kind === 'hang') {
      // Read the body (so the client believes it was sent) and never answer.
      req.resume();
      this.held.add(res);
      res.once('close', () => this.held.delete(res));
      return;
    }
    if (mode.kind === 'fail') {
      req.resume();
      const reason = mode.status === 429 ? 'TooManyRequests' : 'InternalError';
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (mode.retryAfterSeconds !== undefined) headers['retry-after'] = String(mode.retryAfterSeconds);
      res.writeHead(mode.status, headers).end(
        JSON.stringify({
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          message: `injected by the test relay: ${reason}`,
          reason,
          code: mode.status,
        }),
      );
      return;
    }
    const hold = mode.kind === 'pass' ? [...this.holds].find((h) => h.match(record)) : undefined;
    if (hold) hold.keep(() => this.forward(req, res, record), record);
    else this.forward(req, res, record);
  }

  private forward(req: IncomingMessage, res: ServerResponse, record: RelayRequest): void {
    if (res.destroyed) return; // the client gave up while the request was held
    const headers = { ...req.headers, host: this.upstream.host };
    // A request with its own credentials is forwarded as it came, without the admin certificate
    // (the API server would authenticate the certificate first and never see the token).
    const tls = req.headers.authorization ? { ca: this.tls.ca } : this.tls;
    const upstream = request(
      {
        host: this.upstream.hostname,
        port: this.upstream.port,
        method: req.method,
        path: req.url,
        headers,
        ...tls,
      },
      (answer) => {
        record.upstreamStatus = answer.statusCode;
        if (answer.statusCode === 410) record.gone = true;
        this.streams.set(answer, res);
        answer.once('close', () => {
          this.streams.delete(answer);
          this.stalled.delete(answer);
        });
        answer.on('data', (chunk: Buffer) => {
          if (!record.gone && chunk.includes('"code":410')) record.gone = true;
        });
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.once('error', () => res.destroy());
      },
    );
    upstream.once('error', () => {
      // The API server is down or went away mid-answer: the client sees what it would see.
      if (!res.headersSent)
        res.writeHead(503, { 'content-type': 'text/plain' }).end('upstream unavailable\n');
      else res.destroy();
    });
    res.once('close', () => upstream.destroy());
    req.pipe(upstream);
  }
}
