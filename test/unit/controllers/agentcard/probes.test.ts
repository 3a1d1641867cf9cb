import { describe, expect, it } from 'vitest';
import type { AgentCardSpec } from '../../../../operator/card/resource.ts';
import { interfacesVerdict } from '../../../../operator/controllers/agentcard/probes.ts';
import type { ControllerStatus } from '../../../../operator/controllers/agentcard/status.ts';
import type { ProbeResult } from '../../../../operator/probe/index.ts';

const iface = { url: 'https://a.example.com/rpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' };
const spec = (probe?: AgentCardSpec['probe']) =>
  ({ card: { supportedInterfaces: [iface] }, ...(probe ? { probe } : {}) }) as unknown as AgentCardSpec;
const result = (reachable: boolean, reason: ProbeResult['reason']): ProbeResult => ({
  ...iface,
  reachable,
  reason,
  message: reachable ? 'answered as JSONRPC 1.0' : 'connection refused',
  latencyMs: 12,
  phases: {},
});
const t0 = new Date('2030-01-01T00:00:00Z');
const t1 = new Date('2030-01-01T00:01:00Z');

/** The live status after writing a verdict (as the API server would hand it back). */
function written(v: ReturnType<typeof interfacesVerdict>, generation: number): ControllerStatus {
  return {
    conditions: [
      {
        type: 'InterfacesReachable',
        ...v.condition,
        observedGeneration: generation,
        lastTransitionTime: '2030-01-01T00:00:00Z',
      },
    ],
    ...(v.interfaces ? { interfaces: v.interfaces } : {}),
    ...(v.reachableInterfaces ? { reachableInterfaces: v.reachableInterfaces } : {}),
  };
}

describe('interfacesVerdict', () => {
  it('is pending before the first round, then reports the round', () => {
    const pending = interfacesVerdict({ spec: spec(), generation: 1, live: {}, results: undefined, now: t0 });
    expect(pending.condition).toMatchObject({ status: 'Unknown', reason: 'ProbesPending' });
    const up = interfacesVerdict({
      spec: spec(),
      generation: 1,
      live: written(pending, 1),
      results: [result(true, 'Reachable')],
      now: t0,
    });
    expect(up).toMatchObject({
      writeNeeded: true,
      reachableInterfaces: '1/1',
      condition: { status: 'True', observedGeneration: 1 },
    });
    expect(up.interfaces).toEqual([
      expect.objectContaining({ url: iface.url, reachable: true, reason: 'Reachable' }),
    ]);
  });

  it('asks for no write while the verdict stays the same, and one when it changes', () => {
    const first = interfacesVerdict({
      spec: spec(),
      generation: 1,
      live: {},
      results: [result(true, 'Reachable')],
      now: t0,
    });
    const live = written(first, 1);
    const same = interfacesVerdict({
      spec: spec(),
      generation: 1,
      live,
      results: [result(true, 'Reachable')],
      now: t1,
    });
    expect(same.writeNeeded).toBe(false);
    expect(same.interfaces).toBe(live.interfaces); // the live entries, lastProbeTime untouched
    const down = interfacesVerdict({
      spec: spec(),
      generation: 1,
      live,
      results: [result(false, 'ConnectionFailed')],
      now: t1,
    });
    expect(down).toMatchObject({
      writeNeeded: true,
      reachableInterfaces: '0/1',
      condition: { status: 'False', reason: 'ConnectionFailed' },
    });
  });

  it('rewrites an unchanged lastProbeTime after the refresh age, or never when told so', () => {
    const first = interfacesVerdict({
      spec: spec(),
      generation: 1,
      live: {},
      results: [result(true, 'Reachable')],
      now: t0,
    });
    const live = written(first, 1);
    const later = new Date(t0.getTime() + 11 * 60_000);
    const round = (refreshAfterMs?: number) =>
      interfacesVerdict({
        spec: spec(),
        generation: 1,
        live,
        results: [result(true, 'Reachable')],
        now: later,
        ...(refreshAfterMs !== undefined ? { refreshAfterMs } : {}),
      });
    expect(round().writeNeeded).toBe(true); // the default: 10 minutes
    expect(round().interfaces?.[0]?.lastProbeTime).toBe(later.toISOString());
    expect(round(Number.POSITIVE_INFINITY).writeNeeded).toBe(false);
    expect(round(60 * 60_000).writeNeeded).toBe(false);
  });

  it('keeps what the status says until the first round after a restart', () => {
    const first = interfacesVerdict({
      spec: spec(),
      generation: 1,
      live: {},
      results: [result(true, 'Reachable')],
      now: t0,
    });
    const kept = interfacesVerdict({
      spec: spec(),
      generation: 2,
      live: written(first, 1),
      results: undefined,
      now: t1,
    });
    expect(kept).toMatchObject({
      writeNeeded: false,
      condition: { status: 'True', observedGeneration: 2 },
      reachableInterfaces: '1/1',
    });
    // Other interfaces than the status describes: pending.
    const other = {
      ...spec(),
      card: { supportedInterfaces: [{ ...iface, url: 'https://b.example.com' }] },
    } as unknown as AgentCardSpec;
    expect(
      interfacesVerdict({ spec: other, generation: 2, live: written(first, 1), results: undefined, now: t1 })
        .condition.reason,
    ).toBe('ProbesPending');
  });

  it('leaves the reported state alone while the spec is not accepted', () => {
    const first = interfacesVerdict({
      spec: spec(),
      generation: 1,
      live: {},
      results: [result(true, 'Reachable')],
      now: t0,
    });
    const live = written(first, 1);
    const v = interfacesVerdict({
      spec: undefined,
      generation: 2,
      live,
      results: [result(false, 'Timeout')],
      now: t1,
    });
    expect(v).toMatchObject({ writeNeeded: false, condition: { status: 'True', observedGeneration: 1 } });
  });

  it('reports ProbesDisabled without interfaces when the spec turns probing off', () => {
    const v = interfacesVerdict({
      spec: spec({ enabled: false } as AgentCardSpec['probe']),
      generation: 3,
      live: {},
      results: undefined,
      now: t0,
    });
    expect(v.condition).toMatchObject({ status: 'Unknown', reason: 'ProbesDisabled', observedGeneration: 3 });
    expect(v.interfaces).toBeUndefined();
  });
});
