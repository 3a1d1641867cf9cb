import { describe, expect, it } from 'vitest';
import { A2AService } from '@a2a-js/sdk/server/grpc';
import { LegacyA2AService } from '@a2a-js/sdk/compat/v0_3/server/grpc';
import { planProbe, protocolFamily } from '../../../operator/probe/calls.ts';
import {
  decodeStatusErrorInfo,
  encodeGetTaskV03,
  encodeGetTaskV1,
  frameGrpcMessage,
} from '../../../operator/probe/grpc-wire.ts';

const ids = { taskId: '0f8fad5b-d9cb-469f-a165-70867728950e', rpcId: 'rpc-7' };

describe('gRPC wire format (checked with the SDK generated decoders)', () => {
  it('encodes lf.a2a.v1.GetTaskRequest with id (field 2) and tenant (field 1)', () => {
    const decode = (b: Uint8Array) => A2AService.getTask.requestDeserialize(Buffer.from(b));
    expect(decode(encodeGetTaskV1(ids.taskId))).toMatchObject({ id: ids.taskId, tenant: '' });
    expect(decode(encodeGetTaskV1('x', 'team-a'))).toMatchObject({ id: 'x', tenant: 'team-a' });
    const long = 'é'.repeat(200); // multi-byte length varint
    expect(decode(encodeGetTaskV1(long, long))).toMatchObject({ id: long, tenant: long });
  });

  it('encodes a2a.v1.GetTaskRequest (0.3) as name tasks/{id}', () => {
    const decoded = LegacyA2AService.getTask.requestDeserialize(Buffer.from(encodeGetTaskV03(ids.taskId)));
    expect(decoded).toMatchObject({ name: `tasks/${ids.taskId}` });
  });

  it('frames a message with a zero flag and a big-endian length', () => {
    const frame = frameGrpcMessage(Uint8Array.from([1, 2, 3]));
    expect(Array.from(frame)).toEqual([0, 0, 0, 0, 3, 1, 2, 3]);
  });

  it('decodes the ErrorInfo in a google.rpc.Status sent by the SDK server', () => {
    // grpc-status-details-bin captured from an @a2a-js/sdk 1.3 server answering GetTask.
    const blob =
      'CAUSNFRhc2sgbm90IGZvdW5kOiA2Y2VhZjM3OC03NDlhLTRmNTUtOWYyYy0zMGFiZjU1MjI5ZGMaTgoodHlwZS5nb29nbGVhcGlzLmNvbS9nb29nbGUucnBjLkVycm9ySW5mbxIiCg5UQVNLX05PVF9GT1VORBIQYTJhLXByb3RvY29sLm9yZw==';
    expect(decodeStatusErrorInfo(Buffer.from(blob, 'base64'))).toEqual({
      reason: 'TASK_NOT_FOUND',
      domain: 'a2a-protocol.org',
    });
  });

  it('returns undefined for a Status without ErrorInfo or malformed bytes', () => {
    expect(decodeStatusErrorInfo(Uint8Array.from([0x08, 0x05]))).toBeUndefined();
    expect(decodeStatusErrorInfo(Uint8Array.from([0x1a, 0x50, 0x01]))).toBeUndefined();
    expect(decodeStatusErrorInfo(Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff]))).toBeUndefined();
    expect(decodeStatusErrorInfo(Uint8Array.from([0x0b]))).toBeUndefined();
  });
});

describe('protocolFamily', () => {
  it('knows 1.x and 0.3 and sends Major.Minor', () => {
    expect(protocolFamily('1.0')).toEqual({ family: '1', header: '1.0' });
    expect(protocolFamily('1.0.0')).toEqual({ family: '1', header: '1.0' });
    expect(protocolFamily('1.2')).toEqual({ family: '1', header: '1.2' });
    expect(protocolFamily('0.3')).toEqual({ family: '0.3' });
    expect(protocolFamily('0.3.0')).toEqual({ family: '0.3' });
    for (const v of ['0.2', '2.0', '', 'latest', '1']) expect(protocolFamily(v), v).toBeUndefined();
  });
});

describe('planProbe', () => {
  it('JSONRPC 1.0: POST GetTask with A2A-Version, tenant in params', () => {
    const plan = planProbe(
      {
        url: 'https://Agent.Example/a2a/?x=1',
        protocolBinding: 'JSONRPC',
        protocolVersion: '1.0',
        tenant: 't1',
      },
      ids,
    );
    expect(plan).toMatchObject({
      transport: 'http',
      endpoint: { scheme: 'https', hostname: 'agent.example', port: 443 },
      method: 'POST',
      path: '/a2a?x=1',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0' },
      expect: { binding: 'JSONRPC', family: '1', rpcId: 'rpc-7' },
    });
    if (plan.transport !== 'http') throw new Error('unreachable');
    expect(JSON.parse(plan.body!)).toEqual({
      jsonrpc: '2.0',
      id: 'rpc-7',
      method: 'GetTask',
      params: { id: ids.taskId, tenant: 't1' },
    });
  });

  it('JSONRPC 0.3: tasks/get without a version header (absent means 0.3), tenant ignored', () => {
    const plan = planProbe(
      { url: 'http://a:8080', protocolBinding: 'JSONRPC', protocolVersion: '0.3', tenant: 't' },
      ids,
    );
    if (plan.transport !== 'http') throw new Error('expected http');
    expect(plan.path).toBe('/');
    expect(plan.endpoint).toEqual({ scheme: 'http', hostname: 'a', port: 8080 });
    expect(plan.headers['a2a-version']).toBeUndefined();
    expect(JSON.parse(plan.body!)).toMatchObject({ method: 'tasks/get', params: { id: ids.taskId } });
  });

  it('HTTP+JSON: GET {url}/tasks/{id}, /{tenant}/tasks/{id}, and /v1/tasks/{id} for 0.3', () => {
    const path = (url: string, protocolVersion: string, tenant?: string) => {
      const plan = planProbe({ url, protocolBinding: 'HTTP+JSON', protocolVersion, tenant }, ids);
      if (plan.transport !== 'http') throw new Error('expected http');
      expect(plan.method).toBe('GET');
      return plan.path;
    };
    expect(path('https://h/api/', '1.0')).toBe(`/api/tasks/${ids.taskId}`);
    expect(path('https://h', '1.0')).toBe(`/tasks/${ids.taskId}`);
    expect(path('https://h/api', '1.0', 'a b/c')).toBe(`/api/a%20b%2Fc/tasks/${ids.taskId}`);
    expect(path('https://h/api', '0.3')).toBe(`/api/v1/tasks/${ids.taskId}`);
    expect(path('https://h/api?k=v', '1.0')).toBe(`/api/tasks/${ids.taskId}?k=v`);
  });

  it('GRPC: service by version, URL forms http, https and bare host:port', () => {
    const plan = (url: string, protocolVersion = '1.0', tenant?: string) =>
      planProbe({ url, protocolBinding: 'GRPC', protocolVersion, tenant }, ids);
    expect(plan('https://g.example')).toMatchObject({
      transport: 'grpc',
      endpoint: { scheme: 'https', hostname: 'g.example', port: 443 },
      path: '/lf.a2a.v1.A2AService/GetTask',
      metadata: { 'a2a-version': '1.0' },
    });
    expect(plan('http://g:50051')).toMatchObject({ endpoint: { scheme: 'http', port: 50051 } });
    expect(plan('g.example:50051')).toMatchObject({
      endpoint: { scheme: 'bare', hostname: 'g.example', port: 50051 },
    });
    expect(plan('[::1]:50051')).toMatchObject({ endpoint: { scheme: 'bare', hostname: '::1', port: 50051 } });
    const v03 = plan('http://g:1', '0.3');
    expect(v03).toMatchObject({ path: '/a2a.v1.A2AService/GetTask', metadata: {} });
    const withTenant = plan('http://g:1', '1.0', 'tt');
    if (withTenant.transport !== 'grpc') throw new Error('expected grpc');
    expect(A2AService.getTask.requestDeserialize(withTenant.frame.subarray(5))).toMatchObject({
      tenant: 'tt',
    });
  });

  it('IPv6 literal URLs lose their brackets for connecting', () => {
    const plan = planProbe(
      { url: 'http://[fd00::1]:8080/rpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      ids,
    );
    expect(plan).toMatchObject({ endpoint: { hostname: 'fd00::1', port: 8080 } });
  });

  it('is Unsupported for custom bindings, unknown versions and unusable URLs', () => {
    const none = (url: string, protocolBinding: string, protocolVersion = '1.0') =>
      planProbe({ url, protocolBinding, protocolVersion }, ids);
    expect(none('https://h', 'WEBSOCKET')).toEqual({
      transport: 'none',
      message: "binding 'WEBSOCKET' is not one the probe can check",
    });
    expect(none('https://h', 'jsonrpc')).toMatchObject({ transport: 'none' });
    expect(none('https://h', 'JSONRPC', '0.2')).toMatchObject({ message: /protocol version '0.2'/ });
    expect(none('ftp://h', 'JSONRPC')).toMatchObject({ message: /scheme 'ftp:'/ });
    expect(none('not a url', 'HTTP+JSON')).toMatchObject({ message: /is not a URL/ });
    expect(none('h:50051', 'JSONRPC')).toMatchObject({ transport: 'none' });
    expect(none('https://u:p@h', 'JSONRPC')).toMatchObject({ message: /user info/ });
  });
});
