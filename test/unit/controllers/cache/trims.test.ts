import { describe, expect, it } from 'vitest';
import type { KubernetesObject, V1Namespace } from '@kubernetes/client-node';
import {
  dropLastApplied,
  LAST_APPLIED_ANNOTATION,
  trimAgentCard,
  trimNamespace,
  trimService,
  trimToIdentity,
  type CachedAgentCard,
} from '../../../../operator/controllers/cache/collections.ts';
import { trimConfigMap } from '../../../../operator/controllers/cache/configmap-trim.ts';
import { trimPod } from '../../../../operator/serving/pod-index.ts';
import { isFastObject } from '../../../support/v8-shape.ts';
import {
  shareInterfaceUrls,
  shareStatusStrings,
  StringTable,
} from '../../../../operator/controllers/cache/status-strings.ts';
import { sortedJson } from '../../../../operator/runtime/sorted-json.ts';

describe('dropLastApplied (the AgentCard cache)', () => {
  it("drops kubectl's copy of the object and keeps every other annotation", () => {
    const spec = { card: { name: 'W', description: 'd'.repeat(1_000) } };
    const obj: KubernetesObject & { spec: unknown } = {
      metadata: {
        name: 'w',
        namespace: 'ns',
        annotations: {
          [LAST_APPLIED_ANNOTATION]: JSON.stringify({ metadata: { name: 'w' }, spec }),
          'agentcard.dev/card-url': 'https://w.example/.well-known/agent-card.json',
        },
      },
      spec,
    };
    dropLastApplied(obj);
    expect(obj.metadata!.annotations).toEqual({
      'agentcard.dev/card-url': 'https://w.example/.well-known/agent-card.json',
    });
    expect(JSON.stringify(obj).length).toBeLessThan(1_200);
    expect(obj.spec).toBe(spec);
  });

  it('leaves objects without it as they are', () => {
    const annotations = { a: 'b' };
    const obj: KubernetesObject = { metadata: { name: 'w', annotations } };
    dropLastApplied(obj);
    expect(obj.metadata!.annotations).toBe(annotations);
    const bare: KubernetesObject = { metadata: { name: 'w' } };
    dropLastApplied(bare);
    expect(bare.metadata).toEqual({ name: 'w' });
  });
});

/** An AgentCard as a watch event brings it: parsed from JSON, its status strings each a new copy. */
function parsedCard(name: string): CachedAgentCard {
  return JSON.parse(
    JSON.stringify({
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'AgentCard',
      metadata: { name, namespace: 'agents', annotations: { [LAST_APPLIED_ANNOTATION]: '{}' } },
      spec: { card: { name } },
      status: {
        conditions: [
          {
            type: 'Published',
            status: 'True',
            reason: 'Published',
            message: `ConfigMap ${name}-agent-card`,
            lastTransitionTime: '2026-12-07T06:57:16Z',
            observedGeneration: 1,
          },
          {
            type: 'Ready',
            status: 'True',
            reason: 'Ready',
            message: 'accepted, signed, published, interfaces reachable',
            lastTransitionTime: '2026-12-07T06:57:31Z',
            observedGeneration: 1,
          },
        ],
        interfaces: [
          {
            url: `http://${name}.agents.svc:8080/a2a`,
            protocolBinding: 'JSONRPC',
            protocolVersion: '1.0',
            reachable: true,
            reason: 'Reachable',
            message: 'JSON-RPC A2A 1.0: TaskNotFound (-32001) as expected',
            latencyMs: 5,
            lastProbeTime: '2026-12-07T06:57:31.986Z',
            lastTransitionTime: '2026-12-07T06:57:31.986Z',
          },
        ],
      },
    }),
  ) as CachedAgentCard;
}

describe('trimAgentCard (the AgentCard cache)', () => {
  it("drops kubectl's copy and leaves every value and field as it was", () => {
    const card = parsedCard('weather');
    const before = parsedCard('weather');
    trimAgentCard(card);
    expect(card.metadata.annotations).toEqual({});
    expect(sortedJson(card.status)).toBe(sortedJson(before.status));
    const status = card.status as { conditions: object[]; interfaces: object[] };
    const was = before.status as typeof status;
    status.conditions.forEach((c, i) => expect(Object.keys(c)).toEqual(Object.keys(was.conditions[i]!)));
    status.interfaces.forEach((f, i) => expect(Object.keys(f)).toEqual(Object.keys(was.interfaces[i]!)));
  });

  it('shares the vocabulary of conditions and interfaces, never URLs or times', () => {
    const table = new StringTable();
    shareStatusStrings(parsedCard('a'), table);
    // Published, True, ConfigMap a-agent-card, Ready, the Ready message; JSONRPC, 1.0, Reachable,
    // the probe's message: 9 distinct values.
    expect(table.size).toBe(9);
    shareStatusStrings(parsedCard('b'), table);
    // Only b's own Published message is new.
    expect(table.size).toBe(10);
  });

  it("shares the conditions' times from a table of their own, never the probes' times", () => {
    const words = new StringTable();
    const times = new StringTable();
    const a = parsedCard('a');
    const b = parsedCard('b');
    shareStatusStrings(a, words, times);
    shareStatusStrings(b, words, times);
    // The two conditions' times of the fixture: 06:57:16 and 06:57:31.
    expect(times.size).toBe(2);
    expect(words.size).toBe(10);
    type Status = {
      conditions: Array<{ lastTransitionTime: string }>;
      interfaces: Array<{ lastProbeTime: string }>;
    };
    const [sa, sb] = [a.status as Status, b.status as Status];
    expect(sb.conditions[0]!.lastTransitionTime).toBe(sa.conditions[0]!.lastTransitionTime);
    expect(sb.interfaces[0]!.lastProbeTime).toBe('2026-12-07T06:57:31.986Z');
  });

  it("keeps every interface's URL, whatever the shapes of spec and status", () => {
    for (const card of [
      parsedCard('a'),
      {
        spec: { card: { supportedInterfaces: [{ url: 'http://x' }, null, 3] } },
        status: { interfaces: [{ url: 'http://y' }, 'no', { url: 7 }] },
      },
      { spec: { card: { supportedInterfaces: 'no' } }, status: { interfaces: [{ url: 'http://x' }] } },
      { spec: null, status: undefined },
    ]) {
      const text = JSON.stringify(card);
      shareInterfaceUrls(card as { spec?: unknown; status?: unknown });
      expect(JSON.stringify(card)).toBe(text);
    }
  });

  it('holds a bounded number of strings, starting over when full', () => {
    const table = new StringTable(3);
    for (const v of ['a', 'b', 'c', 'a', 'd', 'e']) expect(table.share(`${v}`)).toBe(v);
    expect(table.size).toBeLessThanOrEqual(3);
    expect(table.size).toBe(2); // emptied at 'd', then d and e
  });

  it('leaves statuses of unexpected shapes alone', () => {
    const table = new StringTable();
    for (const status of [
      undefined,
      null,
      'x',
      { conditions: 'no' },
      { conditions: [null, 3, { type: 7 }] },
    ]) {
      const card = { metadata: { name: 'x' }, status } as unknown as CachedAgentCard;
      const text = JSON.stringify(card);
      shareStatusStrings(card, table);
      expect(JSON.stringify(card)).toBe(text);
    }
    expect(table.size).toBe(0);
  });
});

describe('trimNamespace (the shared Namespace cache)', () => {
  it('keeps the name, labels and version, and drops the rest', () => {
    const labels = { team: 'a', 'kubernetes.io/metadata.name': 'shop' };
    const ns: V1Namespace = {
      metadata: {
        name: 'shop',
        labels,
        resourceVersion: '42',
        uid: 'u',
        annotations: { [LAST_APPLIED_ANNOTATION]: '{"big":"copy"}' },
        managedFields: [{ manager: 'kubectl' }],
      },
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Active' },
    };
    trimNamespace(ns);
    expect(ns).toEqual({ metadata: { name: 'shop', labels, resourceVersion: '42' } });
  });
});

describe('every trim of a cached object', () => {
  // A parsed object that loses a property to `delete` becomes a dictionary object, larger and
  // slower; the trims replace what they drop instead. Each object here is parsed, as from a watch.
  const parsed = <T>(obj: unknown): T => JSON.parse(JSON.stringify(obj)) as T;
  const metadata = {
    name: 'x',
    namespace: 'ns',
    uid: 'u',
    resourceVersion: '7',
    labels: { 'agentcard.dev/card': 'x' },
    annotations: { [LAST_APPLIED_ANNOTATION]: '{}', 'agentcard.dev/inject': 'x' },
  };
  const trims: Array<[string, (obj: never) => void, object]> = [
    ['trimAgentCard', trimAgentCard, { metadata, spec: { card: {} }, status: { conditions: [] } }],
    [
      'trimNamespace',
      trimNamespace,
      { metadata, spec: { finalizers: ['kubernetes'] }, status: { phase: 'Active' } },
    ],
    [
      'trimService',
      trimService,
      { metadata, spec: { selector: { a: 'b' }, ports: [{ port: 80 }] }, status: {} },
    ],
    ['trimConfigMap', trimConfigMap, { metadata, data: { 'agent-card.json': '{}', other: 'x'.repeat(100) } }],
    [
      'trimPod',
      trimPod,
      { metadata, spec: { containers: [{ name: 'a', image: 'i' }] }, status: { phase: 'Running' } },
    ],
    ['trimToIdentity', trimToIdentity, { metadata, spec: {} }],
  ];
  it.each(trims)('%s keeps the object and its metadata fast', (_name, trim, obj) => {
    const cached = parsed<{ metadata: object }>(obj);
    trim(cached as never);
    expect(isFastObject(cached)).toBe(true);
    expect(isFastObject(cached.metadata)).toBe(true);
  });
});
