// The start-up rule every controller shares (runtime/startup.ts): which objects a new leader
// queues first, and that they are queued before the rest, each lane in the order given.
import { describe, expect, it } from 'vitest';
import { digestOf } from '../../../operator/runtime/configmaps.ts';
import { WorkQueue, type Priority } from '../../../operator/runtime/workqueue.ts';
import { queueAtStart, startupPriority, type StartupView } from '../../../operator/runtime/startup.ts';

const served = '{"name":"Recipe Agent"}';
const view = (over: Partial<StartupView> = {}): StartupView => ({
  generation: 3,
  observedGeneration: 3,
  deleting: false,
  publishedDigest: digestOf(served),
  served,
  ...over,
});

describe('startupPriority', () => {
  it('re-plans an object whose spec and published document are as last reconciled in the background', () => {
    expect(startupPriority(view())).toBe('low');
  });

  it('puts an object whose generation is not observed first (spec changed, or never reconciled)', () => {
    expect(startupPriority(view({ generation: 4 }))).toBe('high');
    expect(startupPriority(view({ observedGeneration: undefined, publishedDigest: undefined }))).toBe('high');
    // A generation the API server did not set counts as 0, as an empty status does not.
    expect(startupPriority(view({ generation: undefined, observedGeneration: 0 }))).toBe('low');
  });

  it('puts an object whose published document is gone, or holds other bytes, first', () => {
    expect(startupPriority(view({ served: undefined }))).toBe('high');
    expect(startupPriority(view({ served: '{"name":"Edited by hand"}' }))).toBe('high');
  });

  it('leaves an object never published, one being deleted, or one whose ConfigMap is not cached in the background', () => {
    expect(startupPriority(view({ publishedDigest: undefined, served: undefined }))).toBe('low');
    expect(startupPriority(view({ deleting: true, generation: 4, served: undefined }))).toBe('low');
    expect(startupPriority(view({ served: 'unknown' }))).toBe('low');
    // ... but a spec change still goes first when the ConfigMap cannot be seen.
    expect(startupPriority(view({ served: 'unknown', generation: 4 }))).toBe('high');
  });
});

describe('queueAtStart', () => {
  it('queues the objects that need a write first, then the rest, each lane in the order given', async () => {
    const order: string[] = [];
    const queue = new WorkQueue(
      async (key) => {
        order.push(key);
      },
      { concurrency: 1 },
    );
    const added: Array<[string, Priority]> = [];
    const recording = { add: (key: string, p: Priority) => (added.push([key, p]), queue.add(key, p)) };
    // The first key starts at once (the queue is idle), so it is one that needs a write.
    const counts = queueAtStart(recording, [
      { key: 'a', view: view() },
      { key: 'b', view: view({ generation: 4 }) },
      { key: 'c', view: view() },
      { key: 'd', view: view({ served: undefined }) },
    ]);
    expect(counts).toEqual({ high: 2, low: 2 });
    expect(added).toEqual([
      ['b', 'high'],
      ['d', 'high'],
      ['a', 'low'],
      ['c', 'low'],
    ]);
    await queue.idle();
    expect(order).toEqual(['b', 'd', 'a', 'c']);
  });
});
