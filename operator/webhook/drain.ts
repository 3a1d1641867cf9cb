/**
 * Keeps the admission webhook serving for a while after SIGTERM. The API server reaches the
 * webhook through the operator's Service; when the Pod is deleted, the EndpointSlice controller
 * first marks its endpoint `ready: false, terminating: true` and kube-proxy (or the API server's
 * own endpoint view) then stops sending it connections, which takes a few seconds. Termination
 * and the endpoint removal run at the same time, so a port closed at once refuses the reviews
 * sent in that window, and with failurePolicy Ignore those Pods are admitted without the sidecar.
 * See https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination and
 * https://kubernetes.io/docs/concepts/services-networking/endpoint-slices/#conditions; the same
 * practice as kube-apiserver's --shutdown-delay-duration.
 */
import type { Logger } from '../log.ts';

/** The default of --webhook-shutdown-delay. */
export const DEFAULT_WEBHOOK_SHUTDOWN_DELAY_MS = 5_000;
/**
 * The largest --webhook-shutdown-delay: with the webhook's own graceful close (up to 5 s for
 * in-flight reviews) it stays under the chart's 30 s terminationGracePeriodSeconds.
 */
export const MAX_WEBHOOK_SHUTDOWN_DELAY_MS = 20_000;

export interface WebhookDrain {
  /** Settles once `close` ran `delayMs` after the signal aborted. */
  readonly drained: Promise<void>;
  /** Closes at once (no delay), e.g. when the process stops for a failure rather than a signal. */
  closeNow(): Promise<void>;
}

/** Calls `close` (once) `delayMs` after `signal` aborts, or at once on closeNow(). */
export function drainOnAbort(opts: {
  signal: AbortSignal;
  delayMs: number;
  log: Logger;
  close: () => Promise<void>;
}): WebhookDrain {
  const { signal, delayMs, log } = opts;
  let closing: Promise<void> | undefined;
  const closeOnce = () => (closing ??= opts.close());
  let timer: NodeJS.Timeout | undefined;
  let onAbort = () => {};
  const drained = new Promise<void>((resolve, reject) => {
    onAbort = () => {
      if (delayMs > 0) log.info('webhook draining', { delayMs });
      timer = setTimeout(() => closeOnce().then(resolve, reject), delayMs);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  // Not awaited by every caller (closeNow() instead): a failed close is reported there.
  drained.catch(() => {});
  return {
    drained,
    closeNow() {
      signal.removeEventListener('abort', onAbort);
      clearTimeout(timer);
      return closeOnce();
    },
  };
}
