import { describe, expect, it } from 'vitest';
import type { V1ConfigMap } from '@kubernetes/client-node';
import {
  trimConfigMap,
  type CachedConfigMap,
} from '../../../../operator/controllers/cache/configmap-trim.ts';
import { desiredConfigMap } from '../../../../operator/controllers/agentcard/configmap.ts';
import { configMapUpToDate, valueDigest } from '../../../../operator/runtime/configmaps.ts';
import { variantData } from '../../../../operator/controllers/agentcard/audiences/publish.ts';

const owner = {
  apiVersion: 'agentcard.dev/v1alpha1',
  kind: 'AgentCard',
  name: 'w',
  namespace: 'ns',
  uid: 'u-1',
};
const files = {
  card: '{"name":"W","signatures":[]}',
  legacyCard: '{"name":"W","protocolVersion":"0.3.0","url":"https://w.example/a2a"}',
  jwks: '{"keys":[{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"}]}',
  cacheMaxAgeSeconds: 300,
  variantData: variantData([
    {
      name: 'partners',
      hosts: ['a.example', '*.b.example'],
      card: '{"name":"P"}',
      legacyCard: '{"name":"p","protocolVersion":"0.3.0","url":"https://a.example/a2a"}',
    },
  ]),
};

/** The desired ConfigMap as the API server returns it: JSON, with server-set metadata. */
function live(): CachedConfigMap {
  const cm = JSON.parse(JSON.stringify(desiredConfigMap(owner, files))) as V1ConfigMap;
  Object.assign(cm.metadata!, {
    uid: 'cm-1',
    resourceVersion: '42',
    creationTimestamp: '2026-01-01T00:00:00Z',
    annotations: { note: 'x'.repeat(1000) },
  });
  cm.metadata!.ownerReferences![0]!.blockOwnerDeletion = true;
  return cm;
}

describe('trimConfigMap (the card ConfigMap cache)', () => {
  it('keeps the signed cards (v1.0 and v0.3) verbatim and only a digest of every other value', () => {
    const cm = live();
    trimConfigMap(cm);
    const legacy = '{"name":"p","protocolVersion":"0.3.0","url":"https://a.example/a2a"}';
    expect(cm.data).toEqual({
      'agent-card.json': files.card,
      'agent.json': files.legacyCard,
      'host.a.example.agent-card.json': '{"name":"P"}',
      'host.a.example.agent.json': legacy,
      'wildcard.b.example.agent-card.json': '{"name":"P"}',
      'wildcard.b.example.agent.json': legacy,
      'cache-max-age-seconds': '300',
      'cache-max-age-seconds.place2-digit3': '3',
      'cache-max-age-seconds.place1-digit0': '0',
      'cache-max-age-seconds.place0-digit0': '0',
    });
    expect(cm.dataDigests).toEqual({ 'jwks.json': valueDigest(files.jwks) });
  });

  it('keeps the metadata its readers use and drops the rest', () => {
    const cm = live();
    trimConfigMap(cm);
    expect(cm.metadata).toEqual({
      name: 'w-agent-card',
      namespace: 'ns',
      resourceVersion: '42',
      labels: { 'app.kubernetes.io/managed-by': 'agentcard-operator', 'agentcard.dev/card': 'w' },
      ownerReferences: [
        { apiVersion: 'agentcard.dev/v1alpha1', kind: 'AgentCard', name: 'w', uid: 'u-1', controller: true },
      ],
    });
    const deleting = live();
    deleting.metadata!.deletionTimestamp = new Date('2026-01-02T00:00:00Z');
    trimConfigMap(deleting);
    expect(deleting.metadata!.deletionTimestamp).toBeDefined();
  });

  it('still tells whether the live data is what would be written', () => {
    const cm = live();
    trimConfigMap(cm);
    expect(configMapUpToDate(cm, desiredConfigMap(owner, files))).toBe(true);
    // A change in a value held as a digest, or in a signed card, or a key less, is seen.
    expect(configMapUpToDate(cm, desiredConfigMap(owner, { ...files, legacyCard: '{"name":"X"}' }))).toBe(
      false,
    );
    expect(configMapUpToDate(cm, desiredConfigMap(owner, { ...files, jwks: '{"keys":[]}' }))).toBe(false);
    expect(configMapUpToDate(cm, desiredConfigMap(owner, { ...files, cacheMaxAgeSeconds: 60 }))).toBe(false);
    expect(configMapUpToDate(cm, desiredConfigMap(owner, { ...files, card: '{"name":"Y"}' }))).toBe(false);
    expect(configMapUpToDate(cm, desiredConfigMap(owner, { ...files, variantData: {} }))).toBe(false);
  });

  it('leaves catalog ConfigMaps and ConfigMaps of no card with their data', () => {
    const catalog = live();
    catalog.metadata!.labels = { 'agentcard.dev/catalog': 'c', 'agentcard.dev/card': 'w' };
    trimConfigMap(catalog);
    expect(catalog.data!['agent.json']).toBe(files.legacyCard);
    expect(catalog.dataDigests).toBeUndefined();
    const other = live();
    other.metadata!.labels = { 'app.kubernetes.io/managed-by': 'agentcard-operator' };
    trimConfigMap(other);
    expect(other.data!['jwks.json']).toBe(files.jwks);
  });
});
