import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { summarizeServing, servingMessage } from '../../../operator/serving/pods.ts';

function pod(
  name: string,
  opts: { card?: string; sidecar?: 'init' | 'main'; phase?: string; ns?: string; deleting?: boolean },
): V1Pod {
  const sidecar = { name: 'agentcard-sidecar', image: 'x' };
  return {
    metadata: {
      name,
      namespace: opts.ns ?? 'team-a',
      ...(opts.card ? { annotations: { 'agentcard.dev/inject': opts.card } } : {}),
      ...(opts.deleting ? { deletionTimestamp: new Date() } : {}),
    },
    spec: {
      containers: [{ name: 'agent', image: 'a' }, ...(opts.sidecar === 'main' ? [sidecar] : [])],
      ...(opts.sidecar === 'init' ? { initContainers: [sidecar] } : {}),
    },
    status: { phase: opts.phase ?? 'Running' },
  };
}

describe('summarizeServing', () => {
  const card = { name: 'weather', namespace: 'team-a' };

  it('counts the Pods asking for the card and names those without the sidecar', () => {
    const summary = summarizeServing(card, [
      pod('a', { card: 'weather', sidecar: 'init' }),
      pod('b', { card: 'weather', sidecar: 'main' }),
      pod('d', { card: 'weather' }),
      pod('c', { card: 'team-a/weather' }),
      pod('other-card', { card: 'news' }),
      pod('no-annotation', {}),
      pod('other-ns', { card: 'weather', ns: 'team-b' }),
      pod('done', { card: 'weather', phase: 'Succeeded' }),
      pod('going', { card: 'weather', deleting: true }),
    ]);
    expect(summary).toEqual({ podsRequesting: 4, podsMissingSidecar: 2, missing: ['c', 'd'] });
    expect(servingMessage(summary)).toContain('2 of 4 Pods requesting this card run without the sidecar');
  });

  it('lists at most 20 names and says how many more', () => {
    const pods = Array.from({ length: 25 }, (_, i) =>
      pod(`p${String(i).padStart(2, '0')}`, { card: 'weather' }),
    );
    const summary = summarizeServing(card, pods);
    expect(summary.podsMissingSidecar).toBe(25);
    expect(summary.missing).toHaveLength(20);
    expect(servingMessage(summary)).toMatch(/p19 and 5 more$/);
    expect(servingMessage(summarizeServing(card, []))).toBeUndefined();
  });

  it('leaves out an empty list of Pods without the sidecar (no empty `Missing:` in kubectl describe)', () => {
    const summary = summarizeServing(card, [pod('a', { card: 'weather', sidecar: 'init' })]);
    expect(summary).toEqual({ podsRequesting: 1, podsMissingSidecar: 0 });
    expect(servingMessage(summary)).toBeUndefined();
  });
});
