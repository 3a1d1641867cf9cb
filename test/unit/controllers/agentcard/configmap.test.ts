import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  configMapNameProblem,
  desiredConfigMap,
} from '../../../../operator/controllers/agentcard/configmap.ts';
import { configMapUpToDate, digestOf, byteLength } from '../../../../operator/runtime/configmaps.ts';
import { configMapName } from '../../../../operator/api/names.ts';

const owner = {
  apiVersion: 'agentcard.dev/v1alpha1',
  kind: 'AgentCard',
  name: 'weather',
  namespace: 'agents',
  uid: 'u-1',
};
const files = {
  card: '{"name":"Wé"}',
  legacyCard: '{"name":"W"}',
  jwks: '{"keys":[]}',
  cacheMaxAgeSeconds: 300,
};

describe('desired ConfigMap', () => {
  it('follows the contract: name, labels, controller owner reference, data keys', () => {
    const cm = desiredConfigMap(owner, files);
    expect(cm.metadata).toEqual({
      name: 'weather-agent-card',
      namespace: 'agents',
      labels: { 'app.kubernetes.io/managed-by': 'agentcard-operator', 'agentcard.dev/card': 'weather' },
      ownerReferences: [
        {
          apiVersion: 'agentcard.dev/v1alpha1',
          kind: 'AgentCard',
          name: 'weather',
          uid: 'u-1',
          controller: true,
        },
      ],
    });
    expect(cm.data).toEqual({
      'agent-card.json': files.card,
      'agent.json': files.legacyCard,
      'jwks.json': '{"keys":[]}',
      'cache-max-age-seconds': '300',
      'cache-max-age-seconds.place2-digit3': '3',
      'cache-max-age-seconds.place1-digit0': '0',
      'cache-max-age-seconds.place0-digit0': '0',
    });
  });

  it('is up to date only when data, our labels and our owner reference all match', () => {
    const desired = desiredConfigMap(owner, files);
    const live = structuredClone(desired) as unknown as Parameters<typeof configMapUpToDate>[0] & object;
    expect(configMapUpToDate(live, desired)).toBe(true);
    // Extra labels and owners from someone else do not matter.
    const decorated = structuredClone(desired);
    decorated.metadata.labels['team'] = 'x';
    decorated.metadata.ownerReferences.push({
      apiVersion: 'v1',
      kind: 'Thing',
      name: 't',
      uid: 'u-2',
      controller: false,
    });
    expect(configMapUpToDate(decorated, desired)).toBe(true);

    expect(configMapUpToDate(undefined, desired)).toBe(false);
    const edited = structuredClone(desired);
    edited.data['agent-card.json'] = '{}';
    expect(configMapUpToDate(edited, desired)).toBe(false);
    const extraKey = structuredClone(desired);
    extraKey.data['extra'] = '1';
    expect(configMapUpToDate(extraKey, desired)).toBe(false);
    const relabelled = structuredClone(desired);
    relabelled.metadata.labels['agentcard.dev/card'] = 'other';
    expect(configMapUpToDate(relabelled, desired)).toBe(false);
    const otherOwner = structuredClone(desired);
    otherOwner.metadata.ownerReferences[0]!.uid = 'u-old';
    expect(configMapUpToDate(otherOwner, desired)).toBe(false);
    expect(
      configMapUpToDate({ ...desired, metadata: { ...desired.metadata, deletionTimestamp: 'x' } }, desired),
    ).toBe(false);
  });

  it('digest and size are of the UTF-8 bytes', () => {
    expect(digestOf(files.card)).toBe(
      `sha256:${createHash('sha256').update(Buffer.from(files.card, 'utf8')).digest('hex')}`,
    );
    expect(byteLength(files.card)).toBe(14);
  });

  it('refuses a name that would make the ConfigMap name too long', () => {
    expect(configMapName('a')).toBe('a-agent-card');
    expect(configMapNameProblem('a'.repeat(242))).toBeUndefined();
    expect(configMapNameProblem('a'.repeat(243))).toMatch(/254 characters .*at most 242/);
  });
});
