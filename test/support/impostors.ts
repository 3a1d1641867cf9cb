/**
 * Servers on 127.0.0.1 that answer something, but are not the A2A binding a card may claim.
 * A probe must not call any of them Reachable.
 */
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';

export interface Impostor {
  url: string;
  /** Requests the impostor received. */
  hits: number;
  /** Connections that were closed (by either side). */
  closedConnections: number;
  /** Bytes written to response bodies (for the endless one). */
  bytesSent: number;
  close(): Promise<void>;
}

async function listenHttp(handler: http.RequestListener, hooks: Partial<Impostor> = {}): Promise<Impostor> {
  const state: Impostor = {
    url: '',
    hits: 0,
    closedConnections: 0,
    bytesSent: 0,
    close: async () => {},
    ...hooks,
  };
  const server = http.createServer((req, res) => {
    state.hits++;
    handler(req, res);
  });
  server.on('connection', (socket) => socket.on('close', () => state.closedConnections++));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return state;
}

/** 200 `{}` to every request, whatever the method, path or body. */
export function okToEverything(): Promise<Impostor> {
  return listenHttp((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
}

/** A plain 404 to everything: a JSON 404 with no A2A error info (like many frameworks). */
export function plainNotFound(): Promise<Impostor> {
  return listenHttp((req, res) => {
    req.resume();
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"Not Found","status":404}');
  });
}

/**
 * A JSON-RPC 2.0 server that is not A2A: it knows only `echo` and answers -32601 otherwise; with
 * `mode: 'wrong-id'` it answers -32001 but with another id (a cached or shared response).
 */
export function nonA2AJsonRpc(mode: 'method-not-found' | 'wrong-id' = 'method-not-found'): Promise<Impostor> {
  return listenHttp((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let id: unknown = null;
      try {
        id = (JSON.parse(Buffer.concat(chunks).toString()) as { id?: unknown }).id ?? null;
      } catch {
        // Parse error: id stays null, as JSON-RPC 2.0 section 5 says.
      }
      const body =
        mode === 'wrong-id'
          ? { jsonrpc: '2.0', id: 'some-other-request', error: { code: -32001, message: 'Task not found' } }
          : { jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
  });
}

/** A redirect (307, which keeps method and body) to `target`. */
export function redirectTo(target: string): Promise<Impostor> {
  return listenHttp((req, res) => {
    req.resume();
    res.writeHead(307, { location: target + (req.url ?? '') }).end();
  });
}

/** Accepts TCP connections and never says a word. */
export async function silent(): Promise<Impostor> {
  const sockets = new Set<net.Socket>();
  const state: Impostor = { url: '', hits: 0, closedConnections: 0, bytesSent: 0, close: async () => {} };
  const server = net.createServer((socket) => {
    state.hits++;
    sockets.add(socket);
    socket.on('close', () => {
      state.closedConnections++;
      sockets.delete(socket);
    });
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return state;
}

/** 200 with a body that never ends: 16 KiB chunks as fast as the client reads them. */
export async function endlessBody(): Promise<Impostor> {
  const state = await listenHttp((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(16 * 1024, 0x20);
    const pump = () => {
      while (!res.destroyed && res.write(chunk)) state.bytesSent += chunk.length;
      if (!res.destroyed) state.bytesSent += chunk.length;
    };
    res.on('drain', pump);
    res.on('close', () => res.removeAllListeners('drain'));
    pump();
  });
  return state;
}

/** An h2c server that accepts gRPC calls and never answers them. */
export async function silentGrpc(): Promise<Impostor> {
  const state: Impostor = { url: '', hits: 0, closedConnections: 0, bytesSent: 0, close: async () => {} };
  const server = http2.createServer();
  server.on('stream', (stream) => {
    state.hits++;
    stream.on('close', () => state.closedConnections++);
    stream.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return state;
}

/** A real gRPC server (grpc-js) with another service than A2A: a tiny key-value Lookup. */
export async function otherGrpcService(): Promise<Impostor> {
  const state: Impostor = { url: '', hits: 0, closedConnections: 0, bytesSent: 0, close: async () => {} };
  const server = new grpc.Server();
  const identity = (b: Buffer) => b;
  server.addService(
    {
      lookup: {
        path: '/example.kv.Store/Lookup',
        requestStream: false,
        responseStream: false,
        requestSerialize: identity,
        requestDeserialize: identity,
        responseSerialize: identity,
        responseDeserialize: identity,
      },
    },
    {
      lookup: (_call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
        state.hits++;
        callback({ code: grpc.status.NOT_FOUND, details: 'no such key' });
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  state.url = `http://127.0.0.1:${port}`;
  state.close = async () => server.forceShutdown();
  return state;
}
