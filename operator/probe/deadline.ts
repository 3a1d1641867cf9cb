/**
 * A probe's deadlines as one clearable AbortSignal. This is what
 * `AbortSignal.any([parent, AbortSignal.timeout(ms)])` gives, at a fraction of its cost at
 * hundreds of probes a second: an `AbortSignal.timeout` timer cannot be cleared, so each one
 * fired seconds after its probe had finished (building a DOMException and dispatching an abort
 * event every time), and `AbortSignal.any` follows its sources through weak references.
 */
export interface Deadline {
  signal: AbortSignal;
  /** Clears the timer and the listener on the parent (call it when the work is over). */
  done(): void;
}

/** The reason AbortSignal.timeout gives, which abortCode (connect.ts) reads as a timeout. */
export const timeoutReason = () =>
  new DOMException('The operation was aborted due to timeout', 'TimeoutError');

/**
 * Aborts after `ms` with `reason()`, or as soon as `parent` aborts, with the parent's reason. The
 * timer does not keep the process alive (as AbortSignal.timeout's does not).
 */
export function deadline(ms: number, reason: () => unknown, parent?: AbortSignal): Deadline {
  const controller = new AbortController();
  if (parent?.aborted) {
    controller.abort(parent.reason);
    return { signal: controller.signal, done: () => {} };
  }
  const onParent = () => controller.abort(parent!.reason);
  parent?.addEventListener('abort', onParent, { once: true });
  const timer = setTimeout(() => controller.abort(reason()), ms);
  timer.unref();
  return {
    signal: controller.signal,
    done: () => {
      clearTimeout(timer);
      parent?.removeEventListener('abort', onParent);
    },
  };
}
