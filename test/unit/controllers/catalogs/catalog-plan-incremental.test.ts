// A catalog decision with the memo of the last published one (an incremental rebuild) gives the
// same ConfigMaps as one without (a full rebuild from the published documents), and the memo is
// not trusted once the published documents are not the ones it made.
import { describe, expect, it } from 'vitest';
import type { CardView } from '../../../../operator/catalog/entries.ts';
import type { ConfigMapObject } from '../../../../operator/runtime/configmaps.ts';
import {
  decideCatalog,
  type CatalogMemo,
  type CatalogPlanInput,
} from '../../../../operator/controllers/catalogs/plan.ts';
import { minimalCard } from '../../../support/cards.ts';

const view = (name: string, version: number, ready = true): CardView => ({
  namespace: 'team',
  name,
  labels: {},
  annotations: {},
  card: { ...minimalCard(), name: `Agent ${name}`, version: `1.0.${version}` },
  ready: ready ? 'True' : 'False',
  signed: false,
});

function input(
  cards: readonly CardView[],
  live: Map<string, ConfigMapObject>,
  step: number,
  memo?: CatalogMemo,
): CatalogPlanInput {
  return {
    kind: 'AgentCatalog',
    catalog: {
      metadata: { name: 'team', namespace: 'team', uid: 'uid-1', generation: 1 },
      spec: { publisher: 'example.com' },
    },
    publishNamespace: 'team',
    cards,
    namespaceLabels: () => ({}),
    secrets: new Map(),
    liveConfigMap: (name) => live.get(name),
    liveNames: [...live.keys()],
    now: new Date(Date.UTC(2026, 11, 1, 0, step)),
    ...(memo ? { memo } : {}),
  };
}

const dataOf = (writes: readonly ConfigMapObject[] | undefined) =>
  (writes ?? []).map((cm) => [cm.metadata.name, cm.data]);

describe('an incremental catalog decision', () => {
  it('writes the same ConfigMaps as a full one over a random change sequence', async () => {
    let seed = 11;
    const rnd = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    // The controller hands the same view object while a card is unchanged.
    const cards = new Map<string, CardView>();
    for (let i = 0; i < 12; i++) cards.set(`agent-${i}`, view(`agent-${i}`, 0));
    const live = new Map<string, ConfigMapObject>();
    let memo: CatalogMemo | undefined;
    for (let step = 0; step < 20; step++) {
      for (let c = Math.floor(rnd() * 4); c > 0; c--) {
        const name = `agent-${Math.floor(rnd() * 16)}`;
        const r = rnd();
        if (r < 0.2) cards.delete(name);
        else cards.set(name, view(name, step, r < 0.9));
      }
      const list = [...cards.values()];
      const full = await decideCatalog(input(list, live, step));
      const incremental = await decideCatalog(input(list, live, step, memo));
      expect(dataOf(incremental.artifacts?.writes), `step ${step}`).toEqual(dataOf(full.artifacts?.writes));
      expect(incremental.artifacts?.published).toEqual(full.artifacts?.published);
      for (const cm of incremental.artifacts?.writes ?? []) live.set(cm.metadata.name, cm);
      memo = incremental.memo;
    }
  });

  it('is a full rebuild again once someone else changed the published catalog', async () => {
    const cards = [view('a', 1), view('b', 1)];
    const live = new Map<string, ConfigMapObject>();
    const first = await decideCatalog(input(cards, live, 0));
    for (const cm of first.artifacts!.writes) live.set(cm.metadata.name, cm);
    const name = first.artifacts!.writes[0]!.metadata.name;
    const original = live.get(name)!;
    live.set(name, { ...original, data: { ...original.data, 'ai-catalog.json': '{"entries":[]}' } });
    const next = await decideCatalog(input(cards, live, 1, first.memo));
    const full = await decideCatalog(input(cards, live, 1));
    // The memo would have kept everything; the edited ConfigMap is rebuilt from scratch instead.
    expect(dataOf(next.artifacts?.writes).map(([n]) => n)).toEqual([name]);
    expect(dataOf(next.artifacts?.writes)).toEqual(dataOf(full.artifacts?.writes));
  });
});
