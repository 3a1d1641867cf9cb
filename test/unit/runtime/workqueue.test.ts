import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import {
  EventLoopSlice,
  WorkQueue,
  type QueueObserver,
  type QueueStats,
} from '../../../operator/runtime/workqueue.ts';
import { RuntimeMetrics } from '../../../operator/runtime/metrics.ts';
import { Backoff, backoffDelay } from '../../../operator/kube/backoff.ts';
import { ManualClock, settle } from '../../support/clock.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A deferred promise the test resolves by hand, to hold a handler inside its run. */
function gate() {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

describe('backoff', () => {
  it('doubles from the base and stops at the cap', () => {
    const opts = { baseMs: 100, maxMs: 1_000 };
    expect([0, 1, 2, 3, 4, 5, 60].map((n) => backoffDelay(n, opts))).toEqual([
      0, 100, 200, 400, 800, 1_000, 1_000,
    ]);
    const b = new Backoff(opts);
    expect([b.next(), b.next(), b.next()]).toEqual([100, 200, 400]);
    b.reset();
    expect(b.next()).toBe(100);
  });
});

describe('WorkQueue', () => {
  it('processes a key queued several times once', async () => {
    const seen: string[] = [];
    const hold = gate();
    const q = new WorkQueue(
      async (key) => {
        seen.push(key);
        if (key === 'ns/block') await hold.promise;
      },
      { concurrency: 1 },
    );
    q.add('ns/block'); // occupies the single worker so the next adds stay queued
    q.add('ns/a');
    q.add('ns/a');
    q.add('ns/a');
    expect(q.depth).toBe(1);
    hold.open();
    await q.idle();
    expect(seen).toEqual(['ns/block', 'ns/a']);
  });

  it('never runs one key twice at once, and runs it again when re-added during a run', async () => {
    let running = 0;
    let maxRunning = 0;
    let runs = 0;
    const first = gate();
    const q = new WorkQueue(
      async () => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        runs++;
        if (runs === 1) await first.promise;
        running--;
      },
      { concurrency: 4 },
    );
    q.add('ns/a');
    await sleep(5);
    q.add('ns/a'); // while processing: must wait, not start a second worker
    q.add('ns/a');
    expect(q.active).toBe(1);
    expect(q.depth).toBe(0);
    first.open();
    await q.idle();
    expect(maxRunning).toBe(1);
    expect(runs).toBe(2);
  });

  it('bounds concurrency across keys', async () => {
    let running = 0;
    let maxRunning = 0;
    const q = new WorkQueue(
      async () => {
        running++;
        maxRunning = Math.max(maxRunning, running);
        await sleep(5);
        running--;
      },
      { concurrency: 3 },
    );
    for (let i = 0; i < 20; i++) q.add(`ns/k${i}`);
    expect(q.active).toBe(3);
    expect(q.depth).toBe(17);
    await q.idle();
    expect(maxRunning).toBe(3);
  });

  it('retries a failing key with growing per-key backoff and forgets it on success (manual clock)', async () => {
    const clock = new ManualClock();
    const t0 = clock.now();
    const times: number[] = [];
    const errors: number[] = [];
    const q = new WorkQueue(
      async () => {
        times.push(clock.now() - t0);
        if (times.length <= 3) throw new Error('boom');
      },
      {
        concurrency: 1,
        backoff: { baseMs: 1_000, maxMs: 60_000 },
        onError: (_k, _e, delay) => errors.push(delay),
        clock,
      },
    );
    q.add('ns/a');
    await settle();
    expect(times).toEqual([0]);
    await clock.advance(999); // nothing before the first delay is up
    expect(times).toEqual([0]);
    await clock.advance(1);
    expect(times).toEqual([0, 1_000]);
    await clock.advance(2_000 + 4_000);
    expect(times).toEqual([0, 1_000, 3_000, 7_000]);
    expect(errors).toEqual([1_000, 2_000, 4_000]);
    expect(q.retries('ns/a')).toBe(0);
    await clock.advance(600_000); // success: no more runs, ever
    expect(times).toHaveLength(4);
    expect(clock.pending).toBe(0);
  });

  it('caps the backoff', async () => {
    const clock = new ManualClock();
    const delays: number[] = [];
    const q = new WorkQueue(
      async () => {
        throw new Error('always');
      },
      { concurrency: 1, backoff: { baseMs: 1, maxMs: 4 }, onError: (_k, _e, d) => delays.push(d), clock },
    );
    q.add('ns/a');
    for (let i = 0; i < 6; i++) await clock.advance(4);
    await q.shutdown();
    expect(delays.slice(0, 6)).toEqual([1, 2, 4, 4, 4, 4]);
    expect(clock.pending).toBe(0); // shutdown cancelled the pending retry
  });

  it('honours requeueAfterMs from a successful run', async () => {
    const clock = new ManualClock();
    let runs = 0;
    const q = new WorkQueue(
      async () => {
        runs++;
        return runs === 1 ? { requeueAfterMs: 15_000 } : undefined;
      },
      { concurrency: 1, clock },
    );
    q.add('ns/a');
    await q.idle();
    expect(runs).toBe(1);
    await clock.advance(14_999);
    expect(runs).toBe(1);
    await clock.advance(1);
    expect(runs).toBe(2);
  });

  it('an immediate run cancels a pending delayed add of the same key', async () => {
    const clock = new ManualClock();
    let runs = 0;
    const q = new WorkQueue(
      async () => {
        runs++;
      },
      { concurrency: 1, clock },
    );
    q.addAfter('ns/a', 30_000);
    q.add('ns/a');
    await q.idle();
    expect(clock.pending).toBe(0);
    await clock.advance(60_000);
    expect(runs).toBe(1);
  });

  it('reports its depth', async () => {
    const depths: number[] = [];
    const hold = gate();
    const q = new WorkQueue(() => hold.promise, { concurrency: 1, onDepth: (d) => depths.push(d) });
    q.add('ns/a');
    q.add('ns/b');
    q.add('ns/c');
    expect(q.depth).toBe(2);
    hold.open();
    await q.idle();
    expect(depths).toEqual([1, 2, 1, 0]);
  });

  it('resyncs every listed key periodically', async () => {
    const clock = new ManualClock();
    const seen = new Map<string, number>();
    const q = new WorkQueue(
      async (key) => {
        seen.set(key, (seen.get(key) ?? 0) + 1);
      },
      { concurrency: 2, clock },
    );
    q.startResync(600_000, () => ['ns/a', 'ns/b']);
    await clock.advance(599_999);
    expect(seen.size).toBe(0);
    await clock.advance(1);
    expect([seen.get('ns/a'), seen.get('ns/b')]).toEqual([1, 1]);
    await clock.advance(2 * 600_000);
    expect([seen.get('ns/a'), seen.get('ns/b')]).toEqual([3, 3]);
    await q.shutdown();
    await clock.advance(600_000);
    expect([seen.get('ns/a'), seen.get('ns/b')]).toEqual([3, 3]);
  });

  it('shutdown drops queued work, waits for work in flight, and takes no more', async () => {
    const done: string[] = [];
    const q = new WorkQueue(
      async (key) => {
        await sleep(20);
        done.push(key);
      },
      { concurrency: 1 },
    );
    q.add('ns/a');
    q.add('ns/b');
    q.addAfter('ns/c', 5);
    const t0 = Date.now();
    await q.shutdown();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(15); // waited for ns/a
    expect(done).toEqual(['ns/a']);
    q.add('ns/d');
    await sleep(40);
    expect(done).toEqual(['ns/a']);
    expect(q.depth).toBe(0);
  });

  describe('priorities', () => {
    /** A queue of one worker whose first key ('ns/block') holds it until `hold.open()`. */
    function held() {
      const seen: string[] = [];
      const hold = gate();
      const q = new WorkQueue(
        async (key) => {
          seen.push(key);
          if (key === 'ns/block') await hold.promise;
        },
        { concurrency: 1 },
      );
      q.add('ns/block', 'low');
      return { q, seen, hold };
    }

    it('starts a high key before every low key queued earlier, each lane in arrival order', async () => {
      const { q, seen, hold } = held();
      for (const k of ['ns/l1', 'ns/l2', 'ns/l3']) q.add(k, 'low');
      q.add('ns/h1');
      q.add('ns/h2', 'high');
      expect(q.depth).toBe(5);
      hold.open();
      await q.idle();
      expect(seen).toEqual(['ns/block', 'ns/h1', 'ns/h2', 'ns/l1', 'ns/l2', 'ns/l3']);
    });

    it('queues a key asked at both priorities once, at the higher', async () => {
      const { q, seen, hold } = held();
      q.add('ns/l1', 'low');
      q.add('ns/up', 'low');
      q.add('ns/up', 'high'); // moves up
      q.add('ns/stays', 'high');
      q.add('ns/stays', 'low'); // never moves down
      expect(q.depth).toBe(3);
      hold.open();
      await q.idle();
      expect(seen).toEqual(['ns/block', 'ns/up', 'ns/stays', 'ns/l1']);
    });

    it('runs a key added during its run again at the highest priority asked', async () => {
      const { q, seen, hold } = held();
      q.add('ns/l1', 'low');
      q.add('ns/block', 'low');
      q.add('ns/block', 'high');
      q.add('ns/block', 'low');
      hold.open();
      await q.idle();
      expect(seen).toEqual(['ns/block', 'ns/block', 'ns/l1']);
    });

    it('a key added low during its run goes behind the low keys already queued', async () => {
      const { q, seen, hold } = held();
      q.add('ns/l1', 'low');
      q.add('ns/block', 'low');
      hold.open();
      await q.idle();
      expect(seen).toEqual(['ns/block', 'ns/l1', 'ns/block']);
    });

    it('resyncs at low priority: a change made during a resync goes ahead of it (manual clock)', async () => {
      const clock = new ManualClock();
      const keys = Array.from({ length: 100 }, (_, i) => `ns/card-${i}`);
      const slow = gate();
      const order: string[] = [];
      const q2 = new WorkQueue(
        async (key) => {
          order.push(key);
          if (order.length === 1) await slow.promise;
        },
        { concurrency: 1, clock },
      );
      q2.startResync(600_000, () => keys);
      await clock.advance(600_000);
      expect(order).toEqual(['ns/card-0']);
      expect(q2.depth).toBe(99);
      q2.add('ns/card-77'); // a spec change of a card the resync has queued
      q2.add('ns/edited'); // and of a card it has not
      slow.open();
      await q2.idle();
      expect(order.slice(0, 3)).toEqual(['ns/card-0', 'ns/card-77', 'ns/edited']);
      expect(order).toHaveLength(101);
      await q2.shutdown();
    });

    it('retries a failed run at the priority it ran with (manual clock)', async () => {
      const clock = new ManualClock();
      const fail = new Set(['ns/bg', 'ns/edit']);
      let hold = gate();
      const seen: string[] = [];
      const q = new WorkQueue(
        async (key) => {
          seen.push(key);
          if (key === 'ns/block') await hold.promise;
          if (fail.delete(key)) throw new Error('once');
        },
        { concurrency: 1, clock, backoff: { baseMs: 1_000, maxMs: 60_000 } },
      );
      q.add('ns/bg', 'low'); // fails: retry in 1 s, its timer set first
      q.add('ns/edit'); // fails: retry in 1 s
      await q.idle();
      hold = gate();
      q.add('ns/block', 'low'); // holds the worker while both retries come due
      await clock.advance(1_000);
      expect(q.depth).toBe(2);
      hold.open();
      await q.idle();
      expect(seen).toEqual(['ns/bg', 'ns/edit', 'ns/block', 'ns/edit', 'ns/bg']);
    });
  });

  it('rejects a non-positive concurrency', () => {
    expect(() => new WorkQueue(async () => {}, { concurrency: 0 })).toThrow(/positive integer/);
  });
});

describe('WorkQueue metrics (manual clock)', () => {
  /** An observer that writes down what the queue reports, times in ms. */
  function recorder() {
    const events: string[] = [];
    let stats: QueueStats | undefined;
    const observer: QueueObserver = {
      bind: (s) => (stats = s),
      added: (p) => events.push(`added ${p}`),
      started: (p, ms) => events.push(`started ${p} after ${ms}`),
      finished: (outcome, ms) => events.push(`finished ${outcome} in ${ms}`),
      retried: () => events.push('retried'),
    };
    return { events, observer, stats: () => stats! };
  }

  it('reports adds per lane once per key, the wait in the lane, the run and its outcome', async () => {
    const clock = new ManualClock();
    const { events, observer, stats } = recorder();
    const holdA = gate();
    const holds = new Map([['a', holdA]]);
    const q = new WorkQueue(
      async (key) => {
        const hold = holds.get(key);
        holds.delete(key);
        if (hold) await hold.promise;
        await clock.sleep(key === 'c' ? 40 : 0);
      },
      { concurrency: 1, clock, observer },
    );
    expect(stats()).toBe(q);
    q.add('a');
    await clock.advance(10);
    q.add('b', 'low');
    q.add('b', 'low'); // already waiting: no add
    await clock.advance(20);
    q.add('c');
    q.add('b'); // moved up to high: no add, and its wait still counts from its first add
    expect(stats().depthOf('high')).toBe(2);
    expect(stats().depthOf('low')).toBe(0);
    await clock.advance(5);
    q.add('a', 'low'); // running: it runs again afterwards, counted once
    q.add('a'); // and at high, still once
    expect(stats().runningMs()).toEqual({ totalMs: 35, longestMs: 35 });
    expect(stats().active).toBe(1);
    await clock.advance(65);
    holdA.open();
    await settle();
    await clock.advance(40); // c's run
    await q.idle();
    expect(events).toEqual([
      'added high',
      'started high after 0',
      'added low',
      'added high',
      'added low',
      'finished success in 100',
      'started high after 70', // c, added at 30
      'finished success in 40',
      'started high after 130', // b, added at 10
      'finished success in 0',
      'started high after 105', // a again, added during its run at 35
      'finished success in 0',
    ]);
    expect(stats().runningMs()).toEqual({ totalMs: 0, longestMs: 0 });
  });

  it('reports errors with their retry, and requeues as requeue or requeue_after', async () => {
    const clock = new ManualClock();
    const { events, observer } = recorder();
    let runs = 0;
    const q = new WorkQueue(
      async () => {
        runs++;
        if (runs === 1) throw new Error('boom');
        if (runs === 2) return { requeueAfterMs: 500 };
        if (runs === 3) return { requeueAfterMs: 0 };
      },
      { concurrency: 1, clock, observer, backoff: { baseMs: 1_000, maxMs: 1_000 } },
    );
    q.add('a', 'low');
    await settle();
    await clock.advance(1_000); // the retry after its backoff
    await clock.advance(500); // the requeue-after
    await q.idle();
    expect(events).toEqual([
      'added low',
      'started low after 0',
      'retried',
      'finished error in 0',
      'added low', // the retry enters its lane when its backoff ends
      'started low after 0',
      'finished requeue_after in 0',
      'added low',
      'started low after 0',
      'added low', // requeue: at once
      'finished requeue in 0',
      'started low after 0',
      'finished success in 0',
    ]);
  });

  it('exports client-go and controller-runtime series by controller and lane, without per-key labels', async () => {
    const clock = new ManualClock();
    const registry = new Registry();
    const runtime = new RuntimeMetrics(registry);
    const hold = gate();
    let failed = false;
    const q = new WorkQueue(
      async (key) => {
        if (key === 'ns/slow') await hold.promise;
        if (key === 'ns/bad' && !failed) {
          failed = true;
          throw new Error('boom');
        }
      },
      { concurrency: 1, clock, observer: runtime.controller('agentcard') },
    );
    runtime.controller('agentcatalog'); // a second controller with no queue yet: counters at 0
    q.add('ns/slow');
    q.add('ns/bad', 'low');
    q.add('ns/x', 'low');
    q.add('ns/y');
    await clock.advance(2_500);
    const text = await registry.metrics();
    const line = (series: string) =>
      text.split('\n').find((l) => l.startsWith(`${series} `)) ?? `${series} is missing`;
    const agentcard = 'controller="agentcard",name="agentcard"';
    expect(line(`workqueue_depth{${agentcard},priority="high"}`)).toBe(
      `workqueue_depth{${agentcard},priority="high"} 1`,
    );
    expect(line(`workqueue_depth{${agentcard},priority="low"}`)).toMatch(/ 2$/);
    expect(line(`workqueue_unfinished_work_seconds{${agentcard}}`)).toMatch(/ 2.5$/);
    expect(line(`workqueue_longest_running_processor_seconds{${agentcard}}`)).toMatch(/ 2.5$/);
    expect(line('controller_runtime_active_workers{controller="agentcard"}')).toMatch(/ 1$/);
    expect(line('controller_runtime_max_concurrent_reconciles{controller="agentcard"}')).toMatch(/ 1$/);
    hold.open();
    await settle();
    await clock.advance(1_000); // ns/bad's retry
    await q.idle();
    const after = await registry.metrics();
    const value = (series: string) => {
      const found = after.split('\n').find((l) => l.startsWith(`${series} `));
      return found === undefined ? undefined : Number(found.slice(series.length + 1));
    };
    expect(value(`workqueue_adds_total{${agentcard},priority="high"}`)).toBe(2);
    expect(value(`workqueue_adds_total{${agentcard},priority="low"}`)).toBe(3); // bad, x, bad's retry
    expect(value(`workqueue_retries_total{${agentcard}}`)).toBe(1);
    expect(value('controller_runtime_reconcile_total{controller="agentcard",result="success"}')).toBe(4);
    expect(value('controller_runtime_reconcile_total{controller="agentcard",result="error"}')).toBe(1);
    expect(value('controller_runtime_reconcile_total{controller="agentcard",result="requeue_after"}')).toBe(
      0,
    );
    expect(value('controller_runtime_reconcile_errors_total{controller="agentcard"}')).toBe(1);
    expect(value('controller_runtime_reconcile_errors_total{controller="agentcatalog"}')).toBe(0);
    // ns/y waited the 2.5 s of ns/slow's run in the high lane: above the 1 s bucket, within 10 s.
    expect(value(`workqueue_queue_duration_seconds_bucket{le="1",${agentcard},priority="high"}`)).toBe(1);
    expect(value(`workqueue_queue_duration_seconds_bucket{le="10",${agentcard},priority="high"}`)).toBe(2);
    expect(value(`workqueue_work_duration_seconds_bucket{le="1",${agentcard}}`)).toBe(4);
    expect(value(`workqueue_work_duration_seconds_count{${agentcard}}`)).toBe(5);
    expect(value('controller_runtime_reconcile_time_seconds_bucket{le="2.5",controller="agentcard"}')).toBe(
      5,
    );
    expect(value('controller_runtime_reconcile_time_seconds_bucket{le="2",controller="agentcard"}')).toBe(4);
    expect(value(`workqueue_depth{${agentcard},priority="low"}`)).toBe(0);
    // No label names a key.
    expect(after).not.toMatch(/ns\/(slow|bad|x|y)/);
  });
});

/** Busy-waits `ms` of CPU, as a reconcile that plans from caches and writes nothing does. */
function burn(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

describe('the event loop behind a backlog', () => {
  it('a slice is due once it has lasted its budget, and starts again after a turn of the loop', async () => {
    let now = 0;
    const slice = new EventLoopSlice(10, () => now);
    expect(slice.due()).toBe(false); // starts the slice
    now = 9;
    expect(slice.due()).toBe(false);
    now = 10;
    expect(slice.due()).toBe(true);
    await new Promise((r) => setImmediate(r)); // the loop took a turn
    now = 30;
    expect(slice.due()).toBe(false); // a new slice from here
    now = 39;
    expect(slice.due()).toBe(false);
    now = 40;
    expect(slice.due()).toBe(true);
  });

  it('lets timers and I/O run while a backlog of runs that never wait on I/O is worked off', async () => {
    // 300 runs of 1 ms that resolve in microtasks only: without turns of the event loop they run
    // as one chain, and the timer below (a write's response, a Lease renewal) fires after all.
    let runs = 0;
    const q = new WorkQueue(
      async () => {
        burn(1);
        runs++;
      },
      { concurrency: 4 },
    );
    let firedAfter: number | undefined;
    let depthThen: number | undefined;
    setTimeout(() => {
      firedAfter = runs;
      depthThen = q.depth;
    }, 0);
    for (let i = 0; i < 300; i++) q.add(`ns/k${i}`, 'low');
    await q.idle();
    expect(runs).toBe(300);
    expect(firedAfter).toBeDefined();
    expect(depthThen).toBeGreaterThan(0); // it fired while keys were still queued
    expect(firedAfter!).toBeLessThan(150);
  });

  it('starts a run synchronously when nothing has kept the event loop', () => {
    const seen: string[] = [];
    const q = new WorkQueue(
      async (key) => {
        seen.push(key);
      },
      { concurrency: 1 },
    );
    q.add('ns/a');
    expect(seen).toEqual(['ns/a']);
  });
});
