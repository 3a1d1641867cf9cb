/**
 * Servers on 127.0.0.1 that answer something, but are not the A2A binding a card may claim.
 * A probe must not call any of them Reachable.
 */
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
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

/** A raw TCP server: `onSocket` writes whatever bytes it likes (no HTTP framing imposed). */
async function listenRaw(onSocket: (socket: net.Socket, state: Impostor) => void): Promise<Impostor> {
  const sockets = new Set<net.Socket>();
  const state: Impostor = { url: '', hits: 0, closedConnections: 0, bytesSent: 0, close: async () => {} };
  const server = net.createServer((socket) => {
    state.hits++;
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => {
      state.closedConnections++;
      sockets.delete(socket);
    });
    onSocket(socket, state);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return state;
}

/**
 * A status line at once, then one header byte every 100 ms, forever (slowloris in reverse): the
 * headers never complete, yet the connection is never idle.
 */
export function trickleHeaders(): Promise<Impostor> {
  return listenRaw((socket, state) => {
    socket.resume();
    socket.write('HTTP/1.1 200 OK\r\n');
    const header = Buffer.from('X-Slow: ' + 'a'.repeat(1_000_000));
    let i = 0;
    const timer = setInterval(() => {
      if (socket.destroyed) return clearInterval(timer);
      socket.write(header.subarray(i % header.length, (i % header.length) + 1));
      state.bytesSent++;
      i++;
    }, 100);
    socket.on('close', () => clearInterval(timer));
  });
}

/**
 * 200 with `Content-Encoding: gzip` and a body that inflates to 1 GiB of JSON-looking spaces
 * (about 1 MiB on the wire): a client that decompresses without a cap runs out of memory.
 */
export function compressedBomb(): Promise<Impostor> {
  // 1,024 gzip members of 1 MiB each (a valid multi-member gzip stream, RFC 1952 section 2.2).
  const member = gzipSync(Buffer.alloc(1024 * 1024, 0x20), { level: 9 });
  const bomb = Buffer.concat(Array.from({ length: 1024 }, () => member));
  return listenHttp((req, res) => {
    req.resume();
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-encoding': 'gzip',
      'content-length': String(bomb.length),
    });
    res.end(bomb);
  });
}

/** An HTTP/0.9 answer: the body alone, no status line and no headers, then close. */
export function http09(): Promise<Impostor> {
  return listenRaw((socket, state) => {
    socket.once('data', () => {
      const body = '{"jsonrpc":"2.0","id":1,"result":{"kind":"message"}}\n';
      socket.end(body);
      state.bytesSent += body.length;
    });
  });
}

/** An HTTPS server whose certificate is self-signed (its own issuer), answering 200 `{}`. */
export async function selfSignedTls(pem: { cert: string; key: string }): Promise<Impostor> {
  const state: Impostor = { url: '', hits: 0, closedConnections: 0, bytesSent: 0, close: async () => {} };
  const server = https.createServer(pem, (req, res) => {
    state.hits++;
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  server.on('connection', (socket) => socket.on('close', () => state.closedConnections++));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return state;
}
