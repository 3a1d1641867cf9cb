/**
 * Real A2A peers on 127.0.0.1: @a2a-js/sdk servers on all three bindings, at 1.0 and (through the
 * SDK's v0.3 compatibility layer) at 0.3, optionally behind a bearer token. Used by the probe
 * tests and the probe benchmark; nothing here is a stand-in for the SDK.
 */
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import express from 'express';
import * as grpc from '@grpc/grpc-js';
import type { AgentCard } from '@a2a-js/sdk';
import {
  DefaultRequestHandler,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  ServerCallContext,
  type AgentExecutor,
} from '@a2a-js/sdk/server';
import { jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { A2AService, grpcService } from '@a2a-js/sdk/server/grpc';
import { LegacyA2AService, legacyGrpcService } from '@a2a-js/sdk/compat/v0_3/server/grpc';

export interface A2APeers {
  /** JSON-RPC endpoint (1.0, and 0.3 through legacyCompat). */
  jsonrpc: string;
  /** HTTP+JSON base URL (1.0 at `{rest}/tasks/..`, 0.3 at `{rest}/v1/tasks/..`). */
  rest: string;
  /** gRPC `http://127.0.0.1:port` (h2c), serving lf.a2a.v1 and the v0.3 a2a.v1 service. */
  grpc: string;
  /** Same gRPC server as a bare `host:port`. */
  grpcBare: string;
  /** Requests seen by the HTTP server (method, path, authorization header, connection number). */
  seen: { method: string; path: string; auth: string | undefined; connection: number }[];
  /** TCP connections the HTTP server (JSON-RPC and HTTP+JSON) has accepted so far. */
  readonly connections: number;
  /**
   * While on, the HTTP server drops every new connection as soon as it is accepted (a server
   * past its limit), and keeps serving the ones it has.
   */
  refuseNewConnections(on: boolean): void;
  close(): Promise<void>;
}

const executor: AgentExecutor = {
  // The probe only asks GetTask for an unknown id; no message is ever executed.
  execute: async () => {},
  cancelTask: async () => {},
};

function card(base: string, grpcUrl: string): AgentCard {
  const iface = (url: string, protocolBinding: string, protocolVersion: string) => ({
    url,
    protocolBinding,
    protocolVersion,
    tenant: '',
  });
  return {
    name: 'probe-peer',
    description: 'A2A peer for probe tests',
    version: '1.0.0',
    supportedInterfaces: [
      iface(`${base}/jsonrpc`, 'JSONRPC', '1.0'),
      iface(`${base}/jsonrpc`, 'JSONRPC', '0.3'),
      iface(`${base}/rest`, 'HTTP+JSON', '1.0'),
      iface(`${base}/rest`, 'HTTP+JSON', '0.3'),
      iface(grpcUrl, 'GRPC', '1.0'),
      iface(grpcUrl, 'GRPC', '0.3'),
    ],
    provider: undefined,
    capabilities: { streaming: false, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [],
    signatures: [],
  };
}

export interface A2APeerOptions {
  /** Require `Authorization: Bearer <bearer>` on every binding. */
  bearer?: string;
  /** Serve HTTPS and gRPC over TLS with this certificate and key. */
  tls?: { cert: string; key: string };
  /** Host name written in the URLs (the test's resolver maps it to 127.0.0.1). */
  host?: string;
  /** Loopback address to listen on (default 127.0.0.1); also the URLs' host unless `host` is set. */
  listen?: string;
  /** The HTTP server's keepAliveTimeout (Node.js's default, 5 s, when not given). */
  keepAliveTimeoutMs?: number;
  /** Answer every HTTP request with `Connection: close`, closing its connection. */
  closeConnections?: boolean;
}

/** Starts the peers on a loopback address (ephemeral ports). */
export async function startA2APeers(opts: A2APeerOptions = {}): Promise<A2APeers> {
  const seen: A2APeers['seen'] = [];
  const app = express();
  const httpServer = opts.tls ? https.createServer({ ...opts.tls }, app) : http.createServer(app);
  if (opts.keepAliveTimeoutMs !== undefined) httpServer.keepAliveTimeout = opts.keepAliveTimeoutMs;
  const connectionOf = new WeakMap<Socket, number>();
  let connections = 0;
  let refusing = false;
  httpServer.prependListener(opts.tls ? 'secureConnection' : 'connection', (socket: Socket) => {
    if (refusing) socket.destroy();
    else connectionOf.set(socket, ++connections);
  });
  const listen = opts.listen ?? '127.0.0.1';
  await new Promise<void>((resolve) => httpServer.listen(0, listen, resolve));
  const scheme = opts.tls ? 'https' : 'http';
  const host = opts.host ?? listen;
  const base = `${scheme}://${host}:${(httpServer.address() as AddressInfo).port}`;

  const interceptors: grpc.ServerInterceptor[] = [];
  if (opts.bearer) interceptors.push(grpcBearerInterceptor(opts.bearer));
  const grpcServer = new grpc.Server({ interceptors });
  const credentials = opts.tls
    ? grpc.ServerCredentials.createSsl(null, [
        { private_key: Buffer.from(opts.tls.key), cert_chain: Buffer.from(opts.tls.cert) },
      ])
    : grpc.ServerCredentials.createInsecure();
  const grpcPort = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync(`${listen}:0`, credentials, (err, port) => (err ? reject(err) : resolve(port))),
  );
  const grpcUrl = `${scheme}://${host}:${grpcPort}`;

  const handler = new DefaultRequestHandler(card(base, grpcUrl), new InMemoryTaskStore(), executor);
  const userBuilder = UserBuilder.noAuthentication;
  app.use((req, res, next) => {
    seen.push({
      method: req.method,
      path: req.path,
      auth: req.headers.authorization,
      connection: connectionOf.get(req.socket) ?? 0,
    });
    if (opts.closeConnections) res.setHeader('connection', 'close');
    if (opts.bearer && req.headers.authorization !== `Bearer ${opts.bearer}`) {
      res.status(401).set('WWW-Authenticate', 'Bearer').json({ error: 'unauthenticated' });
      return;
    }
    next();
  });
  app.use(
    '/jsonrpc',
    jsonRpcHandler({ requestHandler: handler, userBuilder, legacyCompat: { enabled: true } }),
  );
  app.use('/rest', restHandler({ requestHandler: handler, userBuilder, legacyCompat: { enabled: true } }));

  grpcServer.addService(A2AService, grpcService({ requestHandler: handler, userBuilder }));
  grpcServer.addService(LegacyA2AService, legacyGrpcService({ requestHandler: handler, userBuilder }));

  return {
    jsonrpc: `${base}/jsonrpc`,
    rest: `${base}/rest`,
    grpc: grpcUrl,
    grpcBare: `${host}:${grpcPort}`,
    seen,
    get connections() {
      return connections;
    },
    refuseNewConnections: (on) => (refusing = on),
    close: async () => {
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
      grpcServer.forceShutdown();
    },
  };
}

/** A grpc-js server interceptor that answers UNAUTHENTICATED without the expected bearer token. */
function grpcBearerInterceptor(token: string): grpc.ServerInterceptor {
  return (_methodDescriptor, call) =>
    new grpc.ServerInterceptingCall(call, {
      start: (next) => {
        next({
          onReceiveMetadata: (metadata, mdNext) => {
            if (metadata.get('authorization')[0] !== `Bearer ${token}`) {
              call.sendStatus({
                code: grpc.status.UNAUTHENTICATED,
                details: 'missing bearer token',
                metadata: new grpc.Metadata(),
              });
              return;
            }
            mdNext(metadata);
          },
        });
      },
    });
}

/**
 * A JSON-RPC A2A 1.0 endpoint on an HTTP/2-only TLS server (no HTTP/1.1 fallback), answering
 * through the SDK's JsonRpcTransportHandler: what a probe meets behind an h2-only proxy.
 */
export async function startH2JsonRpcPeer(
  tls: { cert: string; key: string },
  host: string,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = http2.createSecureServer({ ...tls, allowHTTP1: false });
  const handler = new DefaultRequestHandler(
    card(`https://${host}`, `https://${host}`),
    new InMemoryTaskStore(),
    executor,
  );
  const transport = new JsonRpcTransportHandler(handler);
  server.on('stream', (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', async () => {
      const version = headers['a2a-version'];
      const context = new ServerCallContext({
        requestedVersion: typeof version === 'string' ? version : undefined,
      });
      const answer = await transport.handle(Buffer.concat(chunks).toString('utf8'), context);
      stream.respond({ ':status': 200, 'content-type': 'application/json' });
      stream.end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://${host}:${(server.address() as AddressInfo).port}/`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
