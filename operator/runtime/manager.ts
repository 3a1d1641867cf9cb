/**
 * The manager of runnables, as controller-runtime's manager runs a Go operator's parts:
 * - `always` runnables (the informer caches) start on every replica at once, leader or not, so a
 *   standby keeps warm caches and a failover does not wait for thousands of objects to be listed
 *   again;
 * - `leader` runnables (reconcilers, probe scheduler, event writer) start only when this replica
 *   wins the election (or at once without leader election) and stop when it stops leading;
 * - any runnable that cannot start ends the process: the manager stops the others, releases the
 *   Lease if it holds it (a standby takes over at once instead of after the lease duration), logs
 *   the reason once and returns exit code 1, so Kubernetes restarts the Pod and shows why;
 * - shutdown (`signal`) stops leader runnables within a budget, then cancels what is still in
 *   flight (their AbortSignal), releases the Lease and stops the rest;
 * - lost leadership cancels the leader runnables at once (another replica may be leading already,
 *   nothing may wait on the API server) and returns 1: the restart campaigns again.
 */
import { describeApiError } from '../kube/errors.ts';
import { whenAborted } from './abort.ts';
import type { Logger } from '../log.ts';

export type RunMode = 'always' | 'leader';

export interface Runnable {
  /** For logs: "caches", "agentcatalog-reconciler". */
  readonly name: string;
  readonly mode: RunMode;
  /**
   * Starts. Resolves once started (a reconciler: its caches synced and its first keys queued);
   * rejects when it cannot start, which ends the process. `signal` aborts on shutdown, lost
   * leadership or another runnable's failure.
   */
  start(signal: AbortSignal): Promise<void>;
  /** Stops taking work and waits for the work in flight (which `cancel` may cut short). */
  stop(): Promise<void>;
  /**
   * Stops at once and cancels the work in flight (its AbortSignal), without waiting for anything
   * and without calling the API server (another replica may lead already). Without it, lost
   * leadership calls `stop` and does not wait for it.
   */
  cancel?(): void;
}

/** What the manager needs of leader election (kube/leader.ts's LeaderElector). */
export interface Election {
  acquire(signal: AbortSignal): Promise<boolean>;
  holdUntilLost(signal: AbortSignal): Promise<{ lost: boolean }>;
  release(): Promise<void>;
}

export interface ManagerOptions {
  log: Logger;
  /** Undefined: this replica leads from the start (no leader election). */
  election?: Election;
  /** How long shutdown waits for leader runnables before cancelling their work in flight. */
  shutdownBudgetMs: number;
  /** Told when this replica starts and stops leading (the leader metric). */
  onLeading?: (leading: boolean) => void;
}

/** Thrown by a runnable that cannot start for a reason a restart with the same settings keeps. */
export class StartupError extends Error {
  override name = 'StartupError';
}

export class Manager {
  private readonly opts: ManagerOptions;
  private readonly runnables: Runnable[] = [];
  private leading = false;

  constructor(opts: ManagerOptions) {
    this.opts = opts;
  }

  add(...runnables: Runnable[]): this {
    this.runnables.push(...runnables);
    return this;
  }

  /** Whether this replica runs its leader runnables now. */
  get isLeading(): boolean {
    return this.leading;
  }

  /** Runs until `signal` aborts, leadership is lost or a runnable fails; resolves with the exit code. */
  async run(signal: AbortSignal): Promise<number> {
    const { log, election } = this.opts;
    const always = this.runnables.filter((r) => r.mode === 'always');
    const leaders = this.runnables.filter((r) => r.mode === 'leader');
    const failed = new AbortController();
    let failure: { runnable: string; error: string } | undefined;
    const stopping = AbortSignal.any([signal, failed.signal]);
    const startAll = (rs: Runnable[]) =>
      Promise.all(
        rs.map((r) =>
          r.start(stopping).catch((err: unknown) => {
            // The first failure is the reason; what fails after it (aborted waits) is its echo.
            if (failure || stopping.aborted) return;
            failure = { runnable: r.name, error: describeApiError(err) };
            failed.abort();
          }),
        ),
      );

    const alwaysStarted = startAll(always);
    let lost = false;
    if (election) {
      if (await election.acquire(stopping)) {
        this.setLeading(true);
        const started = startAll(leaders);
        ({ lost } = await election.holdUntilLost(stopping));
        this.setLeading(false);
        if (lost) for (const r of leaders) this.cancel(r);
        else {
          await this.stopWithin(leaders);
          await started;
          // Released only after the writers stopped: the next leader must not overlap them.
          await election.release();
        }
      }
    } else {
      this.setLeading(true);
      const started = startAll(leaders);
      await whenAborted(stopping);
      this.setLeading(false);
      await this.stopWithin(leaders);
      await started;
    }
    if (lost) for (const r of always) this.cancel(r);
    else await this.stopWithin(always);
    await alwaysStarted;
    if (failure) {
      log.error('the operator could not start; exiting', failure);
      return 1;
    }
    return lost ? 1 : 0;
  }

  private setLeading(leading: boolean): void {
    this.leading = leading;
    this.opts.onLeading?.(leading);
  }

  /** Lost leadership: cancel, or stop without waiting for it. */
  private cancel(r: Runnable): void {
    if (r.cancel) r.cancel();
    else void r.stop().catch(() => {});
  }

  /**
   * Stops runnables in the reverse order of their adding (a reconciler before the event writer it
   * uses); what is still running at the end of the budget is cancelled, not waited for.
   */
  private async stopWithin(runnables: Runnable[]): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const budget = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), this.opts.shutdownBudgetMs);
      timer.unref();
    });
    const all = (async () => {
      for (const r of [...runnables].reverse())
        await r
          .stop()
          .catch((err: unknown) =>
            this.opts.log.warn('stopping failed', { runnable: r.name, error: describeApiError(err) }),
          );
      return true as const;
    })();
    const finished = await Promise.race([all, budget]);
    clearTimeout(timer);
    if (!finished) {
      this.opts.log.warn('work still running at the end of the shutdown budget; cancelling it', {});
      for (const r of runnables) r.cancel?.();
      await Promise.race([all, new Promise((r) => setTimeout(r, 2_000).unref())]);
    }
  }
}
