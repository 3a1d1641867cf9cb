/**
 * Leader election on a coordination.k8s.io/v1 Lease, with the client-go rules:
 * - a candidate takes the Lease when it does not exist, when its holderIdentity is empty
 *   (released), or when the record has not changed for leaseDurationSeconds as measured on the
 *   candidate's own clock since it first saw that record (no trust in other clocks);
 * - the leader renews every retryPeriod; if it cannot renew within renewDeadline (or sees another
 *   holder) it has lost the Lease and must stop working at once;
 * - on shutdown the leader releases the Lease (holderIdentity "", leaseDurationSeconds 1) so a
 *   standby takes over without waiting for expiry.
 * Writes use the Lease's resourceVersion, so two candidates can never both win the same round.
 *
 * One departure in timing, none in safety: client-go's standby learns of a renewal only by reading
 * the Lease every retryPeriod, so it sees a renewal up to a retry period late and tries again up to
 * a retry period after the expiry, and takes over anywhere from leaseDuration - retryPeriod to
 * leaseDuration + 2 retryPeriods (plus jitter) after the leader died. A standby here also WATCHES
 * the Lease (LeaseStore.watch): it notes, on its own clock, when it saw each change of the record,
 * and runs its round with a timer at exactly that moment + leaseDuration (+ EXPIRY_MARGIN_MS), or
 * at once when it sees the Lease released or deleted. The retry-period read stays as the floor
 * (a watch that delivers nothing leaves the client-go behaviour). Why this is as safe as
 * client-go: a watch event, like a read, arrives after the write it reports, and the leader counts
 * its renew deadline from before that write (renewedAt is the round's start), so a leader that
 * cannot renew stops at renewedAt + renewDeadline (10 s), earlier than any standby's
 * observed + leaseDuration (15 s); the other process's renewTime is still never trusted, and the
 * take-over is still one read and one write with the read's resourceVersion. An event that arrives
 * late (a lagging or resumed watch) only moves the observation later, never earlier.
 */
import { boundedSignal, systemClock, type Clock } from './clock.ts';
import { describeApiError, isConflict } from './errors.ts';
import type { Logger } from '../log.ts';

export interface LeaseRecord {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export type Decision = 'acquire' | 'renew' | 'wait';

/**
 * What a candidate may do with the Lease it just read.
 * `observedAt`: when (local clock, ms) this candidate first saw the current record.
 */
export function decide(
  record: LeaseRecord | undefined,
  identity: string,
  observedAt: number,
  now: number,
  defaultDurationSeconds: number,
): Decision {
  if (!record) return 'acquire';
  const holder = record.holderIdentity ?? '';
  if (holder === identity) return 'renew';
  if (holder === '') return 'acquire';
  const duration = (record.leaseDurationSeconds ?? defaultDurationSeconds) * 1000;
  return observedAt + duration <= now ? 'acquire' : 'wait';
}

/** The record this candidate writes to acquire or renew. */
export function nextRecord(
  record: LeaseRecord | undefined,
  identity: string,
  now: string,
  durationSeconds: number,
): LeaseRecord {
  const sameHolder = record?.holderIdentity === identity;
  return {
    holderIdentity: identity,
    leaseDurationSeconds: durationSeconds,
    acquireTime: sameHolder && record?.acquireTime ? record.acquireTime : now,
    renewTime: now,
    leaseTransitions: sameHolder ? (record?.leaseTransitions ?? 0) : (record?.leaseTransitions ?? -1) + 1,
  };
}

/** The record a leader writes when it steps down. */
export function releasedRecord(record: LeaseRecord, now: string): LeaseRecord {
  return { ...record, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now };
}

/** Whether two reads show the same record (any write by anyone changes renewTime or holder). */
export function sameRecord(a: LeaseRecord | undefined, b: LeaseRecord | undefined): boolean {
  return (
    a?.holderIdentity === b?.holderIdentity &&
    a?.renewTime === b?.renewTime &&
    a?.acquireTime === b?.acquireTime &&
    a?.leaseTransitions === b?.leaseTransitions
  );
}

/**
 * The Lease I/O the elector needs; `write` must fail (throw) when `resourceVersion` is stale.
 * Every call takes the signal that bounds it: a request still unanswered when it aborts must fail
 * at once (a hung connection must not outlast the renew deadline).
 */
export interface LeaseStore {
  /**
   * Optional: calls `onRecord` with the Lease each time the API server reports a change of it
   * (a watch; undefined once it is deleted) until `signal` aborts.
   */
  watch?(
    onRecord: (record: LeaseRecord | undefined, resourceVersion?: string) => void,
    signal: AbortSignal,
    log: Logger,
  ): void;
  read(signal?: AbortSignal): Promise<{ record: LeaseRecord; resourceVersion: string } | undefined>;
  create(record: LeaseRecord, signal?: AbortSignal): Promise<{ resourceVersion: string }>;
  write(
    record: LeaseRecord,
    resourceVersion: string,
    signal?: AbortSignal,
  ): Promise<{ resourceVersion: string }>;
}

export interface LeaderElectionTiming {
  leaseDurationSeconds: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
}

export const DEFAULT_TIMING: LeaderElectionTiming = {
  leaseDurationSeconds: 15,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
};

/**
 * How long after the computed expiry a standby's timer fires: a timer that fires a millisecond
 * early would find the Lease not yet expired and, with nothing new to see, wait for the next
 * retry-period read. Not a safety margin: that is leaseDuration - renewDeadline.
 */
export const EXPIRY_MARGIN_MS = 50;

/** How long stepping down may take before the process gives up and lets the Lease expire. */
export const RELEASE_TIMEOUT_MS = 2_000;

/** MicroTime text (RFC 3339 with microseconds), the Lease's time format. */
export function microTime(date: Date): string {
  return date.toISOString().replace(/Z$/, '000Z');
}

export class LeaderElector {
  private readonly store: LeaseStore;
  private readonly identity: string;
  private readonly timing: LeaderElectionTiming;
  private readonly log: Logger;
  private readonly clock: Clock;
  /**
   * The last record seen, its resourceVersion (every write changes it, even one within the same
   * millisecond as the last) and when (clock ms) this process first saw it.
   */
  private observed: { record: LeaseRecord | undefined; resourceVersion?: string; at: number } = {
    record: undefined,
    at: 0,
  };
  /** Whether `observed` holds a real sighting (a read or a watch event), not the initial blank. */
  private seen = false;
  /** When (clock ms) the last round started. */
  private lastRoundAt = -Infinity;
  /** Ends the standby's current wait early (a watch event). */
  private wake: (() => void) | undefined;
  private current: { record: LeaseRecord; resourceVersion: string } | undefined;
  /**
   * When (clock ms) the last successful round started. The record it wrote says renewTime = that
   * moment, and a standby counts the lease duration from when it saw the record, which is later:
   * so this process may act as leader until renewedAt + renewDeadline, never after.
   */
  private renewedAt = 0;
  /** The last failure reported as a warning (each distinct one once, until a round succeeds). */
  private lastFailure: string | undefined;
  private leading = false;

  constructor(
    store: LeaseStore,
    identity: string,
    log: Logger,
    timing: LeaderElectionTiming = DEFAULT_TIMING,
    clock: Clock = systemClock,
  ) {
    this.store = store;
    this.identity = identity;
    this.log = log;
    this.timing = timing;
    this.clock = clock;
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** The holder the elector saw last (for logs and /readyz). */
  get holder(): string | undefined {
    return this.observed.record?.holderIdentity || undefined;
  }

  /**
   * Campaigns until this process holds the Lease; resolves true then, or false when `signal`
   * aborts first.
   */
  async acquire(signal: AbortSignal): Promise<boolean> {
    // The watch runs only while standing by: a leader learns of another holder by its renewals.
    const standing = new AbortController();
    this.store.watch?.(
      (record, resourceVersion) => this.observe(record, resourceVersion),
      AbortSignal.any([signal, standing.signal]),
      this.log,
    );
    try {
      let lastHolder: string | undefined;
      while (!signal.aborted) {
        if (await this.tryAcquireOrRenew(signal)) {
          this.leading = true;
          this.log.info('became leader', { identity: this.identity });
          return true;
        }
        if (this.holder !== lastHolder) {
          lastHolder = this.holder;
          this.log.info('waiting for the leader lease', {
            identity: this.identity,
            holder: lastHolder ?? '',
          });
        }
        await this.waitForTurn(this.clock.now() + jitter(this.timing.retryPeriodMs), signal);
      }
      return false;
    } finally {
      standing.abort();
      this.wake = undefined;
    }
  }

  /**
   * When the next round may succeed, from what this standby saw last: at once for a released or
   * deleted Lease (or its own), else observed + the record's lease duration (+ margin). Undefined
   * when there is no sighting, or a round already started at or after that moment and failed (a
   * conflict: someone else wrote, and the watch will show it), so that only a new sighting or
   * the retry period brings the next round.
   */
  private dueAt(): number | undefined {
    if (!this.seen) return undefined;
    const { record, at } = this.observed;
    const holder = record?.holderIdentity ?? '';
    const due =
      holder === '' || holder === this.identity
        ? at
        : at + (record?.leaseDurationSeconds ?? this.timing.leaseDurationSeconds) * 1000 + EXPIRY_MARGIN_MS;
    return this.lastRoundAt >= due ? undefined : due;
  }

  /** Sleeps until `pollAt` (the retry period), the Lease's expiry as observed, or `signal`. */
  private async waitForTurn(pollAt: number, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const at = Math.min(pollAt, this.dueAt() ?? Infinity);
      const now = this.clock.now();
      if (at <= now) return;
      // One listener on the long-lived `signal`, removed after each wait (not a combined signal
      // per wait, which a standby of weeks would make hundreds of thousands of).
      const woken = new AbortController();
      const wake = () => woken.abort();
      signal.addEventListener('abort', wake, { once: true });
      this.wake = wake;
      try {
        await this.clock.sleep(at - now, woken.signal);
      } finally {
        signal.removeEventListener('abort', wake);
      }
    }
  }

  /** A watch event: a change of the record is a new sighting, dated now on this clock. */
  private observe(record: LeaseRecord | undefined, resourceVersion: string | undefined): void {
    if (this.seen && this.sameAsObserved(record, resourceVersion)) return;
    this.observed = { record, resourceVersion, at: this.clock.now() };
    this.seen = true;
    this.wake?.();
  }

  /**
   * Renews every retryPeriod while leading. Resolves when leadership is lost (no successful renew
   * within renewDeadline, or another holder seen) or when `signal` aborts; `lost` tells which.
   *
   * As client-go's renew loop does, every round is bounded by what remains of the renew deadline
   * (the abort reaches the request), so a connection that hangs without closing cannot keep this
   * process leading past renewedAt + renewDeadline, which is before any standby may take the
   * Lease (renewDeadline < leaseDuration).
   */
  async holdUntilLost(signal: AbortSignal): Promise<{ lost: boolean }> {
    while (!signal.aborted) {
      const deadline = this.renewedAt + this.timing.renewDeadlineMs;
      await this.clock.sleep(Math.min(this.timing.retryPeriodMs, deadline - this.clock.now()), signal);
      if (signal.aborted) break;
      const remaining = deadline - this.clock.now();
      // The round is not cut by `signal` (shutdown): a renewal the server applied but whose answer
      // was dropped would leave a stale resourceVersion, and the release below would fail.
      const renewed = remaining > 0 && (await this.round(undefined, remaining));
      if (renewed || signal.aborted) continue;
      const otherHolder = this.holder !== undefined && this.holder !== this.identity;
      if (otherHolder || this.clock.now() >= deadline) {
        this.leading = false;
        this.log.error('lost the leader lease', {
          identity: this.identity,
          holder: this.holder ?? '',
          reason: otherHolder ? 'another holder' : 'not renewed within the renew deadline',
        });
        return { lost: true };
      }
    }
    return { lost: false };
  }

  /** Steps down (only if this process still holds the Lease), within `timeoutMs`. Never throws. */
  async release(timeoutMs = RELEASE_TIMEOUT_MS): Promise<void> {
    if (!this.leading || !this.current) return;
    this.leading = false;
    try {
      await this.store.write(
        releasedRecord(this.current.record, microTime(new Date())),
        this.current.resourceVersion,
        this.clock.timeout(timeoutMs),
      );
      this.log.info('released the leader lease', { identity: this.identity });
    } catch (err) {
      this.log.warn('could not release the leader lease; it expires by itself', {
        identity: this.identity,
        error: describeApiError(err),
      });
    }
  }

  /**
   * One round: read, decide, write, all within renewDeadline (or `signal`). True when this
   * process holds the Lease afterwards.
   */
  tryAcquireOrRenew(signal?: AbortSignal): Promise<boolean> {
    return this.round(signal, this.timing.renewDeadlineMs);
  }

  private async round(outer: AbortSignal | undefined, budgetMs: number): Promise<boolean> {
    const started = this.clock.now();
    this.lastRoundAt = started;
    const signal = boundedSignal(this.clock, budgetMs, outer);
    const ok = await this.readDecideWrite(started, signal);
    // An answer that arrives after the budget proves nothing about now.
    if (!ok || this.clock.now() - started > budgetMs) return false;
    this.renewedAt = started;
    return true;
  }

  private async readDecideWrite(now: number, signal: AbortSignal): Promise<boolean> {
    const wallNow = () => microTime(new Date());
    try {
      const found = await this.store.read(signal);
      if (!found) {
        const record = nextRecord(undefined, this.identity, wallNow(), this.timing.leaseDurationSeconds);
        const { resourceVersion } = await this.store.create(record, signal);
        this.remember(record, resourceVersion, now);
        return true;
      }
      if (!this.seen || !this.sameAsObserved(found.record, found.resourceVersion)) {
        this.observed = { record: found.record, resourceVersion: found.resourceVersion, at: now };
        this.seen = true;
      }
      const decision = decide(
        found.record,
        this.identity,
        this.observed.at,
        now,
        this.timing.leaseDurationSeconds,
      );
      if (decision === 'wait') return false;
      const record = nextRecord(found.record, this.identity, wallNow(), this.timing.leaseDurationSeconds);
      const { resourceVersion } = await this.store.write(record, found.resourceVersion, signal);
      this.remember(record, resourceVersion, now);
      return true;
    } catch (err) {
      // Conflicts (someone else wrote first) and API errors both mean: not this round. A conflict
      // is the normal race between replicas; anything else (403 from a missing RBAC rule, an
      // unreachable API server, a request cut at the renew deadline) is what an operator that
      // never leads needs to say, once.
      if (signal.aborted && (signal.reason as Error | undefined)?.name !== 'TimeoutError') return false; // shutdown
      const error = signal.aborted ? 'no answer within the renew deadline' : describeApiError(err);
      if (isConflict(err)) {
        this.log.debug('lease round failed', { identity: this.identity, error });
      } else if (error !== this.lastFailure) {
        this.lastFailure = error;
        this.log.warn('cannot take or renew the leader lease; retrying', { identity: this.identity, error });
      }
      return false;
    }
  }

  private remember(record: LeaseRecord, resourceVersion: string, now: number): void {
    this.lastFailure = undefined;
    this.current = { record, resourceVersion };
    this.observed = { record, resourceVersion, at: now };
    this.seen = true;
  }

  private sameAsObserved(record: LeaseRecord | undefined, resourceVersion: string | undefined): boolean {
    return sameRecord(record, this.observed.record) && resourceVersion === this.observed.resourceVersion;
  }
}

function jitter(ms: number): number {
  return ms + Math.floor(Math.random() * ms * 0.2);
}
