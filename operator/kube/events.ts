/**
 * Records Kubernetes Events for AgentCards. The reconcile plans events only on state changes;
 * this recorder also drops an identical event (same object, type, reason and message) repeated
 * within the dedupe window, so a flapping input cannot flood the API server. A failed event
 * write is logged and otherwise ignored: events are best effort.
 */
import type { Logger } from '../log.ts';
import { createEvent, type Clients, type EventInput } from './api.ts';
import { describeApiError } from './errors.ts';

export interface EventRecorderOptions {
  clients: Clients;
  log: Logger;
  reportingController: string;
  reportingInstance: string;
  dedupeWindowMs?: number;
  /** Called after each Event write attempt (for the API-writes metric). */
  onWrite?: () => void;
}

const MAX_REMEMBERED = 10_000;

export class EventRecorder {
  private readonly opts: EventRecorderOptions;
  private readonly windowMs: number;
  private readonly recent = new Map<string, number>();

  constructor(opts: EventRecorderOptions) {
    this.opts = opts;
    this.windowMs = opts.dedupeWindowMs ?? 10 * 60_000;
  }

  async record(
    regarding: EventInput['regarding'],
    event: { type: 'Normal' | 'Warning'; reason: string; action: string; message: string },
  ): Promise<void> {
    const key = `${regarding.uid}\u0000${event.type}\u0000${event.reason}\u0000${event.message}`;
    const now = Date.now();
    const last = this.recent.get(key);
    if (last !== undefined && now - last < this.windowMs) return;
    this.recent.delete(key);
    this.recent.set(key, now);
    if (this.recent.size > MAX_REMEMBERED) this.recent.delete(this.recent.keys().next().value as string);
    try {
      this.opts.onWrite?.();
      await createEvent(this.opts.clients, {
        namespace: regarding.namespace,
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
