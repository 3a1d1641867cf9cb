/**
 * An API server in memory, for unit tests of the runtime and of a controller's reconcile against
 * the runtime's real cache (runtime/cache.ts): `served` lists the resources discovery shows per
 * group path, `items` the objects per collection path; a watch stays open and delivers what
 * `emit` sends; every write (POST, PUT, PATCH, DELETE) is recorded and answered by `answer`, or
 * echoed. A double for pure logic only: what the real API server does is what the integration
 * tests check.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { ApiError, type KubeClient, type WatchEvent } from '../../operator/kube/client.ts';
import { createLogger } from '../../operator/log.ts';

type Obj = KubernetesObject;

export interface RecordedWrite {
  method: string;
  path: string;
  body: unknown;
  query?: Record<string, unknown>;
}

export const quietLog = createLogger({}, { write: () => {} });

/** Polls `check` every 5 ms until it holds (a test of this double's events, not a timing claim). */
export async function until(what: string, check: () => boolean, ms = 3_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export function memoryApi() {
  const watchers = new Map<string, (e: WatchEvent<Obj>) => void>();
  const api = {
    /** Discovery: group path → the plurals it serves (the core group serves the usual ones). */
    served: new Map<string, string[]>([
      ['/api/v1', ['namespaces', 'pods', 'configmaps', 'secrets', 'services']],
    ]),
    items: new Map<string, object[]>(),
    /** Every GET without watch, as "path" or "path?limit=1". */
    lists: [] as string[],
    writes: [] as RecordedWrite[],
    /** Answers a write (throw an ApiError to refuse it); default: the body back. */
    answer: (w: RecordedWrite): unknown => w.body,
    /** Answers a GET of one object (a path not served as a collection). */
    get: (_path: string): unknown => {
      throw new ApiError(404, { message: 'not found' });
    },
    emit: (path: string, e: WatchEvent<Obj>) => watchers.get(path)!(e),
    watching: (path: string) => watchers.has(path),
    client: {
      request: async (
        method: string,
        path: string,
        opts: { query?: Record<string, unknown>; body?: unknown } = {},
      ) => {
        if (method !== 'GET') {
          const w = { method, path, body: opts.body, ...(opts.query ? { query: opts.query } : {}) };
          api.writes.push(w);
          return api.answer(w);
        }
        if (api.served.has(path)) return { resources: api.served.get(path)!.map((name) => ({ name })) };
        const parts = path.split('/');
        const group = parts.slice(0, parts[1] === 'api' ? 3 : 4).join('/');
        const plural = parts.at(-1)!;
        const isCollection = api.items.has(path) || (api.served.get(group) ?? []).includes(plural);
        if (!isCollection) return api.get(path);
        api.lists.push(opts.query?.limit === 1 ? `${path}?limit=1` : path);
        return { items: structuredClone(api.items.get(path) ?? []), metadata: { resourceVersion: '1' } };
      },
      watch: (path: string, _q: unknown, onEvent: (e: WatchEvent<Obj>) => void, signal: AbortSignal) => {
        watchers.set(path, onEvent);
        return new Promise<void>((_, reject) => {
          signal.addEventListener('abort', () => {
            watchers.delete(path);
            reject(new DOMException('aborted', 'AbortError'));
          });
        });
      },
    } as unknown as KubeClient,
  };
  return api;
}

export type MemoryApi = ReturnType<typeof memoryApi>;
