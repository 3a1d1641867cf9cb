// The manager of runnables, with an in-memory election: which runnables run where, what a
// failure to start does, and what lost leadership and shutdown cancel.
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../operator/log.ts';
import { Manager, StartupError, type Election, type Runnable } from '../../../operator/runtime/manager.ts';

function logs() {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger({}, { level: 'debug', write: (l: string) => lines.push(JSON.parse(l)) });
  return { lines, log };
}

/** An election won at once (or never), lost when `lose()` is called. */
function election(win = true) {
  let lose: () => void = () => {};
  const calls: string[] = [];
  const e: Election = {
    acquire: async (signal) => {
      calls.push('acquire');
      if (win) return true;
      await new Promise((r) => signal.addEventListener('abort', r, { once: true }));
      return false;
    },
    holdUntilLost: (signal) =>
      new Promise((resolve) => {
        lose = () => resolve({ lost: true });
        signal.addEventListener('abort', () => resolve({ lost: false }), { once: true });
      }),
    release: async () => {
      calls.push('release');
    },
  };
  return { e, calls, lose: () => lose() };
}

/** A runnable that records what happens to it; `fail` makes its start reject. */
function runnable(name: string, mode: Runnable['mode'], events: string[], fail?: Error): Runnable {
  return {
    name,
    mode,
    start: async () => {
      events.push(`${name}:start`);
      if (fail) throw fail;
    },
    stop: async () => {
      events.push(`${name}:stop`);
    },
    cancel: () => events.push(`${name}:cancel`),
  };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('Manager', () => {
  it('a standby runs its always-on runnables (warm caches) and no leader runnable', async () => {
    const events: string[] = [];
    const { e, calls } = election(false);
    const stop = new AbortController();
    const m = new Manager({ log: logs().log, election: e, shutdownBudgetMs: 1_000 }).add(
      runnable('caches', 'always', events),
      runnable('reconciler', 'leader', events),
    );
    const done = m.run(stop.signal);
    await tick();
    expect(events).toEqual(['caches:start']);
    expect(m.isLeading).toBe(false);
    stop.abort();
    expect(await done).toBe(0);
    expect(events).toEqual(['caches:start', 'caches:stop']);
    expect(calls).not.toContain('release');
  });

  it('the leader starts its writers; SIGTERM stops them (last added first), then releases, then stops the caches', async () => {
    const events: string[] = [];
    const { e, calls } = election(true);
    const leading: boolean[] = [];
    const stop = new AbortController();
    const m = new Manager({
      log: logs().log,
      election: {
        ...e,
        release: async () => {
          events.push('release');
          await e.release();
        },
      },
      shutdownBudgetMs: 1_000,
      onLeading: (l) => leading.push(l),
    }).add(
      runnable('caches', 'always', events),
      runnable('events', 'leader', events),
      runnable('reconciler', 'leader', events),
    );
    const done = m.run(stop.signal);
    await tick();
    expect(m.isLeading).toBe(true);
    stop.abort();
    expect(await done).toBe(0);
    expect(events).toEqual([
      'caches:start',
      'events:start',
      'reconciler:start',
      'reconciler:stop',
      'events:stop',
      'release',
      'caches:stop',
    ]);
    expect(leading).toEqual([true, false]);
    expect(calls).toEqual(['acquire', 'release']);
  });

  it('a leader runnable that cannot start: the others stop, the Lease is released, one error line, exit 1', async () => {
    const events: string[] = [];
    const { e, calls } = election(true);
    const { lines, log } = logs();
    const m = new Manager({ log, election: e, shutdownBudgetMs: 1_000 }).add(
      runnable('caches', 'always', events),
      runnable('reconciler', 'leader', events, new StartupError('cannot list pods: HTTP 403')),
      runnable('probes', 'leader', events),
    );
    expect(await m.run(new AbortController().signal)).toBe(1);
    expect(calls).toEqual(['acquire', 'release']);
    expect(events).toContain('caches:stop');
    expect(events).toContain('probes:stop');
    const errors = lines.filter((l) => l.level === 'error');
    expect(errors).toEqual([
      expect.objectContaining({
        msg: 'the operator could not start; exiting',
        runnable: 'reconciler',
        error: 'cannot list pods: HTTP 403',
      }),
    ]);
  });

  it('an always-on runnable that cannot start ends a standby too, which never leads', async () => {
    const events: string[] = [];
    const { e, calls } = election(false);
    const m = new Manager({ log: logs().log, election: e, shutdownBudgetMs: 1_000 }).add(
      runnable('caches', 'always', events, new StartupError('no')),
      runnable('reconciler', 'leader', events),
    );
    expect(await m.run(new AbortController().signal)).toBe(1);
    expect(events).not.toContain('reconciler:start');
    expect(calls).not.toContain('release');
  });

  it('lost leadership cancels the writers without waiting for them, never releases, exit 1', async () => {
    const events: string[] = [];
    const { e, calls, lose } = election(true);
    const hung: Runnable = {
      name: 'reconciler',
      mode: 'leader',
      start: async () => {},
      stop: () => new Promise(() => {}), // would never finish
      cancel: () => events.push('reconciler:cancel'),
    };
    const m = new Manager({ log: logs().log, election: e, shutdownBudgetMs: 60_000 }).add(
      runnable('caches', 'always', events),
      hung,
    );
    const done = m.run(new AbortController().signal);
    await tick();
    lose();
    expect(await done).toBe(1);
    expect(events).toEqual(['caches:start', 'reconciler:cancel', 'caches:cancel']);
    expect(calls).toEqual(['acquire']);
  });

  it('shutdown past its budget cancels the work in flight instead of waiting for it', async () => {
    const events: string[] = [];
    let finish: () => void = () => {};
    const slow: Runnable = {
      name: 'reconciler',
      mode: 'leader',
      start: async () => {},
      stop: () => new Promise<void>((r) => (finish = r)),
      cancel: () => {
        events.push('reconciler:cancel');
        finish(); // a cancelled reconcile ends at once
      },
    };
    const stop = new AbortController();
    const m = new Manager({ log: logs().log, shutdownBudgetMs: 50 }).add(slow);
    const done = m.run(stop.signal);
    await tick();
    const t0 = Date.now();
    stop.abort();
    expect(await done).toBe(0);
    expect(events).toEqual(['reconciler:cancel']);
    expect(Date.now() - t0).toBeLessThan(1_000);
  });
});
