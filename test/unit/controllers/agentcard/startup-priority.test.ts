import { describe, expect, it } from 'vitest';
import { DATA_KEYS } from '../../../../operator/api/names.ts';
import { digestOf } from '../../../../operator/runtime/configmaps.ts';
import type { CachedConfigMap } from '../../../../operator/controllers/agentcard/configmap-cache.ts';
import type { AgentCardObject } from '../../../../operator/api/objects.ts';
import { cardStartupView } from '../../../../operator/controllers/agentcard/startup-priority.ts';
import { startupPriority as rule } from '../../../../operator/runtime/startup.ts';

const served = '{"name":"Recipe Agent"}';

function card(generation: number, status?: Record<string, unknown>): AgentCardObject {
  return {
    metadata: { name: 'recipes', namespace: 'shop', uid: 'u1', generation },
    spec: {},
    ...(status ? { status } : {}),
  };
}

const published = (observedGeneration: number, digest = digestOf(served)) => ({
  observedGeneration,
  card: { digest, bytes: served.length, version: '1.0.0', configMap: 'recipes-agent-card' },
});

const startupPriority = (c: AgentCardObject, cm: CachedConfigMap | undefined) => rule(cardStartupView(c, cm));

function configMap(body = served): CachedConfigMap {
  return { metadata: { name: 'recipes-agent-card', namespace: 'shop' }, data: { [DATA_KEYS.card]: body } };
}

describe('startupPriority', () => {
  it('re-plans a card whose spec and ConfigMap are as last reconciled in the background', () => {
    expect(startupPriority(card(3, published(3)), configMap())).toBe('low');
  });

  it('puts a card whose spec changed since it was last reconciled first', () => {
    expect(startupPriority(card(4, published(3)), configMap())).toBe('high');
  });

  it('puts a card never reconciled first (no status, or no observedGeneration)', () => {
    expect(startupPriority(card(1), undefined)).toBe('high');
    expect(startupPriority(card(1, { conditions: [] }), undefined)).toBe('high');
  });

  it('puts a published card whose ConfigMap is gone first', () => {
    expect(startupPriority(card(3, published(3)), undefined)).toBe('high');
    expect(startupPriority(card(3, published(3)), { metadata: { name: 'recipes-agent-card' } })).toBe('high');
  });

  it('puts a published card whose ConfigMap serves other bytes than status.card.digest first', () => {
    expect(startupPriority(card(3, published(3)), configMap('{"name":"Edited by hand"}'))).toBe('high');
  });

  it('leaves a card that was never published (an invalid spec, observed) in the background', () => {
    expect(startupPriority(card(2, { observedGeneration: 2, conditions: [] }), undefined)).toBe('low');
  });

  it('leaves a card being deleted in the background: garbage collection removes its ConfigMap', () => {
    const deleting = card(4, published(3));
    deleting.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
    expect(startupPriority(deleting, undefined)).toBe('low');
  });
});
