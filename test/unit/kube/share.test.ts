import { describe, expect, it } from 'vitest';
import { shareUnchanged, shareWithPrevious } from '../../../operator/kube/share.ts';

/** Two versions of one AgentCard, each parsed anew as a watch event brings it. */
function versions() {
  const card = {
    metadata: { name: 'weather', namespace: 'agents', uid: 'u-1', resourceVersion: '1', labels: { a: 'b' } },
    spec: { card: { name: 'Weather', skills: [{ id: 'forecast', tags: ['weather'] }] } },
    status: {
      conditions: [
        { type: 'Published', status: 'True', lastTransitionTime: '2026-12-08T01:00:00Z' },
        { type: 'Ready', status: 'False', lastTransitionTime: '2026-12-08T01:00:00Z' },
      ],
    },
  };
  const text = JSON.stringify(card);
  const previous = JSON.parse(text) as typeof card;
  const next = JSON.parse(text) as typeof card;
  next.metadata.resourceVersion = '2';
  next.status.conditions[1]!.status = 'True';
  return { previous, next, text };
}

describe('shareWithPrevious', () => {
  it("gives the new version the previous version's unchanged parts, and keeps its changes", () => {
    const { previous, next } = versions();
    const result = shareWithPrevious(previous, next);
    expect(result).toBe(next);
    expect(next.spec).toBe(previous.spec);
    expect(next.metadata.labels).toBe(previous.metadata.labels);
    expect(next.metadata).not.toBe(previous.metadata);
    expect(next.metadata.resourceVersion).toBe('2');
    expect(next.status.conditions[0]).toBe(previous.status.conditions[0]);
    expect(next.status.conditions[1]).not.toBe(previous.status.conditions[1]);
    expect(next.status.conditions[1]!.status).toBe('True');
    expect(previous.status.conditions[1]!.status).toBe('False');
  });

  it('leaves the values of both versions as they were parsed', () => {
    const { previous, next, text } = versions();
    const expected = JSON.stringify(next);
    shareWithPrevious(previous, next);
    expect(JSON.stringify(next)).toBe(expected);
    expect(JSON.stringify(previous)).toBe(text);
  });

  it('returns the new object as it is without a previous version', () => {
    const { next } = versions();
    const spec = next.spec;
    expect(shareWithPrevious(undefined, next)).toBe(next);
    expect(next.spec).toBe(spec);
  });
});

describe('shareUnchanged', () => {
  it('is the previous value when the two are equal throughout', () => {
    const previous = { a: [1, { b: null, c: 'x' }], d: true };
    expect(shareUnchanged(previous, JSON.parse(JSON.stringify(previous)))).toBe(previous);
  });

  it('tells apart added, removed and changed keys and elements', () => {
    const previous = { keep: { x: 1 }, list: [{ n: 1 }, { n: 2 }], gone: 1 };
    const cases: Array<[string, (o: Record<string, unknown>) => void]> = [
      ['a key added', (o) => (o.extra = 1)],
      ['a key removed', (o) => delete o.gone],
      ['a value changed', (o) => (o.gone = 2)],
      ['an element added', (o) => (o.list as unknown[]).push({ n: 3 })],
      ['an element removed', (o) => (o.list as unknown[]).pop()],
      ['a type changed', (o) => (o.gone = '1')],
      ['an object for an array', (o) => (o.list = { 0: { n: 1 }, 1: { n: 2 } })],
    ];
    for (const [what, change] of cases) {
      const next = JSON.parse(JSON.stringify(previous)) as Record<string, unknown>;
      change(next);
      const expected = JSON.stringify(next);
      const shared = shareUnchanged(previous, next);
      expect(shared, what).toBe(next);
      expect(JSON.stringify(shared), what).toBe(expected);
      expect(next.keep, what).toBe(previous.keep);
    }
  });

  it('shares the elements an array keeps when it grows or shrinks', () => {
    const previous = [{ n: 1 }, { n: 2 }];
    const longer = [{ n: 1 }, { n: 2 }, { n: 3 }];
    expect(shareUnchanged(previous, longer)).toBe(longer);
    expect(longer[0]).toBe(previous[0]);
    expect(longer[1]).toBe(previous[1]);
    const shorter = [{ n: 1 }];
    expect(shareUnchanged(previous, shorter)).toBe(shorter);
    expect(shorter[0]).toBe(previous[0]);
  });

  it('takes null, primitives and mismatched kinds as they come', () => {
    expect(shareUnchanged(null, { a: 1 })).toEqual({ a: 1 });
    expect(shareUnchanged({ a: 1 }, null)).toBe(null);
    expect(shareUnchanged(1, 2)).toBe(2);
    expect(shareUnchanged('s', 's')).toBe('s');
    expect(shareUnchanged([1], { 0: 1 })).toEqual({ 0: 1 });
  });
});
