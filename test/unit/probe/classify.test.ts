import { describe, expect, it } from 'vitest';
import type { Expectation } from '../../../operator/probe/calls.ts';
import {
  type Observation,
  PROBE_CODES,
  classify,
  classifyFailure,
} from '../../../operator/probe/classify.ts';

const rpc1: Expectation = { binding: 'JSONRPC', family: '1', rpcId: 'req-1' };
const rpc03: Expectation = { binding: 'JSONRPC', family: '0.3', rpcId: 'req-1' };
const rest1: Expectation = { binding: 'HTTP+JSON', family: '1' };
const rest03: Expectation = { binding: 'HTTP+JSON', family: '0.3' };
const grpc1: Expectation = { binding: 'GRPC', family: '1' };
const grpc03: Expectation = { binding: 'GRPC', family: '0.3' };

const http = (
  status: number,
  body: unknown,
  extra: Partial<Observation & { kind: 'http' }> = {},
): Observation => ({
  kind: 'http',
  status,
  contentType: 'application/json',
  body: typeof body === 'string' ? body : JSON.stringify(body),
  truncated: false,
  ...extra,
});
const grpc = (
  grpcStatus: number | undefined,
  extra: Partial<Observation & { kind: 'grpc' }> = {},
): Observation => ({
  kind: 'grpc',
  httpStatus: 200,
  contentType: 'application/grpc',
  grpcStatus,
  ...extra,
});
const envelope = (error: unknown, id: unknown = 'req-1') => ({ jsonrpc: '2.0', id, error });
const a2aInfo = (reason: string, domain = 'a2a-protocol.org') => ({
  '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
  reason,
  domain,
});
const restError = (code: number, details: unknown[]) => ({
  error: { code, status: 'NOT_FOUND', message: 'x', details },
});

describe('classify: JSONRPC', () => {
  it('is Reachable only on the same id with -32001, for 1.0 and 0.3', () => {
    for (const e of [rpc1, rpc03]) {
      expect(classify(e, http(200, envelope({ code: -32001, message: 'Task not found' })))).toMatchObject({
        reachable: true,
        reason: 'Reachable',
      });
    }
    // 1.0 servers add ErrorInfo in data; still Reachable.
    const withData = envelope({ code: -32001, message: 'm', data: [a2aInfo('TASK_NOT_FOUND')] });
    expect(classify(rpc1, http(200, withData)).reason).toBe('Reachable');
  });

  it('maps -32601 to BindingMismatch and -32009 to VersionMismatch', () => {
    const notFound = classify(rpc1, http(200, envelope({ code: -32601, message: 'Method not found' })));
    expect(notFound).toMatchObject({ reachable: false, reason: 'BindingMismatch' });
    expect(notFound.message).toMatch(/GetTask.*not A2A 1\.0/);
    expect(classify(rpc03, http(200, envelope({ code: -32601 }))).message).toMatch(
      /tasks\/get.*not A2A 0\.3/,
    );
    expect(classify(rpc1, http(200, envelope({ code: -32009 })))).toMatchObject({
      reason: 'VersionMismatch',
    });
  });

  it('refuses other errors, results, wrong ids, and non-envelopes', () => {
    const cases: [Observation, RegExp][] = [
      [http(200, envelope({ code: -32600 })), /JSON-RPC error -32600/],
      [http(200, envelope({ code: -32603 })), /JSON-RPC error -32603/],
      [http(200, envelope({ code: 'x' })), /JSON-RPC error \?/],
      [http(200, envelope({ code: -32001 }, 'other')), /another id/],
      [http(200, envelope({ code: -32001 }, null)), /another id/],
      [http(200, { jsonrpc: '2.0', id: 'req-1', result: { id: 't' } }), /result for a random task id/],
      [http(200, { jsonrpc: '1.0', id: 'req-1', error: { code: -32001 } }), /not a JSON-RPC 2\.0/],
      [http(200, { id: 'req-1', error: { code: -32001 } }), /not a JSON-RPC 2\.0/],
      [http(200, { jsonrpc: '2.0', id: 'req-1' }), /not a JSON-RPC 2\.0/],
      [http(200, {}), /JSON that is not an A2A answer/],
      [http(200, []), /JSON that is not an A2A answer/],
      [http(200, ''), /an empty body/],
      [http(200, 'hello'), /not JSON/],
      [http(200, '<!DOCTYPE html><p>hi', { contentType: 'text/plain' }), /HTML page/],
      [http(404, '<p>nope</p>', { contentType: 'text/html; charset=utf-8' }), /HTTP 404 with an HTML page/],
      [http(200, JSON.stringify(envelope({ code: -32001 })), { truncated: true }), /64 KiB cap/],
      [http(400, envelope({ code: -32700 }, null)), /another id/],
    ];
    for (const [obs, message] of cases) {
      const v = classify(rpc1, obs);
      expect(v, JSON.stringify(obs)).toMatchObject({ reachable: false, reason: 'BindingMismatch' });
      expect(v.message).toMatch(message);
    }
  });

  it('a JSON-RPC envelope in a 4xx still counts (servers differ on the HTTP status)', () => {
    expect(classify(rpc1, http(400, envelope({ code: -32001 }))).reason).toBe('Reachable');
  });
});

describe('classify: HTTP+JSON', () => {
  it('1.0 is Reachable only on 404 with ErrorInfo TASK_NOT_FOUND in domain a2a-protocol.org', () => {
    expect(classify(rest1, http(404, restError(404, [a2aInfo('TASK_NOT_FOUND')])))).toMatchObject({
      reachable: true,
      reason: 'Reachable',
    });
    const no: Observation[] = [
      http(404, restError(404, [])),
      http(404, restError(404, [a2aInfo('TASK_NOT_FOUND', 'example.com')])),
      http(
        404,
        restError(404, [{ ...a2aInfo('TASK_NOT_FOUND'), '@type': 'type.googleapis.com/google.rpc.Help' }]),
      ),
      http(404, { error: { details: 'TASK_NOT_FOUND' } }),
      http(404, { code: -32001, message: 'Task not found' }), // the 0.3 shape is not 1.0
      http(200, restError(404, [a2aInfo('TASK_NOT_FOUND')])),
      http(404, ''),
      http(404, 'Not Found', { contentType: 'text/plain' }),
      http(404, '<html>404</html>', { contentType: 'text/html' }),
      http(200, {}),
      http(204, ''),
      http(400, { error: 'bad' }),
    ];
    for (const obs of no) {
      expect(classify(rest1, obs), JSON.stringify(obs)).toMatchObject({
        reachable: false,
        reason: 'BindingMismatch',
      });
    }
  });

  it('1.0 VERSION_NOT_SUPPORTED is VersionMismatch', () => {
    const obs = http(400, restError(400, [a2aInfo('VERSION_NOT_SUPPORTED')]));
    expect(classify(rest1, obs)).toMatchObject({ reachable: false, reason: 'VersionMismatch' });
  });

  it('0.3 is Reachable on 404 with the bare error {code: -32001}; -32009 is VersionMismatch', () => {
    expect(classify(rest03, http(404, { code: -32001, message: 'Task not found' })).reason).toBe('Reachable');
    expect(classify(rest03, http(400, { code: -32009, message: 'v' })).reason).toBe('VersionMismatch');
    // A 1.0-only server answering the 0.3 path as tenant "v1" must not pass as 0.3.
    expect(classify(rest03, http(404, restError(404, [a2aInfo('TASK_NOT_FOUND')]))).reason).toBe(
      'BindingMismatch',
    );
    expect(classify(rest03, http(200, { code: -32001 })).reason).toBe('BindingMismatch');
    expect(classify(rest03, http(404, { error: { code: -32001 } })).reason).toBe('BindingMismatch');
  });
});

describe('classify: HTTP statuses common to the HTTP bindings', () => {
  it('maps auth, redirects, rate limits and server errors', () => {
    const cases: [number, string, RegExp][] = [
      [401, 'Unauthenticated', /HTTP 401/],
      [403, 'Unauthenticated', /HTTP 403/],
      [301, 'HTTPError', /301 redirect/],
      [302, 'HTTPError', /302 redirect/],
      [307, 'HTTPError', /not followed/],
      [308, 'HTTPError', /308 redirect/],
      [429, 'HTTPError', /rate limited/],
      [500, 'HTTPError', /HTTP 500/],
      [502, 'HTTPError', /HTTP 502/],
      [503, 'HTTPError', /HTTP 503/],
      [101, 'HTTPError', /HTTP 101/],
    ];
    for (const e of [rpc1, rpc03, rest1, rest03]) {
      for (const [status, reason, message] of cases) {
        // Even an A2A-looking body does not count with these statuses.
        const v = classify(e, http(status, envelope({ code: -32001 })));
        expect(v, `${e.binding} ${status}`).toMatchObject({ reachable: false, reason });
        expect(v.message).toMatch(message);
      }
    }
  });
});

describe('classify: GRPC', () => {
  it('is Reachable on NOT_FOUND, for 1.0 and 0.3, naming the ErrorInfo when present', () => {
    expect(classify(grpc1, grpc(5))).toMatchObject({ reachable: true, reason: 'Reachable' });
    expect(classify(grpc03, grpc(5)).message).toMatch(/a2a\.v1\.A2AService/);
    const withInfo = classify(
      grpc1,
      grpc(5, { errorInfo: { reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' } }),
    );
    expect(withInfo.message).toMatch(/lf\.a2a\.v1\.A2AService.*TASK_NOT_FOUND/);
    expect(classify(grpc1, grpc(5, { contentType: 'application/grpc+proto' })).reason).toBe('Reachable');
  });

  it('maps every other grpc-status', () => {
    const expected: Record<number, string> = {
      0: 'BindingMismatch',
      1: 'HTTPError',
      2: 'HTTPError',
      3: 'BindingMismatch',
      4: 'HTTPError',
      5: 'Reachable',
      6: 'BindingMismatch',
      7: 'Unauthenticated',
      8: 'HTTPError',
      9: 'BindingMismatch',
      10: 'HTTPError',
      11: 'BindingMismatch',
      12: 'BindingMismatch',
      13: 'HTTPError',
      14: 'HTTPError',
      15: 'HTTPError',
      16: 'Unauthenticated',
      17: 'BindingMismatch',
    };
    for (const [status, reason] of Object.entries(expected)) {
      expect(classify(grpc1, grpc(Number(status))).reason, `grpc-status ${status}`).toBe(reason);
    }
    expect(classify(grpc1, grpc(12)).message).toMatch(/UNIMPLEMENTED/);
    expect(classify(grpc1, grpc(14)).message).toBe('gRPC UNAVAILABLE');
  });

  it('FAILED_PRECONDITION with A2A VERSION_NOT_SUPPORTED is VersionMismatch', () => {
    const info = { reason: 'VERSION_NOT_SUPPORTED', domain: 'a2a-protocol.org' };
    expect(classify(grpc1, grpc(9, { errorInfo: info })).reason).toBe('VersionMismatch');
    expect(classify(grpc1, grpc(9, { errorInfo: { ...info, domain: 'other' } })).reason).toBe(
      'BindingMismatch',
    );
  });

  it('refuses answers that are not gRPC', () => {
    const cases: Observation[] = [
      grpc(undefined),
      grpc(5, { contentType: 'text/html' }),
      grpc(5, { contentType: undefined }),
      grpc(5, { httpStatus: 404 }),
      grpc(5, { httpStatus: 502 }),
    ];
    for (const obs of cases) expect(classify(grpc1, obs).reason, JSON.stringify(obs)).toBe('BindingMismatch');
    expect(classify(grpc1, grpc(undefined, { httpStatus: 401, contentType: 'text/plain' })).reason).toBe(
      'Unauthenticated',
    );
  });
});

describe('classifyFailure', () => {
  it('maps policy, DNS, connect, TLS, timeouts and protocol errors', () => {
    const cases: [string, string, RegExp?][] = [
      [PROBE_CODES.blocked, 'Blocked', /address policy/],
      [PROBE_CODES.timeout, 'Timeout', /in time/],
      [PROBE_CODES.connectTimeout, 'Timeout', /connect timed out/],
      [PROBE_CODES.cancelled, 'Timeout', /cancelled/],
      [PROBE_CODES.notH2, 'BindingMismatch', /HTTP\/2/],
      [PROBE_CODES.noAddress, 'DNSFailed'],
      ['ENOTFOUND', 'DNSFailed'],
      ['EAI_AGAIN', 'DNSFailed'],
      ['ESERVFAIL', 'DNSFailed'],
      ['ECONNREFUSED', 'ConnectionFailed'],
      ['ECONNRESET', 'ConnectionFailed'],
      ['EHOSTUNREACH', 'ConnectionFailed'],
      ['ENETUNREACH', 'ConnectionFailed'],
      ['UND_ERR_SOCKET', 'ConnectionFailed'],
      ['ETIMEDOUT', 'Timeout'],
      ['UND_ERR_CONNECT_TIMEOUT', 'Timeout'],
      ['UND_ERR_HEADERS_TIMEOUT', 'Timeout'],
      ['UND_ERR_BODY_TIMEOUT', 'Timeout'],
      ['CERT_HAS_EXPIRED', 'TLSError', /expired/],
      ['CERT_NOT_YET_VALID', 'TLSError', /not yet valid/],
      ['ERR_TLS_CERT_ALTNAME_INVALID', 'TLSError', /name mismatch/],
      ['DEPTH_ZERO_SELF_SIGNED_CERT', 'TLSError', /unknown authority/],
      ['SELF_SIGNED_CERT_IN_CHAIN', 'TLSError', /unknown authority/],
      ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'TLSError', /unknown authority/],
      ['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'TLSError', /unknown authority/],
      ['CERT_REVOKED', 'TLSError', /revoked/],
      ['ERR_SSL_WRONG_VERSION_NUMBER', 'TLSError', /handshake failed/],
      ['EPROTO', 'TLSError', /handshake failed/],
      ['HPE_INVALID_CONSTANT', 'BindingMismatch', /not HTTP\/1\.1/],
      ['ERR_HTTP2_ERROR', 'BindingMismatch', /not valid HTTP\/2/],
      ['UND_ERR_RES_CONTENT_LENGTH_MISMATCH', 'BindingMismatch'],
      ['SOMETHING_ELSE', 'ConnectionFailed', /SOMETHING_ELSE/],
      ['', 'ConnectionFailed', /unknown error/],
    ];
    for (const [code, reason, message] of cases) {
      const v = classifyFailure(code);
      expect(v, code).toMatchObject({ reachable: false, reason });
      if (message) expect(v.message, code).toMatch(message);
    }
  });

  it('appends the detail the probe composed', () => {
    expect(classifyFailure(PROBE_CODES.blocked, 'x.test resolves to 10.0.0.1').message).toBe(
      'refused by the address policy: x.test resolves to 10.0.0.1',
    );
    expect(classify(rpc1, { kind: 'failure', code: 'ENOTFOUND', detail: 'x.test' }).message).toMatch(
      /x\.test/,
    );
  });
});
