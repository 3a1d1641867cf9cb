/**
 * Records Kubernetes Events for AgentCards, in the background like client-go's event
 * broadcaster: a reconcile hands its events over and goes on; a small sender writes them with
 * bounded concurrency. Events are best effort:
 * - an identical event (same object, type, reason and message) repeated within the dedupe window
 *   is dropped, so a flapping input cannot flood the API server;
 * - when the backlog is full the oldest pending event is dropped (and counted);
 * - a failed write is logged (without the message) and not retried.
 * The reconcile only plans events on state changes (controllers/agentcard/events.ts).
 * The dedupe window and the flush timeout are read from an injected Clock (kube/clock.ts), so a
 * unit test proves both on a manual clock without sleeping.
 */
import { createHash } from 'node:crypto';
import type { Logger } from '../log.ts';
import { createEvent, type EventInput } from './api.ts';
import type { KubeClient } from './client.ts';
import { systemClock, type Clock } from './clock.ts';
import { describeApiError } from './errors.ts';

export interface EventRecorderOptions {
  client: KubeClient;
  log: Logger;
  reportingController: string;
  reportingInstance: string;
  dedupeWindowMs?: number;
  /** Event writes in flight at most (default 2). */
  concurrency?: number;
  /** Pending events kept at most (default 1,000). */
  backlog?: number;
  /** Called before each Event write (for the API-writes metric). */
  onWrite?: () => void;
  /** Time for the dedupe window and the flush timeout (a manual clock in tests). */
  clock?: Clock;
}

export interface RecordedEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  action: string;
  message: string;
}

/**
 * Events remembered for the dedupe at most, each as a SHA-256 of its object, type, reason and
 * message (44 characters) rather than the text itself, and only while its window lasts: at 10,000
 * AgentCards the whole texts took 3.3 MiB of the heap (docs/scaling.md, "Where the memory goes").
 */
const MAX_REMEMBERED = 10_000;

export class EventRecorder {
  private readonly opts: EventRecorderOptions;
  private readonly windowMs: number;
  private readonly concurrency: number;
  private readonly backlog: number;
  private readonly clock: Clock;
  private readonly recent = new Map<string, number>();
  private readonly pending: Array<{
    regarding: EventInput['regarding'];
    event: RecordedEvent;
    namespace: string;
  }> = [];
  private inFlight = 0;
  private idleWaiters: Array<() => void> = [];
  /** Events dropped because the backlog was full. */
  dropped = 0;

  constructor(opts: EventRecorderOptions) {
    this.opts = opts;
    this.windowMs = opts.dedupeWindowMs ?? 10 * 60_000;
    this.concurrency = opts.concurrency ?? 2;
    this.backlog = opts.backlog ?? 1_000;
    this.clock = opts.clock ?? systemClock;
  }

  /**
   * Queues an event for `regarding`; returns at once. `namespace`: where the Event is written,
   * by default the object's own; a cluster-scoped object's go to "default", as the API server's.
   */
  record(
    regarding: EventInput['regarding'],
    event: RecordedEvent,
    namespace: string = regarding.namespace || 'default',
  ): void {
    const key = createHash('sha256')
      .update(`${regarding.uid}\u0000${event.type}\u0000${event.reason}\u0000${event.message}`, 'utf8')
      .digest('base64');
    const now = this.clock.now();
    const last = this.recent.get(key);
    if (last !== undefined && now - last < this.windowMs) return;
    this.recent.delete(key);
    this.recent.set(key, now);
    this.forgetOld(now);
    this.pending.push({ regarding, event, namespace });
    if (this.pending.length > this.backlog) {
      this.pending.shift();
      this.dropped += 1;
    }
    this.pump();
  }

  /**
   * Drops the keys whose window is over, and the oldest beyond MAX_REMEMBERED. The map is in the
   * order of the keys' last times (record moves a key to the end), so they are all at its start.
   */
  private forgetOld(now: number): void {
    for (const [key, at] of this.recent) {
      if (now - at < this.windowMs && this.recent.size <= MAX_REMEMBERED) break;
      this.recent.delete(key);
    }
  }

  /** How many events the dedupe remembers now (for tests). */
  get remembered(): number {
    return this.recent.size;
  }

  /** Resolves when every queued event has been written (or `timeoutMs` passed). */
  async flush(timeoutMs: number): Promise<void> {
    if (this.pending.length === 0 && this.inFlight === 0) return;
    await new Promise<void>((resolve) => {
      // Whichever comes first (idle or the deadline) removes the other, so neither a timer nor a
      // waiter is left behind when flush is called again while a write hangs.
      const done = () => {
        cancelTimer();
        this.idleWaiters = this.idleWaiters.filter((w) => w !== done);
        resolve();
      };
      this.idleWaiters.push(done);
      const cancelTimer = this.clock.setTimer(timeoutMs, done);
    });
  }

  private pump(): void {
    while (this.inFlight < this.concurrency && this.pending.length > 0) {
      const next = this.pending.shift()!;
      this.inFlight += 1;
      void this.send(next.regarding, next.event, next.namespace).finally(() => {
        this.inFlight -= 1;
        this.pump();
        if (this.inFlight === 0 && this.pending.length === 0) {
          const waiters = this.idleWaiters;
          this.idleWaiters = [];
          for (const resolve of waiters) resolve();
        }
      });
    }
  }

  private async send(
    regarding: EventInput['regarding'],
    event: RecordedEvent,
    namespace: string,
  ): Promise<void> {
    try {
      this.opts.onWrite?.();
      await createEvent(this.opts.client, {
        namespace,
        regarding,
        type: event.type,
        reason: event.reason,
        action: event.action,
        note: event.message,
        reportingController: this.opts.reportingController,
        reportingInstance: this.opts.reportingInstance,
      });
    } catch (err) {
      this.opts.log.warn('could not record event', {
        namespace: regarding.namespace,
        name: regarding.name,
        reason: event.reason,
        error: describeApiError(err),
      });
    }
  }
}
