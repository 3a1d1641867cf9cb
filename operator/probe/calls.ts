/**
 * Which A2A question to ask an interface (pure: no I/O). Each binding gets its cheapest
 * side-effect-free call, GetTask for a random task id, that only a real A2A server of that
 * binding and version answers in a recognisable way (A2A 1.0 specification, §§9-11 for the
 * protocol bindings and §5.4 for the error codes).
 */
import { encodeGetTaskV03, encodeGetTaskV1, frameGrpcMessage } from './grpc-wire.ts';
import type { KnownBinding, ProbeTarget } from './types.ts';

/** The protocol families the probe speaks: 1.x (A2A 1.0 calls) and 0.3 (legacy names). */
export type ProtocolFamily = '1' | '0.3';

/** What the classifier needs to know about the question that was asked. */
export interface Expectation {
  binding: KnownBinding;
  family: ProtocolFamily;
  /** The JSON-RPC request id, echoed in a real JSON-RPC response. */
  rpcId?: string;
}

export interface Endpoint {
  /** 'https' and 'http' from the URL; gRPC's bare `host:port` is 'bare' (TLS, falling back to h2c). */
  scheme: 'https' | 'http' | 'bare';
  hostname: string;
  port: number;
}

export type ProbePlan =
  | {
      transport: 'http';
      endpoint: Endpoint;
      method: 'GET' | 'POST';
      /** Path and query to request, starting with '/'. */
      path: string;
      headers: Record<string, string>;
      body?: string;
      expect: Expectation;
    }
  | {
      transport: 'grpc';
      endpoint: Endpoint;
      path: string;
      /** Length-prefixed request message. */
      frame: Buffer;
      metadata: Record<string, string>;
      expect: Expectation;
    }
  | { transport: 'none'; message: string };

/** The `A2A-Version` value for a declared protocolVersion, or undefined when not one we speak. */
export function protocolFamily(version: string): { family: ProtocolFamily; header?: string } | undefined {
  const m = /^(\d+)\.(\d+)(?:\.\d+)?$/.exec(version.trim());
  if (!m) return undefined;
  // Spec: the version header carries Major.Minor; an absent header means 0.3.
  if (m[1] === '1') return { family: '1', header: `${m[1]}.${m[2]}` };
  if (m[1] === '0' && m[2] === '3') return { family: '0.3' };
  return undefined;
}

/** URL.hostname keeps IPv6 literals in brackets; sockets and the address policy want them bare. */
const unbracket = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);

function parseEndpoint(url: string, allowBare: boolean): Endpoint | string {
  if (allowBare && /^[^/:]+:\d+$|^\[[0-9a-fA-F:.]+\]:\d+$/.test(url)) {
    const u = new URL(`http://${url}`);
    return { scheme: 'bare', hostname: unbracket(u.hostname), port: Number(u.port || 80) };
  }
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return `'${url}' is not a URL`;
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') return `URL scheme '${u.protocol}' is not http(s)`;
  if (u.username || u.password) return 'URL carries user info; put credentials in spec.probe.credentials';
  const scheme = u.protocol === 'https:' ? 'https' : 'http';
  return { scheme, hostname: unbracket(u.hostname), port: Number(u.port || (scheme === 'https' ? 443 : 80)) };
}

/**
 * Where an interface of an HTTP binding (JSONRPC, HTTP+JSON) connects, as `scheme://host:port`,
 * or undefined for gRPC and for what the probe cannot ask. Interfaces with the same origin can
 * share a round's connection (scheduler.ts).
 */
export function httpOrigin(target: ProbeTarget): string | undefined {
  if (target.protocolBinding !== 'JSONRPC' && target.protocolBinding !== 'HTTP+JSON') return undefined;
  const endpoint = parseEndpoint(target.url, false);
  return typeof endpoint === 'string' ? undefined : endpointOrigin(endpoint);
}

/** The `scheme://host:port` of an http(s) endpoint, as undici's Client takes it. */
export function endpointOrigin(endpoint: Endpoint): string {
  return `${endpoint.scheme}://${hostForUrl(endpoint.hostname)}:${endpoint.port}`;
}

/** A hostname as a URL writes it: IPv6 literals in brackets. */
export function hostForUrl(hostname: string): string {
  return hostname.includes(':') ? `[${hostname}]` : hostname;
}

/** Path of the URL without a trailing slash, query kept aside ('' for the root). */
function basePath(url: string): { path: string; query: string } {
  const u = new URL(url);
  return { path: u.pathname.replace(/\/+$/, ''), query: u.search };
}

/**
 * Plans the probe of one interface. `taskId` is a fresh random UUID per probe so that no real
 * task is ever read; `rpcId` identifies the JSON-RPC request.
 */
export function planProbe(target: ProbeTarget, ids: { taskId: string; rpcId: string }): ProbePlan {
  const binding = target.protocolBinding;
  if (binding !== 'JSONRPC' && binding !== 'HTTP+JSON' && binding !== 'GRPC') {
    return { transport: 'none', message: `binding '${binding}' is not one the probe can check` };
  }
  const version = protocolFamily(target.protocolVersion);
  if (!version) {
    return { transport: 'none', message: `protocol version '${target.protocolVersion}' is not 1.x or 0.3` };
  }
  const endpoint = parseEndpoint(target.url, binding === 'GRPC');
  if (typeof endpoint === 'string') return { transport: 'none', message: endpoint };
  const versionHeaders: Record<string, string> = version.header ? { 'a2a-version': version.header } : {};
  const tenant = version.family === '1' && target.tenant ? target.tenant : undefined;
  const { taskId, rpcId } = ids;

  if (binding === 'JSONRPC') {
    const { path, query } = basePath(target.url);
    // 1.0 method names are the proto RPC names (GetTask); 0.3 used `tasks/get`.
    const method = version.family === '1' ? 'GetTask' : 'tasks/get';
    const params: Record<string, string> = { id: taskId };
    if (tenant) params.tenant = tenant;
    return {
      transport: 'http',
      endpoint,
      method: 'POST',
      path: (path || '/') + query,
      headers: { 'content-type': 'application/json', accept: 'application/json', ...versionHeaders },
      body: JSON.stringify({ jsonrpc: '2.0', id: rpcId, method, params }),
      expect: { binding, family: version.family, rpcId },
    };
  }
  if (binding === 'HTTP+JSON') {
    const { path, query } = basePath(target.url);
    // 1.0: GET /tasks/{id}, tenant-prefixed as /{tenant}/tasks/{id}; 0.3: GET /v1/tasks/{id}.
    const prefix = version.family === '0.3' ? '/v1' : tenant ? `/${encodeURIComponent(tenant)}` : '';
    return {
      transport: 'http',
      endpoint,
      method: 'GET',
      path: `${path}${prefix}/tasks/${taskId}${query}`,
      headers: { accept: 'application/json', ...versionHeaders },
      expect: { binding, family: version.family },
    };
  }
  // GRPC: 1.0 is service lf.a2a.v1.A2AService; 0.3 was a2a.v1.A2AService with `name: tasks/{id}`.
  const v1 = version.family === '1';
  return {
    transport: 'grpc',
    endpoint,
    path: v1 ? '/lf.a2a.v1.A2AService/GetTask' : '/a2a.v1.A2AService/GetTask',
    frame: frameGrpcMessage(v1 ? encodeGetTaskV1(taskId, tenant) : encodeGetTaskV03(taskId)),
    metadata: versionHeaders,
    expect: { binding, family: version.family },
  };
}
