/**
 * How a reconcile's publish ended, as a value: the plan decides the artifacts once, the Writer
 * publishes them, and each controller maps the result to status with a pure function. Nothing is
 * validated, rendered or signed again to report a failure.
 */
import { isOutage } from '../kube/health.ts';
import type { PublishOutcome } from './writes.ts';

export const PUBLISH_RESULTS = ['Published', 'PublishFailed', 'PublishRejected', 'Outage'] as const;
export type PublishResultKind = (typeof PUBLISH_RESULTS)[number];

export type PublishResult =
  /** Everything written, or nothing needed writing. */
  | { result: 'Published' }
  /** Retried with backoff; `message` is one line for the condition (no secret). */
  | { result: 'PublishFailed'; message: string; error: unknown; name?: string }
  /** 422: the API server refused the object itself; final until the object changes. */
  | { result: 'PublishRejected'; message: string; name?: string }
  /**
   * The API server is away (kube/health.ts): the status write would fail the same way, so the
   * status stays as it is and the work queue, held by the outage gate, retries the reconcile.
   */
  | { result: 'Outage'; error: unknown };

export const PUBLISHED: PublishResult = { result: 'Published' };

/** Runs a publish (runtime/writes.ts) and turns its outcome, or an outage it throws, into a value. */
export async function publishResult(publish: () => Promise<PublishOutcome>): Promise<PublishResult> {
  let outcome: PublishOutcome;
  try {
    outcome = await publish();
  } catch (err) {
    if (isOutage(err)) return { result: 'Outage', error: err };
    throw err;
  }
  if (outcome.ok) return PUBLISHED;
  return outcome.rejected
    ? { result: 'PublishRejected', message: outcome.message, name: outcome.name }
    : { result: 'PublishFailed', message: outcome.message, error: outcome.error, name: outcome.name };
}
