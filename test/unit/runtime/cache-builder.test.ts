// The runtime's shared cache and builder (runtime/cache.ts, runtime/builder.ts), on a small
// in-memory API double driven by hand (test/support/memory-api.ts, pure logic): one informer per collection however many
// controllers ask, a collection whose CRD arrives later, a collection watched only alongside
// another, and how the builder turns events into queued keys. What the real API server does is
// covered by the controllers' integration tests (test/integration/namespace-cache.test.ts,
// catalogs.test.ts, issuer-ref-no-cert-manager.test.ts).
import type { KubernetesObject } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { ControllerBuilder } from '../../../operator/runtime/builder.ts';
import { Cache, type Collection } from '../../../operator/runtime/cache.ts';
import { Channel } from '../../../operator/runtime/channel.ts';
import type { Runnable } from '../../../operator/runtime/manager.ts';
import { memoryApi, quietLog, until } from '../../support/memory-api.ts';

type Obj = KubernetesObject;
const quiet = quietLog;
const fakeApi = memoryApi;

const CARDS: Collection<Obj> = {
  name: 'cards',
  api: '/apis/example.dev/v1',
  plural: 'cards',
  namespaced: true,
};
const WIDGETS: Collection<Obj> = {
  name: 'widgets',
  api: '/apis/example.dev/v1',
  plural: 'widgets',
  namespaced: false,
  optional: true,
  kind: 'Widget',
};
const NAMESPACES: Collection<Obj> = {
  name: 'namespaces',
  api: '/api/v1',
  plural: 'namespaces',
  namespaced: false,
};
const obj = (name: string, namespace?: string, extra: Partial<NonNullable<Obj['metadata']>> = {}): Obj => ({
  metadata: { name, ...(namespace ? { namespace } : {}), resourceVersion: '1', ...extra },
});

const running: Array<{ stop: AbortController; runnables: Runnable[] }> = [];
afterEach(async () => {
  for (const r of running.splice(0)) {
    r.stop.abort();
    for (const runnable of r.runnables) await runnable.stop();
  }
});

function start(...runnables: Runnable[]): void {
  const stop = new AbortController();
  running.push({ stop, runnables });
  for (const r of runnables) void r.start(stop.signal);
}

describe('the shared cache', () => {
  it('lists and watches a collection once per scope, however many readers ask', async () => {
    const api = fakeApi();
    api.served.set('/apis/example.dev/v1', ['cards']);
    api.items.set('/apis/example.dev/v1/namespaces/a/cards', [obj('one', 'a')]);
    const cache = new Cache({ client: api.client, log: quiet, namespaces: ['a', 'b'] });
    const first = cache.informer(CARDS);
    const second = cache.informer({ ...CARDS });
    expect(second).toBe(first);
    expect(() => cache.informer({ ...CARDS, trim: () => {} })).toThrow(/two different trims/);
    start(cache.runnable());
    await first.waitForSync(new AbortController().signal);
    expect(api.lists.sort()).toEqual([
      '/apis/example.dev/v1/namespaces/a/cards',
      '/apis/example.dev/v1/namespaces/a/cards?limit=1',
      '/apis/example.dev/v1/namespaces/b/cards',
      '/apis/example.dev/v1/namespaces/b/cards?limit=1',
    ]);
    expect(first.get('one', 'a')?.metadata?.name).toBe('one');
    expect(first.watches('a')).toBe(true);
    expect(first.watches('c')).toBe(false);
    expect(first.list().map((o) => o.metadata?.name)).toEqual(['one']);
  });

  it('keeps a collection whose CRD is missing empty and synced, and starts it once it is served', async () => {
    const api = fakeApi();
    api.served.set('/apis/example.dev/v1', []);
    const cache = new Cache({ client: api.client, log: quiet, namespaces: [], lookAgainMs: 20 });
    const widgets = cache.informer(WIDGETS);
    // Watched only alongside the widgets: nobody reads the Namespaces without them.
    const namespaces = cache.informer({ ...NAMESPACES, with: widgets });
    let announced = 0;
    widgets.whenAvailable(() => announced++);
    start(cache.runnable());
    await widgets.waitForSync(new AbortController().signal);
    await namespaces.waitForSync(new AbortController().signal);
    expect(widgets.available).toBe(false);
    expect(widgets.synced).toBe(true);
    expect(widgets.list()).toEqual([]);
    expect(api.lists).toEqual([]);

    api.served.set('/apis/example.dev/v1', ['widgets']);
    api.items.set('/apis/example.dev/v1/widgets', [obj('w')]);
    await until('the widgets to be watched', () => widgets.available && widgets.synced && announced === 1);
    await until('the Namespaces to be watched with them', () => namespaces.available && namespaces.synced);
    expect(widgets.get('w')?.metadata?.name).toBe('w');
    expect(api.watching('/api/v1/namespaces')).toBe(true);
  });

  it('watches a collection at once when one reader needs it whatever the other goes with', async () => {
    const api = fakeApi();
    api.served.set('/apis/example.dev/v1', []);
    const cache = new Cache({ client: api.client, log: quiet, namespaces: [], lookAgainMs: 60_000 });
    const widgets = cache.informer(WIDGETS);
    cache.informer({ ...NAMESPACES, with: widgets });
    const namespaces = cache.informer(NAMESPACES);
    start(cache.runnable());
    await namespaces.waitForSync(new AbortController().signal);
    expect(namespaces.available).toBe(true);
    expect(api.lists).toContain('/api/v1/namespaces');
  });
});

describe('the builder', () => {
  it('queues what the map functions return once the loop runs, by lane and delay, and what a channel sends', async () => {
    const api = fakeApi();
    api.served.set('/apis/example.dev/v1', ['cards', 'widgets']);
    api.items.set('/apis/example.dev/v1/cards', [obj('old', 'a')]);
    const cache = new Cache({ client: api.client, log: quiet, namespaces: [] });
    const cards = cache.informer(CARDS);
    const widgets = cache.informer(WIDGETS);
    const wake = new Channel();
    const reconciled: string[] = [];
    const mapped: string[] = [];
    const built = new ControllerBuilder(
      { log: quiet },
      { name: 'test', concurrency: 1, resyncMs: 600_000, failure: 'failed', fields: (key) => ({ key }) },
    )
      .watches(cards, (card, { type }) => {
        mapped.push(`${type} ${card.metadata!.name}`);
        return type === 'delete' ? [] : [{ key: `card/${card.metadata!.name}`, priority: 'high' }];
      })
      .owns(widgets, { kinds: ['Card'], key: (owner) => ({ key: `card/${owner}`, afterMs: 30 }) })
      .wakes(wake)
      .complete({
        reconcile: async (key) => {
          reconciled.push(key);
        },
        keys: () => cards.list().map((c) => ({ key: `card/${c.metadata!.name}` })),
      });
    start(cache.runnable());
    await cards.waitForSync(new AbortController().signal);
    // The loop has not started: the map function runs (it keeps indexes), nothing is queued.
    api.emit('/apis/example.dev/v1/cards', {
      type: 'ADDED',
      object: obj('early', 'a', { resourceVersion: '2' }),
    });
    await until('the early event mapped', () => mapped.includes('add early'));
    expect(built.queue.depth).toBe(0);

    start(...built.runnables());
    await until('every key reconciled at start', () => reconciled.length === 2);
    expect(reconciled.sort()).toEqual(['card/early', 'card/old']);

    api.emit('/apis/example.dev/v1/cards', {
      type: 'ADDED',
      object: obj('new', 'a', { resourceVersion: '3' }),
    });
    await until('the new card reconciled', () => reconciled.includes('card/new'));
    const owner = [{ apiVersion: 'example.dev/v1', kind: 'Card', name: 'old', uid: 'u', controller: true }];
    const stray = [{ apiVersion: 'v1', kind: 'Other', name: 'x', uid: 'v', controller: true }];
    api.emit('/apis/example.dev/v1/widgets', {
      type: 'ADDED',
      object: obj('w1', undefined, { ownerReferences: stray }),
    });
    api.emit('/apis/example.dev/v1/widgets', {
      type: 'ADDED',
      object: obj('w2', undefined, { ownerReferences: owner }),
    });
    const before = reconciled.length;
    // Delayed 30 ms, and only the owner's key: the widget of another kind's owner maps to nothing.
    await new Promise((r) => setTimeout(r, 5));
    expect(reconciled.length).toBe(before);
    await until('the owner reconciled', () => reconciled.length === before + 1);
    expect(reconciled.at(-1)).toBe('card/old');
    wake.send('card/from-channel');
    await until('the channel key reconciled', () => reconciled.at(-1) === 'card/from-channel');
  });
});
