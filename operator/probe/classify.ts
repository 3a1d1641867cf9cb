/**
 * The verdict on one probe, from what was observed (pure: no I/O, no clock). Only an answer
 * that a real A2A server of the declared binding and version gives counts as Reachable (A2A 1.0
 * specification, §§9-11 for the protocol bindings and §5.4 for the error codes); everything else
 * says why not, in words composed here: response bodies and server-supplied messages are never
 * echoed.
 */
import type { Expectation } from './calls.ts';
import type { ErrorInfo } from './grpc-wire.ts';
import type { Verdict } from './types.ts';

export type Observation =
  | {
      kind: 'http';
      status: number;
      contentType?: string;
      /** Up to BODY_LIMIT_BYTES of the body, decoded as UTF-8. */
      body: string;
      /** True when the body was longer than the cap and reading stopped. */
      truncated: boolean;
    }
  | {
      kind: 'grpc';
      /** HTTP/2 :status of the response. */
      httpStatus: number;
      contentType?: string;
      /** grpc-status from the trailers (or a trailers-only response); undefined when absent. */
      grpcStatus?: number;
      /** ErrorInfo from grpc-status-details-bin, when the server sent one. */
      errorInfo?: ErrorInfo;
    }
  | {
      kind: 'failure';
      /** A Node.js / OpenSSL error code, or one of the ERR_PROBE_* codes below. */
      code: string;
      /** A short detail composed by the probe (e.g. the policy's message). */
      detail?: string;
    };

/** Failure codes raised by the probe itself. */
export const PROBE_CODES = {
  blocked: 'ERR_PROBE_BLOCKED',
  timeout: 'ERR_PROBE_TIMEOUT',
  connectTimeout: 'ERR_PROBE_CONNECT_TIMEOUT',
  cancelled: 'ERR_PROBE_CANCELLED',
  notH2: 'ERR_PROBE_NOT_HTTP2',
  noAddress: 'ERR_PROBE_NO_ADDRESS',
} as const;

const A2A_DOMAIN = 'a2a-protocol.org';

// JSON-RPC error codes (A2A 1.0 spec, section on JSON-RPC error codes; JSON-RPC 2.0 section 5.1).
const TASK_NOT_FOUND = -32001;
const VERSION_NOT_SUPPORTED = -32009;
const METHOD_NOT_FOUND = -32601;

// gRPC status codes (grpc/doc/statuscodes.md).
const GRPC_NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
];

const reachable = (message: string): Verdict => ({ reachable: true, reason: 'Reachable', message });
const fail = (reason: Verdict['reason'], message: string): Verdict => ({ reachable: false, reason, message });

function versionLabel(expect: Expectation): string {
  return expect.family === '1' ? 'A2A 1.0' : 'A2A 0.3';
}

export function classify(expect: Expectation, obs: Observation): Verdict {
  if (obs.kind === 'failure') return classifyFailure(obs.code, obs.detail);
  if (obs.kind === 'grpc') return classifyGrpc(expect, obs);
  return classifyHttp(expect, obs);
}

/** Verdicts that do not depend on the binding: auth, redirects, server errors. */
function classifyHttpStatus(status: number): Verdict | undefined {
  if (status === 401 || status === 403) {
    return fail(
      'Unauthenticated',
      `HTTP ${status}: the host answers but the binding is unproven without credentials`,
    );
  }
  if (status >= 300 && status < 400)
    return fail('HTTPError', `HTTP ${status} redirect (redirects are not followed)`);
  if (status >= 500 || status < 200) return fail('HTTPError', `HTTP ${status}`);
  if (status === 429) return fail('HTTPError', 'HTTP 429 (rate limited)');
  return undefined;
}

function parseJson(obs: Extract<Observation, { kind: 'http' }>): unknown {
  if (obs.truncated) return undefined;
  try {
    return JSON.parse(obs.body) as unknown;
  } catch {
    return undefined;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** ErrorInfo entries in a JSON error's details/data list (google.rpc.Status JSON mapping). */
function jsonErrorInfos(list: unknown): ErrorInfo[] {
  if (!Array.isArray(list)) return [];
  return list
    .filter(isObject)
    .filter((d) => typeof d['@type'] === 'string' && d['@type'].endsWith('google.rpc.ErrorInfo'))
    .map((d) => ({ reason: String(d.reason ?? ''), domain: String(d.domain ?? '') }));
}

const hasA2AReason = (infos: ErrorInfo[], reason: string) =>
  infos.some((i) => i.reason === reason && i.domain === A2A_DOMAIN);

function describeBody(obs: Extract<Observation, { kind: 'http' }>): string {
  if (obs.truncated) return 'a body over the 64 KiB cap';
  if (obs.body.trim() === '') return 'an empty body';
  const type = obs.contentType?.split(';', 1)[0]?.trim().toLowerCase();
  if (type === 'text/html' || /^\s*<(!doctype|html)/i.test(obs.body)) return 'an HTML page';
  return parseJson(obs) === undefined ? 'a body that is not JSON' : 'JSON that is not an A2A answer';
}

function classifyHttp(expect: Expectation, obs: Extract<Observation, { kind: 'http' }>): Verdict {
  const byStatus = classifyHttpStatus(obs.status);
  if (byStatus) return byStatus;
  return expect.binding === 'JSONRPC' ? classifyJsonRpc(expect, obs) : classifyRest(expect, obs);
}

/**
 * JSONRPC: a JSON-RPC 2.0 envelope with the request's id and error -32001 (TaskNotFound). The
 * 0.3 method name is `tasks/get`, 1.0's is `GetTask`, so -32601 means "JSON-RPC, not this version
 * of A2A".
 */
function classifyJsonRpc(expect: Expectation, obs: Extract<Observation, { kind: 'http' }>): Verdict {
  const label = versionLabel(expect);
  const json = parseJson(obs);
  if (!isObject(json) || json.jsonrpc !== '2.0' || !('error' in json || 'result' in json)) {
    return fail(
      'BindingMismatch',
      `HTTP ${obs.status} with ${describeBody(obs)}, not a JSON-RPC 2.0 response`,
    );
  }
  if (json.id !== expect.rpcId) {
    return fail('BindingMismatch', 'JSON-RPC response with another id than the request');
  }
  if (!isObject(json.error)) {
    return fail('BindingMismatch', `JSON-RPC result for a random task id: not how ${label} answers GetTask`);
  }
  const code = json.error.code;
  if (code === TASK_NOT_FOUND) return reachable(`JSON-RPC ${label}: TaskNotFound (-32001) as expected`);
  if (code === VERSION_NOT_SUPPORTED) {
    return fail('VersionMismatch', `JSON-RPC A2A server that does not support ${label} (-32009)`);
  }
  if (code === METHOD_NOT_FOUND) {
    const method = expect.family === '1' ? 'GetTask' : 'tasks/get';
    return fail('BindingMismatch', `JSON-RPC server without method ${method} (-32601): not ${label}`);
  }
  return fail(
    'BindingMismatch',
    `JSON-RPC error ${typeof code === 'number' ? code : '?'}, not ${label} TaskNotFound`,
  );
}

/**
 * HTTP+JSON 1.0: 404 whose google.rpc.Status-like body carries ErrorInfo TASK_NOT_FOUND in domain
 * a2a-protocol.org. 0.3 (`/v1/tasks/{id}`): 404 with the bare 0.3 error `{code: -32001, ...}`.
 * A bare 404 or an HTML page proves nothing.
 */
function classifyRest(expect: Expectation, obs: Extract<Observation, { kind: 'http' }>): Verdict {
  const label = versionLabel(expect);
  const json = parseJson(obs);
  const error = isObject(json) && isObject(json.error) ? json.error : undefined;
  const infos = jsonErrorInfos(error?.details);
  if (expect.family === '1') {
    if (obs.status === 404 && hasA2AReason(infos, 'TASK_NOT_FOUND')) {
      return reachable(`HTTP+JSON ${label}: 404 TASK_NOT_FOUND as expected`);
    }
    if (hasA2AReason(infos, 'VERSION_NOT_SUPPORTED')) {
      return fail(
        'VersionMismatch',
        `HTTP+JSON A2A server that does not support ${label} (VERSION_NOT_SUPPORTED)`,
      );
    }
  } else {
    if (obs.status === 404 && isObject(json) && json.code === TASK_NOT_FOUND) {
      return reachable(`HTTP+JSON ${label}: 404 TaskNotFound (-32001) as expected`);
    }
    if (isObject(json) && json.code === VERSION_NOT_SUPPORTED) {
      return fail('VersionMismatch', `HTTP+JSON A2A server that does not support ${label} (-32009)`);
    }
  }
  if (obs.status === 404) {
    return fail('BindingMismatch', `HTTP 404 with ${describeBody(obs)}, not the ${label} TaskNotFound error`);
  }
  return fail(
    'BindingMismatch',
    `HTTP ${obs.status} with ${describeBody(obs)} for a random task id, not ${label}`,
  );
}

/**
 * GRPC: grpc-status 5 (NOT_FOUND) for a random task id; 12 (UNIMPLEMENTED: unknown service or
 * method) means the server speaks gRPC but not this version's A2A service.
 */
function classifyGrpc(expect: Expectation, obs: Extract<Observation, { kind: 'grpc' }>): Verdict {
  const label = versionLabel(expect);
  const service = expect.family === '1' ? 'lf.a2a.v1.A2AService' : 'a2a.v1.A2AService';
  if (obs.httpStatus === 401 || obs.httpStatus === 403) return classifyHttpStatus(obs.httpStatus)!;
  const type = obs.contentType?.split(';', 1)[0]?.trim().toLowerCase() ?? '';
  if (obs.httpStatus !== 200 || !type.startsWith('application/grpc')) {
    return fail(
      'BindingMismatch',
      `HTTP/2 ${obs.httpStatus} (${type || 'no content-type'}), not a gRPC response`,
    );
  }
  const status = obs.grpcStatus;
  if (status === undefined) return fail('BindingMismatch', 'gRPC response without grpc-status');
  const name = GRPC_NAMES[status] ?? String(status);
  const info = obs.errorInfo;
  const a2aReason = info && info.domain === A2A_DOMAIN ? info.reason : undefined;
  switch (status) {
    case 5:
      return reachable(`gRPC ${service}: NOT_FOUND as expected${a2aReason ? ` (${a2aReason})` : ''}`);
    case 12:
      return fail('BindingMismatch', `gRPC server without ${service}/GetTask (UNIMPLEMENTED): not ${label}`);
    case 16:
    case 7:
      return fail(
        'Unauthenticated',
        `gRPC ${name}: the host answers but the binding is unproven without credentials`,
      );
    case 0:
      return fail('BindingMismatch', `gRPC OK for a random task id: not how ${label} answers GetTask`);
    case 9:
      if (a2aReason === 'VERSION_NOT_SUPPORTED') {
        return fail(
          'VersionMismatch',
          `gRPC A2A server that does not support ${label} (VERSION_NOT_SUPPORTED)`,
        );
      }
      return fail('BindingMismatch', `gRPC ${name}, not ${label} NOT_FOUND`);
    case 1:
    case 2:
    case 4:
    case 8:
    case 10:
    case 13:
    case 14:
    case 15:
      return fail('HTTPError', `gRPC ${name}`);
    default:
      return fail('BindingMismatch', `gRPC ${name}, not ${label} NOT_FOUND`);
  }
}

// OpenSSL verification codes grouped by what they mean to the card's owner.
const TLS_EXPIRED = new Set(['CERT_HAS_EXPIRED']);
const TLS_NOT_YET_VALID = new Set(['CERT_NOT_YET_VALID']);
const TLS_NAME = new Set(['ERR_TLS_CERT_ALTNAME_INVALID', 'HOSTNAME_MISMATCH']);
const TLS_AUTHORITY = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
  'CERT_CHAIN_TOO_LONG',
  'INVALID_CA',
  'CERT_SIGNATURE_FAILURE',
]);
const TLS_REVOKED = new Set(['CERT_REVOKED']);

const DNS_CODES = new Set([
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EAI_NODATA',
  'EAI_NONAME',
  'ENODATA',
  'ESERVFAIL',
]);
const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EPIPE',
  'EADDRNOTAVAIL',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'ERR_HTTP2_STREAM_CANCEL',
  'ERR_HTTP2_GOAWAY_SESSION',
  'ERR_STREAM_PREMATURE_CLOSE',
]);

/** Verdicts for probes that got no answer to classify: policy, DNS, TCP, TLS, timeouts. */
export function classifyFailure(code: string, detail?: string): Verdict {
  const suffix = detail ? `: ${detail}` : '';
  if (code === PROBE_CODES.blocked) return fail('Blocked', `refused by the address policy${suffix}`);
  if (code === PROBE_CODES.timeout) return fail('Timeout', `no complete answer in time${suffix}`);
  if (code === PROBE_CODES.connectTimeout) return fail('Timeout', `connect timed out${suffix}`);
  if (code === PROBE_CODES.cancelled) return fail('Timeout', 'probe cancelled');
  if (code === PROBE_CODES.notH2)
    return fail('BindingMismatch', `the server does not speak HTTP/2, so not gRPC${suffix}`);
  if (code === PROBE_CODES.noAddress) return fail('DNSFailed', `the name has no address${suffix}`);
  if (DNS_CODES.has(code)) return fail('DNSFailed', `DNS lookup failed (${code})${suffix}`);
  if (code === 'ETIMEDOUT' || code === 'UND_ERR_CONNECT_TIMEOUT')
    return fail('Timeout', `connect timed out (${code})`);
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return fail('Timeout', `no complete answer in time (${code})`);
  }
  if (TLS_EXPIRED.has(code)) return fail('TLSError', `TLS certificate expired${suffix}`);
  if (TLS_NOT_YET_VALID.has(code)) return fail('TLSError', `TLS certificate not yet valid${suffix}`);
  if (TLS_NAME.has(code)) return fail('TLSError', `TLS certificate name mismatch${suffix}`);
  if (TLS_AUTHORITY.has(code)) return fail('TLSError', `TLS certificate from an unknown authority (${code})`);
  if (TLS_REVOKED.has(code)) return fail('TLSError', 'TLS certificate revoked');
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || code === 'EPROTO') {
    return fail('TLSError', `TLS handshake failed (${code})`);
  }
  if (CONNECT_CODES.has(code)) return fail('ConnectionFailed', `connection failed (${code})`);
  if (code.startsWith('HPE_')) return fail('BindingMismatch', `the answer is not HTTP/1.1 (${code})`);
  if (code.startsWith('ERR_HTTP2_'))
    return fail('BindingMismatch', `the answer is not valid HTTP/2 (${code})`);
  if (code.startsWith('UND_ERR_')) return fail('BindingMismatch', `the answer is not valid HTTP (${code})`);
  return fail('ConnectionFailed', `probe failed (${code || 'unknown error'})`);
}
