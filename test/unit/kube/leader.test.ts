import { describe, expect, it } from 'vitest';
import {
  decide,
  DEFAULT_TIMING,
  EXPIRY_MARGIN_MS,
  LeaderElector,
  microTime,
  nextRecord,
  RELEASE_TIMEOUT_MS,
  releasedRecord,
  sameRecord,
  type LeaseRecord,
  type LeaseStore,
} from '../../../operator/kube/leader.ts';
import { createLogger } from '../../../operator/log.ts';
import { ManualClock, settle } from '../../support/clock.ts';

describe('lease decisions', () => {
  const held = {
    holderIdentity: 'b',
    leaseDurationSeconds: 15,
    renewTime: 't',
    acquireTime: 't',
    leaseTransitions: 2,
  };

  it('acquires a missing or released lease, renews its own', () => {
    expect(decide(undefined, 'a', 0, 0, 15)).toBe('acquire');
    expect(decide({ ...held, holderIdentity: '' }, 'a', 1_000, 1_000, 15)).toBe('acquire');
    expect(decide({ ...held, holderIdentity: 'a' }, 'a', 1_000, 1_000, 15)).toBe('renew');
  });

  it("waits for another holder's lease to expire on its own clock since it first saw the record", () => {
    expect(decide(held, 'a', 10_000, 24_999, 15)).toBe('wait');
    expect(decide(held, 'a', 10_000, 25_000, 15)).toBe('acquire');
    // The record's own duration wins over the default.
    expect(decide({ ...held, leaseDurationSeconds: 1 }, 'a', 10_000, 11_000, 15)).toBe('acquire');
  });

  it('counts transitions and keeps acquireTime on renewal', () => {
    const taken = nextRecord(held, 'a', 'T1', 15);
    expect(taken).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: 'T1',
      renewTime: 'T1',
      leaseTransitions: 3,
    });
    const renewed = nextRecord(taken, 'a', 'T2', 15);
    expect(renewed).toMatchObject({ acquireTime: 'T1', renewTime: 'T2', leaseTransitions: 3 });
    expect(nextRecord(undefined, 'a', 'T0', 15).leaseTransitions).toBe(0);
  });

  it('a released record has no holder and a 1 s duration', () => {
    expect(releasedRecord(held, 'T9')).toMatchObject({
      holderIdentity: '',
      leaseDurationSeconds: 1,
      renewTime: 'T9',
    });
  });

  it('compares records by what any write changes', () => {
    expect(sameRecord(held, { ...held })).toBe(true);
    expect(sameRecord(held, { ...held, renewTime: 'u' })).toBe(false);
    expect(sameRecord(undefined, held)).toBe(false);
  });

  it('formats MicroTime with six fractional digits', () => {
    expect(microTime(new Date('2030-01-02T03:04:05.678Z'))).toBe('2030-01-02T03:04:05.678000Z');
  });
});

/**
 * An in-memory Lease with the API server's optimistic concurrency, and a switch that makes every
 * call hang (as over a connection that stops forwarding without closing) until its signal aborts.
 */
class MemoryLease implements LeaseStore {
  record: LeaseRecord | undefined;
  version = 0;
  hang = false;
  calls = 0;
  aborted = 0;

  private answer<T>(signal: AbortSignal | undefined, value: () => T): Promise<T> {
    this.calls++;
    if (!this.hang) return Promise.resolve().then(value);
    return new Promise((_, reject) => {
      signal?.addEventListener('abort', () => {
        this.aborted++;
        reject(signal.reason as Error);
      });
    });
  }

  read(signal?: AbortSignal) {
    return this.answer(signal, () =>
      this.record ? { record: { ...this.record }, resourceVersion: String(this.version) } : undefined,
    );
  }
  create(record: LeaseRecord, signal?: AbortSignal) {
    return this.answer(signal, () => {
      if (this.record) throw Object.assign(new Error('exists'), { statusCode: 409 });
      this.record = { ...record };
      return { resourceVersion: String(++this.version) };
    });
  }
  write(record: LeaseRecord, resourceVersion: string, signal?: AbortSignal) {
    return this.answer(signal, () => {
      if (resourceVersion !== String(this.version)) {
        throw Object.assign(new Error('conflict'), { statusCode: 409 });
      }
      this.record = { ...record };
      return { resourceVersion: String(++this.version) };
    });
  }
}

/** MemoryLease with a watch: every change is reported to the watchers right after the write. */
class WatchedMemoryLease extends MemoryLease {
  private watchers = new Set<(record: LeaseRecord | undefined, resourceVersion?: string) => void>();

  watch(
    onRecord: (record: LeaseRecord | undefined, resourceVersion?: string) => void,
    signal: AbortSignal,
  ): void {
    this.watchers.add(onRecord);
    signal.addEventListener('abort', () => this.watchers.delete(onRecord), { once: true });
  }
  override async create(record: LeaseRecord, signal?: AbortSignal) {
    const answer = await super.create(record, signal);
    this.report();
    return answer;
  }
  override async write(record: LeaseRecord, resourceVersion: string, signal?: AbortSignal) {
    const answer = await super.write(record, resourceVersion, signal);
    this.report();
    return answer;
  }
  private report(): void {
    for (const w of this.watchers) w(this.record ? { ...this.record } : undefined, String(this.version));
  }
}

describe('LeaderElector on a manual clock', () => {
  const quiet = createLogger({}, { write: () => {} });

  it('a leader whose Lease calls hang stops at renewedAt + renewDeadline, before a standby can take over', async () => {
    const clock = new ManualClock();
    const store = new MemoryLease();
    const leader = new LeaderElector(store, 'a', quiet, DEFAULT_TIMING, clock);
    const standby = new LeaderElector(store, 'b', quiet, DEFAULT_TIMING, clock);
    const stop = new AbortController();
    expect(await leader.acquire(stop.signal)).toBe(true);
    const renewedAt = clock.now();
    let result: { lost: boolean } | undefined;
    void leader.holdUntilLost(stop.signal).then((r) => (result = r));

    // Renewals every retry period keep it; the standby waits.
    const standbyWon = standby.acquire(stop.signal);
    await clock.advance(DEFAULT_TIMING.retryPeriodMs * 3);
    expect(result).toBeUndefined();
    expect(leader.isLeader).toBe(true);
    expect(standby.isLeader).toBe(false);

    // The connection hangs right after a renewal: every call from now on waits forever.
    const lastRenew = clock.now();
    store.hang = true;
    await clock.advance(DEFAULT_TIMING.renewDeadlineMs - 1);
    expect(result).toBeUndefined(); // nothing happened before the deadline
    expect(leader.isLeader).toBe(true);
    await clock.advance(1);
    expect(result).toEqual({ lost: true });
    const lostAt = clock.now();
    expect(leader.isLeader).toBe(false);
    expect(clock.now() - lastRenew).toBe(DEFAULT_TIMING.renewDeadlineMs);
    expect(store.aborted).toBeGreaterThan(0); // the hung call was cut, not left behind
    expect(clock.now()).toBeGreaterThan(renewedAt);

    // The standby counts the lease duration from when it first saw the last record it read, so
    // it takes over only after the old leader stopped.
    store.hang = false;
    let standbyAt: number | undefined;
    void standbyWon.then(() => (standbyAt = clock.now()));
    while (standbyAt === undefined && clock.now() - lastRenew < 60_000) await clock.advance(100);
    expect(standbyAt).toBeGreaterThan(lostAt);
    expect(standby.isLeader).toBe(true);
    stop.abort();
  });

  it('an acquire round that hangs is cut at the renew deadline and never counts', async () => {
    const clock = new ManualClock();
    const store = new MemoryLease();
    store.hang = true;
    const elector = new LeaderElector(store, 'a', quiet, DEFAULT_TIMING, clock);
    let won: boolean | undefined;
    void elector.tryAcquireOrRenew().then((r) => (won = r));
    await clock.advance(DEFAULT_TIMING.renewDeadlineMs - 1);
    expect(won).toBeUndefined();
    await clock.advance(1);
    expect(won).toBe(false);
    expect(store.aborted).toBe(1);
  });

  it('SIGTERM while a renewal hangs ends the hold (not lost) by the renew deadline; release gives up after its timeout', async () => {
    const clock = new ManualClock();
    const store = new MemoryLease();
    const elector = new LeaderElector(store, 'a', quiet, DEFAULT_TIMING, clock);
    const stop = new AbortController();
    expect(await elector.acquire(stop.signal)).toBe(true);
    let held: { lost: boolean } | undefined;
    void elector.holdUntilLost(stop.signal).then((r) => (held = r));
    store.hang = true;
    await clock.advance(DEFAULT_TIMING.retryPeriodMs + 10); // a renewal is hanging now
    // The renewal in flight is not cut by the shutdown (its answer keeps the resourceVersion the
    // release needs), only by the renew deadline; then the hold ends, not lost.
    stop.abort();
    await settle();
    expect(held).toBeUndefined();
    await clock.advance(DEFAULT_TIMING.renewDeadlineMs - DEFAULT_TIMING.retryPeriodMs - 10);
    expect(held).toEqual({ lost: false });
    let released = false;
    void elector.release().then(() => (released = true));
    await clock.advance(RELEASE_TIMEOUT_MS - 1);
    expect(released).toBe(false);
    await clock.advance(1);
    expect(released).toBe(true);
    expect(elector.isLeader).toBe(false);
  });

  it('a renewal that sees another holder loses at once', async () => {
    const clock = new ManualClock();
    const store = new MemoryLease();
    const elector = new LeaderElector(store, 'a', quiet, DEFAULT_TIMING, clock);
    const stop = new AbortController();
    expect(await elector.acquire(stop.signal)).toBe(true);
    let held: { lost: boolean } | undefined;
    void elector.holdUntilLost(stop.signal).then((r) => (held = r));
    store.record = { ...store.record, holderIdentity: 'intruder', renewTime: 'x' };
    store.version++;
    await clock.advance(DEFAULT_TIMING.retryPeriodMs);
    expect(held).toEqual({ lost: true });
    stop.abort();
  });

  it('a watching standby takes over at exactly its last sighting of a renewal + leaseDuration (+ margin)', async () => {
    const clock = new ManualClock();
    const store = new WatchedMemoryLease();
    const leader = new LeaderElector(store, 'a', quiet, DEFAULT_TIMING, clock);
    const standby = new LeaderElector(store, 'b', quiet, DEFAULT_TIMING, clock);
    const stop = new AbortController();
    const leaderStop = new AbortController();
    expect(await leader.acquire(stop.signal)).toBe(true);
    void leader.holdUntilLost(leaderStop.signal);
    let standbyAt: number | undefined;
    void standby.acquire(stop.signal).then(() => (standbyAt = clock.now()));
    // A few renewals; the last one 0.3 s before the leader dies (stops renewing, as on SIGKILL).
    await clock.advance(DEFAULT_TIMING.retryPeriodMs * 3 + 10);
    const lastRenew = clock.now() - 10;
    expect(store.record?.holderIdentity).toBe('a');
    leaderStop.abort();
    const expiry = lastRenew + DEFAULT_TIMING.leaseDurationSeconds * 1000 + EXPIRY_MARGIN_MS;
    await clock.advance(expiry - clock.now() - 1);
    expect(standbyAt).toBeUndefined(); // nothing before the expiry it observed
    await clock.advance(1);
    expect(standbyAt).toBe(expiry);
    expect(standby.isLeader).toBe(true);
    expect(store.record?.holderIdentity).toBe('b');
    stop.abort();
  });

  it('a watching standby takes a released Lease at once, without waiting for its retry period', async () => {
    const clock = new ManualClock();
    const store = new WatchedMemoryLease();
    const leader = new LeaderElector(store, 'a', quiet, DEFAULT_TIMING, clock);
    const standby = new LeaderElector(store, 'b', quiet, DEFAULT_TIMING, clock);
    const stop = new AbortController();
    expect(await leader.acquire(stop.signal)).toBe(true);
    let won = false;
    void standby.acquire(stop.signal).then((r) => (won = r));
    await clock.advance(100); // the standby read the Lease once and waits
    expect(won).toBe(false);
    await leader.release();
    await settle();
    expect(won).toBe(true);
    expect(store.record?.holderIdentity).toBe('b');
    stop.abort();
  });

  it('two watching candidates and a leader that dies: one winner, never before the old leader stopped', async () => {
    const clock = new ManualClock();
    const store = new WatchedMemoryLease();
    const leader = new LeaderElector(store, 'a', quiet, DEFAULT_TIMING, clock);
    const others = [
      new LeaderElector(store, 'b', quiet, DEFAULT_TIMING, clock),
      new LeaderElector(store, 'c', quiet, DEFAULT_TIMING, clock),
    ];
    const stop = new AbortController();
    expect(await leader.acquire(stop.signal)).toBe(true);
    let lostAt: number | undefined;
    void leader.holdUntilLost(stop.signal).then(() => (lostAt = clock.now()));
    // A winner holds the Lease as the manager does: renewing until it loses it.
    for (const o of others)
      void o.acquire(stop.signal).then(async (won) => {
        if (won) await o.holdUntilLost(stop.signal);
      });
    await clock.advance(DEFAULT_TIMING.retryPeriodMs * 2 + 500);
    store.hang = true; // the leader's connection hangs: it can neither renew nor be seen renewing
    let leaders = 0;
    for (let t = 0; t < 30_000; t += 50) {
      await clock.advance(50);
      if (t === 12_000) store.hang = false; // the standbys' calls go through again
      const now = [leader, ...others].filter((e) => e.isLeader).length;
      expect(now).toBeLessThanOrEqual(1);
      leaders = Math.max(leaders, others.filter((e) => e.isLeader).length);
    }
    expect(lostAt).toBeDefined();
    expect(leaders).toBe(1);
    expect(store.record?.leaseTransitions).toBe(1); // one take-over, then renewals
    expect(others.filter((e) => e.isLeader)).toHaveLength(1);
    stop.abort();
  });
});
