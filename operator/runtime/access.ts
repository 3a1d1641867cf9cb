/**
 * Before its caches start, a controller checks that it may list what they watch: one LIST of at
 * most one object's metadata per collection. An informer that is refused keeps retrying with
 * backoff and its cache never syncs, so a missing RBAC rule or CRD would leave the operator
 * running and never reconciling, with a warning every 30 s; answered here, it ends the process
 * with one line that names the collection and the API server's reason (manager.ts).
 *
 * Only answers that a restart with the same settings would get again end it (401, 403, 404); an
 * outage (kube/health.ts) or anything else is retried with backoff until it passes or `signal`
 * aborts. The backoff is the informers' (kube/informer.ts): 1 s doubling to 30 s with equal
 * jitter, so that the checks of every collection (and of every replica) that failed together do
 * not all ask a recovering API server again in the same instant.
 */
import { Backoff, type BackoffOptions } from '../kube/backoff.ts';
import { METADATA_ONLY, type KubeClient } from '../kube/client.ts';
import { systemClock, type Clock } from '../kube/clock.ts';
import { apiStatusCode, describeApiError } from '../kube/errors.ts';
import type { Logger } from '../log.ts';
import { StartupError } from './manager.ts';

/** A collection a cache will list and watch. */
export interface ListSource {
  /** For the message: "pods in namespace shop", "agentcards in every namespace". */
  what: string;
  path: string;
  labelSelector?: string;
  /** Named mode lists Secrets by `metadata.name=` only: RBAC resourceNames allow nothing else. */
  fieldSelector?: string;
}

const FINAL = new Set([401, 403, 404]);

/** The informers' restart backoff (kube/informer.ts's default). */
export const ACCESS_BACKOFF: BackoffOptions = { baseMs: 1_000, maxMs: 30_000, jitter: 'equal' };

export async function checkListAccess(
  client: KubeClient,
  sources: readonly ListSource[],
  opts: {
    signal: AbortSignal;
    log: Logger;
    clock?: Clock;
    /** Default ACCESS_BACKOFF; a test fixes its random source. */
    backoff?: BackoffOptions;
  },
): Promise<void> {
  const clock = opts.clock ?? systemClock;
  await Promise.all(
    sources.map(async (source) => {
      const backoff = new Backoff(opts.backoff ?? ACCESS_BACKOFF);
      for (;;) {
        try {
          await client.request('GET', source.path, {
            query: { labelSelector: source.labelSelector, fieldSelector: source.fieldSelector, limit: 1 },
            accept: METADATA_ONLY.list,
            signal: opts.signal,
          });
          return;
        } catch (err) {
          if (opts.signal.aborted) throw err;
          const status = apiStatusCode(err);
          if (status !== undefined && FINAL.has(status)) {
            const hint = status === 404 ? ' (is its CRD installed?)' : '';
            throw new StartupError(`cannot list ${source.what}${hint}: ${describeApiError(err)}`);
          }
          const delay = backoff.next();
          opts.log.warn('cannot list yet; retrying', {
            what: source.what,
            error: describeApiError(err),
            retryInMs: delay,
          });
          await clock.sleep(delay, opts.signal);
          if (opts.signal.aborted) throw err;
        }
      }
    }),
  );
}
