// The informer's handlers get old and new objects, its indexes follow every change, waitForSync
// ends with the sync itself (no timer), and its restarts are jittered. The client is a small
// in-memory double driven by hand (pure logic); what the real API server sends is covered by
// test/integration/controller-informer.test.ts.
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ApiError, type KubeClient, type WatchEvent } from '../../../operator/kube/client.ts';
import {
  byControllerOwner,
  byLabel,
  NAMESPACE_INDEX,
  ResilientInformer,
  type InformerOptions,
} from '../../../operator/kube/informer.ts';
import { createLogger } from '../../../operator/log.ts';
import { ManualClock, settle } from '../../support/clock.ts';

type Obj = KubernetesObject;

const obj = (
  namespace: string,
  name: string,
  resourceVersion: string,
  extra: Partial<NonNullable<Obj['metadata']>> = {},
): Obj => ({ metadata: { namespace, name, resourceVersion, ...extra } });

/**
 * A client whose list answers `api.items` (or 503 while `refuse`), and whose watch stays open,
 * delivering what the test emits; `expire()` ends the watch with 410 Gone (a relist follows).
 */
function fakeApi(clock: ManualClock) {
  const t0 = clock.now();
  let deliver: ((e: WatchEvent<Obj>) => void) | undefined;
  let fail: ((err: unknown) => void) | undefined;
  const api = {
    refuse: false,
    items: [] as Obj[],
    version: '1',
    lists: [] as number[],
    emit: (e: WatchEvent<Obj>) => deliver!(e),
    expire: () => fail!(new ApiError(410, { message: 'too old resource version' })),
    fail: (err: unknown) => fail!(err),
    client: {
      request: async () => {
        api.lists.push(clock.now() - t0);
        if (api.refuse) throw new ApiError(503, { message: 'unavailable' });
        return { items: structuredClone(api.items), metadata: { resourceVersion: api.version } };
      },
      watch: (_p: string, _q: unknown, onEvent: (e: WatchEvent<Obj>) => void, signal: AbortSignal) => {
        deliver = onEvent;
        return new Promise<void>((_, reject) => {
          fail = reject;
          signal.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
        });
      },
    } as unknown as KubeClient,
  };
  return api;
}

const informerOn = (clock: ManualClock, client: KubeClient, opts: Partial<InformerOptions<Obj>> = {}) =>
  new ResilientInformer<Obj>({
    name: 'test',
    client,
    path: '/api/v1/configmaps',
    log: createLogger({}, { write: () => {} }),
    clock,
    ...opts,
  });

/** Records every handler call as a line: "add ns/a@1", "update ns/a@1->2", "delete ns/a@2". */
function record(informer: ResilientInformer<Obj>): string[] {
  const calls: string[] = [];
  const id = (o: Obj) => `${o.metadata!.namespace}/${o.metadata!.name}@${o.metadata!.resourceVersion}`;
  informer.addEventHandler({
    add: (o) => calls.push(`add ${id(o)}`),
    update: (old, now) => calls.push(`update ${id(old)}->${now.metadata!.resourceVersion}`),
    delete: (o) => calls.push(`delete ${id(o)}`),
  });
  return calls;
}

const names = (objs: readonly Obj[]) =>
  objs.map((o) => `${o.metadata!.namespace}/${o.metadata!.name}`).sort();

describe('ResilientInformer handlers', () => {
  it('hand an update the object it replaces and the new one, a delete the last known object', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    api.items = [obj('ns', 'a', '1', { generation: 1 })];
    const informer = informerOn(clock, api.client);
    const calls = record(informer);
    const viaOn: string[] = [];
    informer.on('update', (now, old) =>
      viaOn.push(`${old?.metadata?.generation}->${now.metadata?.generation}`),
    );
    await informer.start();
    api.emit({ type: 'MODIFIED', object: obj('ns', 'a', '2', { generation: 2 }) });
    api.emit({ type: 'ADDED', object: obj('ns', 'b', '3') });
    api.emit({ type: 'DELETED', object: obj('ns', 'a', '4', { generation: 2 }) });
    expect(calls).toEqual(['add ns/a@1', 'update ns/a@1->2', 'add ns/b@3', 'delete ns/a@4']);
    expect(viaOn).toEqual(['1->2']);
    await informer.stop();
  });

  it('after a 410 relist, report changes against the cached objects and deletes with their last state', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    api.items = [obj('ns', 'a', '1'), obj('ns', 'b', '1'), obj('ns', 'c', '1')];
    const informer = informerOn(clock, api.client);
    const calls = record(informer);
    await informer.start();
    api.emit({ type: 'MODIFIED', object: obj('ns', 'b', '5') });
    calls.length = 0;
    // While the watch was down: a changed, b unchanged since the cache's copy, c gone, d new.
    api.items = [obj('ns', 'a', '7'), obj('ns', 'b', '5'), obj('ns', 'd', '8')];
    api.version = '9';
    api.expire();
    await settle();
    expect(calls).toEqual(['update ns/a@1->7', 'add ns/d@8', 'delete ns/c@1']);
    await informer.stop();
  });

  it('relists after a watch the server failed with 500, reporting changes against the cache', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    api.items = [obj('ns', 'a', '1')];
    const informer = informerOn(clock, api.client, { backoff: { baseMs: 1_000, maxMs: 1_000 } });
    const calls = record(informer);
    await informer.start();
    calls.length = 0;
    api.items = [obj('ns', 'a', '2')];
    api.fail(new ApiError(500, { message: 'etcd event received with PrevKv=nil' }));
    await settle();
    await clock.advance(1_000);
    expect(api.lists).toEqual([0, 1_000]); // a list, not a resumed watch
    expect(calls).toEqual(['update ns/a@1->2']);
    await informer.stop();
  });

  it('a throwing handler does not keep the others from the event', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    const informer = informerOn(clock, api.client);
    informer.addEventHandler({
      add: () => {
        throw new Error('boom');
      },
    });
    const calls = record(informer);
    await informer.start();
    api.emit({ type: 'ADDED', object: obj('ns', 'a', '1') });
    expect(calls).toEqual(['add ns/a@1']);
    await informer.stop();
  });
});

describe('ResilientInformer indexes', () => {
  const owned = (ns: string, name: string, rv: string, owner: string, team?: string) =>
    obj(ns, name, rv, {
      ownerReferences: [{ apiVersion: 'v1', kind: 'AgentCard', name: owner, uid: owner, controller: true }],
      ...(team ? { labels: { team } } : {}),
    });

  it('file objects by namespace, owner and label, and follow adds, changes, deletes and relists', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    api.items = [
      owned('x', 'a', '1', 'card1', 'red'),
      owned('x', 'b', '1', 'card2'),
      owned('y', 'c', '1', 'card1'),
    ];
    const informer = informerOn(clock, api.client, { indexers: { owner: byControllerOwner } });
    informer.addIndexers({ team: byLabel('team') });
    await informer.start();
    expect(names(informer.byIndex(NAMESPACE_INDEX, 'x'))).toEqual(['x/a', 'x/b']);
    expect(names(informer.list('y'))).toEqual(['y/c']);
    expect(names(informer.byIndex('owner', 'AgentCard/card1'))).toEqual(['x/a', 'y/c']);
    expect(names(informer.byIndex('team', 'red'))).toEqual(['x/a']);
    expect(informer.byIndex('team', 'blue')).toEqual([]);

    // A label changes, an owner goes, an object is deleted, a new one arrives.
    api.emit({ type: 'MODIFIED', object: owned('x', 'b', '2', 'card2', 'red') });
    api.emit({ type: 'MODIFIED', object: owned('x', 'a', '3', 'card1', 'blue') });
    api.emit({ type: 'DELETED', object: owned('y', 'c', '4', 'card1') });
    api.emit({ type: 'ADDED', object: obj('z', 'd', '5') });
    expect(names(informer.byIndex('team', 'red'))).toEqual(['x/b']);
    expect(names(informer.byIndex('team', 'blue'))).toEqual(['x/a']);
    expect(names(informer.byIndex('owner', 'AgentCard/card1'))).toEqual(['x/a']);
    expect(informer.list('y')).toEqual([]);
    expect(informer.indexValues(NAMESPACE_INDEX).sort()).toEqual(['x', 'z']); // no empty value kept
    expect(informer.indexValues('owner').sort()).toEqual(['AgentCard/card1', 'AgentCard/card2']);

    // A relist rebuilds the indexes from what the server has now.
    api.items = [owned('y', 'e', '6', 'card3', 'red')];
    api.version = '7';
    api.expire();
    await settle();
    expect(names(informer.byIndex('team', 'red'))).toEqual(['y/e']);
    expect(informer.indexValues('owner')).toEqual(['AgentCard/card3']);
    expect(informer.list('x')).toEqual([]);
    await informer.stop();
  });

  it('answers with the cached objects themselves (no copy), and files objects cached before the index', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    api.items = [owned('x', 'a', '1', 'card1', 'red')];
    const informer = informerOn(clock, api.client);
    await informer.start();
    informer.addIndexers({ team: byLabel('team') });
    expect(informer.byIndex('team', 'red')[0]).toBe(informer.get('a', 'x'));
  });

  it('refuses an unknown index and a second index of the same name', () => {
    const informer = informerOn(new ManualClock(), fakeApi(new ManualClock()).client);
    expect(() => informer.byIndex('nope', 'x')).toThrow(/has no index named nope/);
    expect(() => informer.addIndexers({ [NAMESPACE_INDEX]: () => [] })).toThrow(/already has an index named/);
  });
});

describe('ResilientInformer.waitForSync', () => {
  it('ends in the clock step that synced the informer, after refused lists', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    api.refuse = true;
    const informer = informerOn(clock, api.client, { backoff: { baseMs: 1_000, maxMs: 4_000 } });
    await informer.start();
    let synced = false;
    void informer.waitForSync().then(() => (synced = true));
    await clock.advance(1_000);
    expect(synced).toBe(false);
    api.refuse = false;
    await clock.advance(1_999);
    expect(synced).toBe(false); // the second retry is due at 3 s
    await clock.advance(1);
    expect(synced).toBe(true);
    expect(api.lists).toEqual([0, 1_000, 3_000]);
    await informer.stop();
    expect(clock.pending).toBe(0);
  });

  it('waits for an informer not started yet, and ends once it has started and synced', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    const informer = informerOn(clock, api.client);
    let synced = false;
    const waiting = informer.waitForSync().then(() => (synced = true));
    await settle();
    expect(synced).toBe(false);
    await informer.start();
    await waiting;
    expect(synced).toBe(true);
    await informer.stop();
  });

  it('rejects when its signal aborts or the informer stops first', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    api.refuse = true;
    const informer = informerOn(clock, api.client);
    await informer.start();
    const abort = new AbortController();
    const aborted = informer.waitForSync(abort.signal);
    const stopped = informer.waitForSync();
    abort.abort();
    await expect(aborted).rejects.toThrow(/stopped before it synced/);
    await informer.stop();
    await expect(stopped).rejects.toThrow(/stopped before it synced/);
    await expect(informer.waitForSync()).rejects.toThrow(/stopped before it synced/);
  });
});

describe('ResilientInformer restart jitter', () => {
  it('waits the jittered delay its random source gives, and nothing before it', async () => {
    const clock = new ManualClock();
    const api = fakeApi(clock);
    api.refuse = true;
    const informer = informerOn(clock, api.client, {
      backoff: { baseMs: 1_000, maxMs: 30_000, jitter: 'equal', random: () => 0.5 },
    });
    await informer.start();
    await clock.advance(749);
    expect(api.lists).toEqual([0]);
    await clock.advance(1); // 1 s with equal jitter at 0.5: 750 ms
    await clock.advance(1_500); // then 2 s: 1.5 s
    expect(api.lists).toEqual([0, 750, 2_250]);
    await informer.stop();
  });

  it('spreads the restarts of informers that failed together by default', async () => {
    const clock = new ManualClock();
    const apis = Array.from({ length: 20 }, () => fakeApi(clock));
    for (const api of apis) api.refuse = true;
    const informers = apis.map((api) => informerOn(clock, api.client));
    await Promise.all(informers.map((i) => i.start()));
    await clock.advance(1_000);
    const retries = apis.map((api) => api.lists[1]!);
    // Equal jitter on a 1 s base: each retry in [500, 1000), and not all at once.
    expect(Math.min(...retries)).toBeGreaterThanOrEqual(500);
    expect(Math.max(...retries)).toBeLessThan(1_000);
    expect(new Set(retries).size).toBeGreaterThan(1);
    await Promise.all(informers.map((i) => i.stop()));
  });
});
