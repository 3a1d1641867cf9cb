import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { AgentCardSpec } from '../../../../operator/card/resource.ts';
import {
  noServedChecks,
  servedWiring,
  withDeliveredCondition,
} from '../../../../operator/controllers/agentcard/served.ts';
import type { ControllerStatus } from '../../../../operator/controllers/agentcard/status.ts';
import { createLogger } from '../../../../operator/log.ts';
import { createAddressPolicy } from '../../../../operator/probe/policy.ts';
import { deliveredCondition, pendingDelivered } from '../../../../operator/served/condition.ts';

const spec = (verifyServed: boolean, hosts = ['weather.example.com']): AgentCardSpec =>
  ({
    card: {},
    audiences: [{ name: 'public', hosts, probe: 'Disabled', ...(verifyServed ? { verifyServed } : {}) }],
  }) as unknown as AgentCardSpec;

const now = new Date('2026-01-01T00:00:00Z');
const live = (conditions: ControllerStatus['conditions'] = []): ControllerStatus => ({ conditions });

function wiring() {
  return servedWiring({
    policy: createAddressPolicy(),
    registry: new Registry(),
    log: createLogger({}, { write: () => {} }),
    liveStatus: () => undefined,
    publishedData: () => undefined,
    requeue: () => {},
  });
}

describe('the Delivered condition of a reconcile', () => {
  it('is absent when no audience opts in, pending before the first round', async () => {
    const hooks = wiring();
    expect(hooks.condition('ns/a', spec(false), 1, live())).toBeUndefined();
    expect(hooks.condition('ns/a', spec(true), 2, live())).toEqual(pendingDelivered(2));
    await hooks.stop();
  });

  it('keeps what the live status says until the first round after a restart', async () => {
    const hooks = wiring();
    const said = {
      ...deliveredCondition(
        [
          {
            audience: 'public',
            host: 'weather.example.com',
            comparison: { verdict: 'Rewritten', paths: ['name'], differences: 1, detail: 'differs at name' },
          },
        ],
        [],
        1,
      ),
      lastTransitionTime: '2025-12-31T00:00:00Z',
    };
    expect(hooks.condition('ns/a', spec(true), 3, live([said]))).toMatchObject({
      reason: 'Rewritten',
      message: said.message,
      observedGeneration: 3,
    });
    // A spec that is not accepted leaves it as it is.
    expect(hooks.condition('ns/a', undefined, 3, live([said]))).toMatchObject({ reason: 'Rewritten' });
    await hooks.stop();
  });

  it('names only wildcard hosts as nothing to check', async () => {
    const hooks = wiring();
    expect(hooks.condition('ns/a', spec(true, ['*.example.com']), 1, live())).toMatchObject({
      status: 'Unknown',
      reason: 'NothingToCheck',
    });
    await hooks.stop();
  });

  it('says the check is off on an operator without probes, only for cards that ask', () => {
    const off = noServedChecks();
    expect(off.condition('ns/a', spec(true), 1, live())).toMatchObject({ reason: 'ChecksDisabled' });
    expect(off.condition('ns/a', spec(false), 1, live())).toBeUndefined();
  });
});

describe('withDeliveredCondition', () => {
  const plan = (conditions: ControllerStatus['conditions']) => ({
    status: { observedGeneration: 1, conditions },
    statusChanged: false,
  });

  it('adds the condition, and a second time changes nothing', () => {
    const first = withDeliveredCondition(
      plan([]),
      { status: { observedGeneration: 1 } },
      pendingDelivered(1),
      now,
    );
    expect(first.statusChanged).toBe(true);
    expect(first.status.conditions).toEqual([
      expect.objectContaining({
        type: 'Delivered',
        reason: 'CheckPending',
        lastTransitionTime: '2026-01-01T00:00:00Z',
      }),
    ]);
    const later = new Date(now.getTime() + 60_000);
    const again = withDeliveredCondition(
      plan(first.status.conditions),
      { status: first.status },
      pendingDelivered(1),
      later,
    );
    expect(again.statusChanged).toBe(false);
  });

  it('removes it when no audience asks any more', () => {
    const first = withDeliveredCondition(plan([]), { status: {} }, pendingDelivered(1), now);
    const removed = withDeliveredCondition(
      plan(first.status.conditions),
      { status: first.status },
      undefined,
      now,
    );
    expect(removed.status.conditions).toEqual([]);
    expect(removed.statusChanged).toBe(true);
  });
});
