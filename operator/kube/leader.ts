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
 */
import { setTimeout as sleep } from 'node:timers/promises';
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

/** The Lease I/O the elector needs; `write` must fail (throw) when `resourceVersion` is stale. */
export interface LeaseStore {
  read(): Promise<{ record: LeaseRecord; resourceVersion: string } | undefined>;
  create(record: LeaseRecord): Promise<{ resourceVersion: string }>;
  write(record: LeaseRecord, resourceVersion: string): Promise<{ resourceVersion: string }>;
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

/** MicroTime text (RFC 3339 with microseconds), the Lease's time format. */
export function microTime(date: Date): string {
  return date.toISOString().replace(/Z$/, '000Z');
}

export class LeaderElector {
  private readonly store: LeaseStore;
  private readonly identity: string;
  private readonly timing: LeaderElectionTiming;
  private readonly log: Logger;
  private observed: { record: LeaseRecord | undefined; at: number } = { record: undefined, at: 0 };
  private current: { record: LeaseRecord; resourceVersion: string } | undefined;
  /** The last failure reported as a warning (each distinct one once, until a round succeeds). */
  private lastFailure: string | undefined;
  private leading = false;

  constructor(
    store: LeaseStore,
    identity: string,
    log: Logger,
    timing: LeaderElectionTiming = DEFAULT_TIMING,
  ) {
    this.store = store;
    this.identity = identity;
    this.log = log;
    this.timing = timing;
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
    let lastHolder: string | undefined;
    while (!signal.aborted) {
      if (await this.tryAcquireOrRenew()) {
        this.leading = true;
        this.log.info('became leader', { identity: this.identity });
        return true;
      }
      if (this.holder !== lastHolder) {
        lastHolder = this.holder;
        this.log.info('waiting for the leader lease', { identity: this.identity, holder: lastHolder ?? '' });
      }
      await sleep(jitter(this.timing.retryPeriodMs), undefined, { signal }).catch(() => {});
    }
    return false;
  }

  /**
   * Renews every retryPeriod while leading. Resolves when leadership is lost (no successful renew
   * within renewDeadline, or another holder seen) or when `signal` aborts; `lost` tells which.
   */
  async holdUntilLost(signal: AbortSignal): Promise<{ lost: boolean }> {
    let lastRenew = Date.now();
    while (!signal.aborted) {
      await sleep(this.timing.retryPeriodMs, undefined, { signal }).catch(() => {});
      if (signal.aborted) break;
      if (await this.tryAcquireOrRenew()) {
        lastRenew = Date.now();
        continue;
      }
      const otherHolder = this.holder !== undefined && this.holder !== this.identity;
      if (otherHolder || Date.now() - lastRenew >= this.timing.renewDeadlineMs) {
        this.leading = false;
        this.log.error('lost the leader lease', { identity: this.identity, holder: this.holder ?? '' });
        return { lost: true };
      }
    }
    return { lost: false };
  }

  /** Steps down (only if this process still holds the Lease). Never throws. */
  async release(): Promise<void> {
    if (!this.leading || !this.current) return;
    this.leading = false;
    try {
      await this.store.write(
        releasedRecord(this.current.record, microTime(new Date())),
        this.current.resourceVersion,
      );
      this.log.info('released the leader lease', { identity: this.identity });
    } catch (err) {
      this.log.warn('could not release the leader lease; it expires by itself', {
        identity: this.identity,
        error: err instanceof Error ? err.message.split('\n', 1)[0] : String(err),
      });
    }
  }

  /** One round: read, decide, write. True when this process holds the Lease afterwards. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const now = Date.now();
    try {
      const found = await this.store.read();
      if (!found) {
        const record = nextRecord(
          undefined,
          this.identity,
          microTime(new Date(now)),
          this.timing.leaseDurationSeconds,
        );
        const { resourceVersion } = await this.store.create(record);
        this.remember(record, resourceVersion, now);
        return true;
      }
      if (!sameRecord(found.record, this.observed.record)) this.observed = { record: found.record, at: now };
      const decision = decide(
        found.record,
        this.identity,
        this.observed.at,
        now,
        this.timing.leaseDurationSeconds,
      );
      if (decision === 'wait') return false;
      const record = nextRecord(
        found.record,
        this.identity,
        microTime(new Date(now)),
        this.timing.leaseDurationSeconds,
      );
      const { resourceVersion } = await this.store.write(record, found.resourceVersion);
      this.remember(record, resourceVersion, now);
      return true;
    } catch (err) {
      // Conflicts (someone else wrote first) and API errors both mean: not this round. A conflict
      // is the normal race between replicas; anything else (403 from a missing RBAC rule, an
      // unreachable API server) is what an operator that never leads needs to say, once.
      const error = describeApiError(err);
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
    this.observed = { record, at: now };
  }
}

function jitter(ms: number): number {
  return ms + Math.floor(Math.random() * ms * 0.2);
}
