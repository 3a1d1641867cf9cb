import { describe, expect, it } from 'vitest';
import { type InterfaceStatus, nextInterfacesStatus } from '../../../operator/probe/status.ts';
import type { ProbeReason, ProbeResult } from '../../../operator/probe/types.ts';

const T0 = new Date('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

function result(url: string, reason: ProbeReason, extra: Partial<ProbeResult> = {}): ProbeResult {
  return {
    url,
    protocolBinding: 'JSONRPC',
    protocolVersion: '1.0',
    reachable: reason === 'Reachable',
    reason,
    message: `${reason} message`,
    latencyMs: 12,
    phases: {},
    ...extra,
  };
}

const A = 'https://a.example/rpc';
const B = 'https://b.example/rpc';

describe('nextInterfacesStatus', () => {
  it('builds the first status: entries, n/m, condition, and a write', () => {
    const out = nextInterfacesStatus({
      results: [result(A, 'Reachable', { tlsNotAfter: '2027-01-01T00:00:00.000Z' }), result(B, 'Reachable')],
      now: T0,
      generation: 3,
    });
    expect(out.writeNeeded).toBe(true);
    expect(out.reachableInterfaces).toBe('2/2');
    expect(out.interfaces[0]).toEqual({
      url: A,
      protocolBinding: 'JSONRPC',
      protocolVersion: '1.0',
      reachable: true,
      reason: 'Reachable',
      message: 'Reachable message',
      latencyMs: 12,
      tlsNotAfter: '2027-01-01T00:00:00.000Z',
      lastProbeTime: T0.toISOString(),
      lastTransitionTime: T0.toISOString(),
    });
    expect(out.interfaces[1]).not.toHaveProperty('tlsNotAfter');
    expect(out.condition).toEqual({
      type: 'InterfacesReachable',
      status: 'True',
      reason: 'AllReachable',
      message: '2/2 reachable',
      observedGeneration: 3,
      lastTransitionTime: T0.toISOString(),
    });
  });

  it('needs no write while verdicts hold, even if latency and messages change', () => {
    const first = nextInterfacesStatus({ results: [result(A, 'Reachable')], now: T0, generation: 1 });
    for (let minute = 1; minute < 10; minute++) {
      const out = nextInterfacesStatus({
        previous: first.interfaces,
        previousCondition: first.condition,
        results: [result(A, 'Reachable', { latencyMs: 100 + minute, message: `m${minute}` })],
        now: at(minute * 60_000),
        generation: 1,
      });
      expect(out.writeNeeded, `minute ${minute}`).toBe(false);
    }
  });

  it('refreshes lastProbeTime with a write once it is 10 minutes old (or as configured)', () => {
    const first = nextInterfacesStatus({ results: [result(A, 'Reachable')], now: T0 });
    const later = (ms: number, refreshAfterMs?: number) =>
      nextInterfacesStatus({
        previous: first.interfaces,
        previousCondition: first.condition,
        results: [result(A, 'Reachable')],
        now: at(ms),
        refreshAfterMs,
      });
    expect(later(599_999).writeNeeded).toBe(false);
    const out = later(600_000);
    expect(out.writeNeeded).toBe(true);
    expect(out.interfaces[0]!.lastProbeTime).toBe(at(600_000).toISOString());
    expect(out.interfaces[0]!.lastTransitionTime).toBe(T0.toISOString());
    expect(later(60_000, 30_000).writeNeeded).toBe(true);
    expect(later(86_400_000, Infinity).writeNeeded).toBe(false);
  });

  it('writes when a verdict or reason changes, and moves lastTransitionTime then', () => {
    const first = nextInterfacesStatus({ results: [result(A, 'Reachable'), result(B, 'Timeout')], now: T0 });
    expect(first.condition).toMatchObject({ status: 'False', reason: 'Timeout' });
    expect(first.condition.message).toBe(`1/2 reachable; ${B} (JSONRPC 1.0): Timeout message`);
    // Reason change while still unreachable.
    const second = nextInterfacesStatus({
      previous: first.interfaces,
      previousCondition: first.condition,
      results: [result(A, 'Reachable'), result(B, 'ConnectionFailed')],
      now: at(60_000),
    });
    expect(second.writeNeeded).toBe(true);
    expect(second.interfaces[1]!.lastTransitionTime).toBe(at(60_000).toISOString());
    expect(second.interfaces[0]!.lastTransitionTime).toBe(T0.toISOString());
    // Condition stayed False: its lastTransitionTime stays.
    expect(second.condition).toMatchObject({ status: 'False', reason: 'ConnectionFailed' });
    expect(second.condition.lastTransitionTime).toBe(T0.toISOString());
    // Recovery: verdict change, condition flips to True with a new transition time.
    const third = nextInterfacesStatus({
      previous: second.interfaces,
      previousCondition: second.condition,
      results: [result(A, 'Reachable'), result(B, 'Reachable')],
      now: at(120_000),
    });
    expect(third.writeNeeded).toBe(true);
    expect(third.reachableInterfaces).toBe('2/2');
    expect(third.condition).toMatchObject({ status: 'True', lastTransitionTime: at(120_000).toISOString() });
  });

  it('writes when the certificate notAfter changes (a renewed certificate)', () => {
    const first = nextInterfacesStatus({
      results: [result(A, 'Reachable', { tlsNotAfter: '2027-01-01T00:00:00.000Z' })],
      now: T0,
    });
    const out = nextInterfacesStatus({
      previous: first.interfaces,
      previousCondition: first.condition,
      results: [result(A, 'Reachable', { tlsNotAfter: '2027-04-01T00:00:00.000Z' })],
      now: at(60_000),
    });
    expect(out.writeNeeded).toBe(true);
  });

  it('writes when interfaces are added, removed or reordered, keeping history by identity', () => {
    const first = nextInterfacesStatus({
      results: [result(A, 'Reachable'), result(B, 'Reachable')],
      now: T0,
    });
    const next = (results: ProbeResult[]) =>
      nextInterfacesStatus({
        previous: first.interfaces,
        previousCondition: first.condition,
        results,
        now: at(1000),
      });
    expect(next([result(A, 'Reachable')]).writeNeeded).toBe(true);
    const swapped = next([result(B, 'Reachable'), result(A, 'Reachable')]);
    expect(swapped.writeNeeded).toBe(true);
    expect(swapped.interfaces.map((i) => i.lastTransitionTime)).toEqual([T0.toISOString(), T0.toISOString()]);
    const versionChanged = next([result(A, 'Reachable', { protocolVersion: '0.3' }), result(B, 'Reachable')]);
    expect(versionChanged.writeNeeded).toBe(true);
    expect(versionChanged.interfaces[0]!.lastTransitionTime).toBe(at(1000).toISOString());
  });

  it('writes when the generation changes even if results are the same', () => {
    const first = nextInterfacesStatus({ results: [result(A, 'Reachable')], now: T0, generation: 1 });
    const out = nextInterfacesStatus({
      previous: first.interfaces,
      previousCondition: first.condition,
      results: [result(A, 'Reachable')],
      now: at(1000),
      generation: 2,
    });
    expect(out.writeNeeded).toBe(true);
    expect(out.condition.observedGeneration).toBe(2);
  });

  it('leaves Unsupported interfaces out of n/m and says so', () => {
    const out = nextInterfacesStatus({
      results: [result(A, 'Reachable'), result(B, 'Unsupported', { protocolBinding: 'WEBSOCKET' })],
      now: T0,
    });
    expect(out.reachableInterfaces).toBe('1/1');
    expect(out.condition).toMatchObject({ status: 'True', reason: 'AllReachable' });
    expect(out.condition.message).toBe('1/1 reachable; 1 with a binding the probe cannot check');
    const none = nextInterfacesStatus({ results: [result(B, 'Unsupported')], now: T0 });
    expect(none.reachableInterfaces).toBe('0/0');
    expect(none.condition).toMatchObject({ status: 'True', reason: 'NothingToProbe' });
  });

  it('a previous status written by someone else with a bad timestamp is refreshed', () => {
    const previous: InterfaceStatus[] = [
      {
        ...nextInterfacesStatus({ results: [result(A, 'Reachable')], now: T0 }).interfaces[0]!,
        lastProbeTime: 'x',
      },
    ];
    const out = nextInterfacesStatus({
      previous,
      previousCondition: nextInterfacesStatus({ results: [result(A, 'Reachable')], now: T0 }).condition,
      results: [result(A, 'Reachable')],
      now: at(1000),
    });
    expect(out.writeNeeded).toBe(true);
  });
});
