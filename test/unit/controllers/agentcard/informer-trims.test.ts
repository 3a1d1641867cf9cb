import { describe, expect, it } from 'vitest';
import type { KubernetesObject, V1Namespace } from '@kubernetes/client-node';
import {
  dropLastApplied,
  LAST_APPLIED_ANNOTATION,
} from '../../../../operator/controllers/agentcard/informers.ts';
import { trimNamespace } from '../../../../operator/runtime/namespace-cache.ts';

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
