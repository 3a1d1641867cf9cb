// The EventRecorder's timing on a manual clock: the dedupe window and the flush timeout are
// proved at their exact boundaries without sleeping. The client is a small in-memory double of
// KubeClient.request (pure logic); writing Events to the real API server is covered by the
// integration tests (controller-writes.test.ts, controller-events.test.ts).
import { describe, expect, it } from 'vitest';
import type { KubeClient } from '../../../operator/kube/client.ts';
import { EventRecorder, type RecordedEvent } from '../../../operator/kube/events.ts';
import { createLogger } from '../../../operator/log.ts';
import { ManualClock, settle } from '../../support/clock.ts';

interface Posted {
  path: string;
  note: string;
  reason: string;
}

/** Records every POST; while `hold` is set, each write waits until `release()` is called. */
function fakeClient() {
  const posted: Posted[] = [];
  let hold = false;
  let waiting: Array<() => void> = [];
  const client = {
    request: async (method: string, path: string, opts: { body?: Record<string, unknown> } = {}) => {
      expect(method).toBe('POST');
      posted.push({ path, note: String(opts.body?.note), reason: String(opts.body?.reason) });
      if (hold) await new Promise<void>((resolve) => waiting.push(resolve));
      return {};
    },
  } as unknown as KubeClient;
  return {
    client,
    posted,
    holdWrites: () => (hold = true),
    release: () => {
      hold = false;
      const w = waiting;
      waiting = [];
      for (const resolve of w) resolve();
    },
  };
}

const regarding = {
  apiVersion: 'agentcard.dev/v1alpha1',
  kind: 'AgentCard',
  name: 'demo',
  namespace: 'ns',
  uid: 'uid-1',
};
const event = (message: string): RecordedEvent => ({
  type: 'Warning',
  reason: 'InvalidSpec',
  action: 'Validate',
  message,
});

function recorder(
  clock: ManualClock,
  client: KubeClient,
  extra: { concurrency?: number; backlog?: number } = {},
) {
  return new EventRecorder({
    client,
    log: createLogger({}, { write: () => {} }),
    reportingController: 'agentcard.dev/operator',
    reportingInstance: 'test',
    dedupeWindowMs: 60_000,
    clock,
    ...extra,
  });
}

describe('EventRecorder on a manual clock', () => {
  it("writes a cluster-scoped object's Events in the default namespace", async () => {
    const api = fakeClient();
    const events = recorder(new ManualClock(), api.client);
    events.record({ ...regarding, kind: 'ClusterAgentPolicy', namespace: '' }, event('invalid policy'));
    await settle();
    expect(api.posted.map((p) => p.path)).toEqual(['/apis/events.k8s.io/v1/namespaces/default/events']);
  });

  it('writes an identical event once within the window and again once the window has passed', async () => {
    const clock = new ManualClock();
    const api = fakeClient();
    const events = recorder(clock, api.client);

    events.record(regarding, event('spec.card.name is required'));
    await settle();
    expect(api.posted.map((p) => p.note)).toEqual(['spec.card.name is required']);
    expect(api.posted[0]!.path).toBe('/apis/events.k8s.io/v1/namespaces/ns/events');

    // Just inside the window (59,999 ms later): dropped.
    await clock.advance(59_999);
    events.record(regarding, event('spec.card.name is required'));
    await settle();
    expect(api.posted).toHaveLength(1);

    // At exactly the window: written again, and the window restarts from here.
    await clock.advance(1);
    events.record(regarding, event('spec.card.name is required'));
    await settle();
    expect(api.posted).toHaveLength(2);
    await clock.advance(30_000);
    events.record(regarding, event('spec.card.name is required'));
    await settle();
    expect(api.posted).toHaveLength(2);
  });

  it('forgets an event once its window is over', async () => {
    const clock = new ManualClock();
    const api = fakeClient();
    const events = recorder(clock, api.client);
    events.record(regarding, event('one'));
    events.record(regarding, event('two'));
    await clock.advance(30_000);
    events.record(regarding, event('three'));
    expect(events.remembered).toBe(3);
    // One and two's window is over: the next event forgets them, three is still remembered.
    await clock.advance(30_000);
    events.record(regarding, event('four'));
    expect(events.remembered).toBe(2);
    events.record(regarding, event('three'));
    await settle();
    expect(api.posted.map((p) => p.note)).toEqual(['one', 'two', 'three', 'four']);
  });

  it('does not dedupe a different message, reason or object', async () => {
    const clock = new ManualClock();
    const api = fakeClient();
    const events = recorder(clock, api.client);

    events.record(regarding, event('spec.card.name is required'));
    events.record(regarding, event('spec.card.version is required'));
    events.record(regarding, { ...event('spec.card.name is required'), reason: 'InvalidName' });
    events.record({ ...regarding, uid: 'uid-2' }, event('spec.card.name is required'));
    await settle();
    expect(api.posted.map((p) => `${p.reason}: ${p.note}`)).toEqual([
      'InvalidSpec: spec.card.name is required',
      'InvalidSpec: spec.card.version is required',
      'InvalidName: spec.card.name is required',
      'InvalidSpec: spec.card.name is required',
    ]);
  });

  it('drops the oldest pending event when the backlog is full, and counts it', async () => {
    const clock = new ManualClock();
    const api = fakeClient();
    const events = recorder(clock, api.client, { concurrency: 1, backlog: 2 });
    api.holdWrites();

    events.record(regarding, event('one')); // in flight (hangs)
    events.record(regarding, event('two')); // pending
    events.record(regarding, event('three')); // pending: the backlog is full
    await settle();
    expect(events.dropped).toBe(0);
    events.record(regarding, event('four')); // 'two' is dropped
    expect(events.dropped).toBe(1);
    await settle();
    expect(api.posted.map((p) => p.note)).toEqual(['one']);

    api.release();
    await settle();
    expect(api.posted.map((p) => p.note)).toEqual(['one', 'three', 'four']);
    expect(events.dropped).toBe(1);
  });

  it('flush resolves at exactly the timeout when a write hangs, not before', async () => {
    const clock = new ManualClock();
    const api = fakeClient();
    const events = recorder(clock, api.client);
    api.holdWrites();
    events.record(regarding, event('hangs'));
    await settle();

    let flushed = false;
    const flushing = events.flush(3_000).then(() => (flushed = true));
    await clock.advance(2_999);
    expect(flushed).toBe(false);
    await clock.advance(1);
    expect(flushed).toBe(true);
    await flushing;
    expect(clock.pending).toBe(0);
    api.release();
  });

  it('flush resolves as soon as the writes finish, and leaves no timer behind', async () => {
    const clock = new ManualClock();
    const api = fakeClient();
    const events = recorder(clock, api.client);
    api.holdWrites();
    events.record(regarding, event('slow'));
    await settle();

    let flushed = false;
    const flushing = events.flush(3_000).then(() => (flushed = true));
    await clock.advance(1_000);
    expect(flushed).toBe(false);
    expect(clock.pending).toBe(1); // the flush deadline
    api.release();
    await settle();
    expect(flushed).toBe(true);
    await flushing;
    expect(clock.pending).toBe(0);
    // Nothing queued: resolves at once, without a timer.
    await events.flush(3_000);
    expect(clock.pending).toBe(0);
  });
});
