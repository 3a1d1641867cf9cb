/**
 * Asks the API server whether it is back while the circuit breaker (health.ts) is open, so that
 * recovery is seen within about a second instead of when the next informer retry or work-queue
 * probe comes due on its backoff (which doubles to 30 s: after a 20 s outage, the first request
 * after the API server's return could come up to 11 s late, and nothing converged meanwhile).
 *
 * One cheap request at a time, each bounded by `timeoutMs`: GET /readyz after `intervalMs`, then
 * on a delay that doubles after each failed check up to `maxIntervalMs` (1, 2, 4, 4 ... s), so a
 * long outage costs one request every 4 s and recovery is seen within 4 s of it. GET /readyz,
 * which the API server answers 200 only once it can serve, which every client may read (the
 * default system:public-info-viewer role), and which API Priority and Fairness exempts by
 * default (its suggested "probes" FlowSchema), so it costs no seat of the operator's priority
 * level. A 200 closes the breaker: the work queue runs again and informers waiting out their
 * backoff resume (their onRecover listeners). A failed check changes nothing: the breaker's own
 * backoff is left to the real requests. Not while the API server is throttling (429): it
 * answers /readyz then but would refuse the writes.
 * https://kubernetes.io/docs/reference/using-api/health-checks/
 */
import { backoffDelay } from './backoff.ts';
import { boundedSignal, systemClock, type Clock } from './clock.ts';
import type { ApiHealth } from './health.ts';

export interface RecoveryProbeOptions {
  health: ApiHealth;
  /** Resolves true if the API server is ready; may reject (taken as not ready). */
  check: (signal: AbortSignal) => Promise<boolean>;
  clock?: Clock;
  intervalMs?: number;
  maxIntervalMs?: number;
  timeoutMs?: number;
}

export const RECOVERY_PROBE_INTERVAL_MS = 1_000;
export const RECOVERY_PROBE_MAX_INTERVAL_MS = 4_000;
const RECOVERY_PROBE_TIMEOUT_MS = 2_000;

export class RecoveryProbe {
  private readonly health: ApiHealth;
  private readonly check: RecoveryProbeOptions['check'];
  private readonly clock: Clock;
  private readonly intervalMs: number;
  private readonly maxIntervalMs: number;
  private readonly timeoutMs: number;
  /** Failed checks since the breaker opened (the delay doubles with each). */
  private failures = 0;
  private cancel: (() => void) | undefined;
  private stopped = false;
  /** Checks made so far (for tests and the log). */
  checks = 0;

  constructor(opts: RecoveryProbeOptions) {
    this.health = opts.health;
    this.check = opts.check;
    this.clock = opts.clock ?? systemClock;
    this.intervalMs = opts.intervalMs ?? RECOVERY_PROBE_INTERVAL_MS;
    this.maxIntervalMs = opts.maxIntervalMs ?? RECOVERY_PROBE_MAX_INTERVAL_MS;
    this.timeoutMs = opts.timeoutMs ?? RECOVERY_PROBE_TIMEOUT_MS;
    this.health.onTrip(() => {
      this.failures = 0;
      this.schedule();
    });
  }

  stop(): void {
    this.stopped = true;
    this.cancel?.();
    this.cancel = undefined;
  }

  /** Read afresh each time: the breaker changes while a check is awaited. */
  private closed(): boolean {
    return this.health.state === 'closed';
  }

  private schedule(): void {
    if (this.stopped || this.cancel) return;
    const delay = backoffDelay(this.failures + 1, { baseMs: this.intervalMs, maxMs: this.maxIntervalMs });
    this.cancel = this.clock.setTimer(delay, () => void this.tick());
  }

  private async tick(): Promise<void> {
    if (this.stopped || this.closed()) {
      this.cancel = undefined;
      return;
    }
    let ready = false;
    if (!this.health.throttled) {
      this.checks += 1;
      ready = await this.check(boundedSignal(this.clock, this.timeoutMs)).catch(() => false);
      if (!ready) this.failures += 1;
    }
    this.cancel = undefined;
    // A real request may have closed the breaker while the check ran.
    if (ready && !this.stopped) this.health.success();
    else if (!this.closed()) this.schedule();
  }
}
