/**
 * What the ConfigMap cache keeps of a published card's ConfigMap (a transform at ingest, as
 * controller-runtime's cache TransformFunc): the metadata the readers use, the signed cards
 * verbatim, and a digest in place of every other value.
 *
 * The readers, and what they need:
 * - the reconcile (plan.ts): the signed cards, to keep valid signatures instead of signing again
 *   (resign.ts: ES256 signatures are randomized, so only the live bytes can be kept), and to say
 *   whether a card is served; whether the live data is what it would write (configMapUpToDate),
 *   for which a digest of the other values is enough, computed the same way for the desired data;
 *   the labels, controller ownerReference and deletionTimestamp;
 * - the ConfigMap event handler: name, namespace, resourceVersion, labels and ownerReferences;
 * - inline catalogs (catalogs/controller.ts): the signed card of an audience, verbatim;
 * - the host conflicts of central serving (serving/central-hosts.ts): `serving-hosts`, verbatim.
 * The v0.3 cards are signed too (audiences/sign.ts) and kept verbatim for the same reason; the
 * JWKS is cached as a digest.
 * Catalog ConfigMaps are left whole: the catalog plan compares and reuses their pages.
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import { CARD_LABEL, CATALOG_LABEL, SERVING_HOSTS_KEY } from '../../api/names.ts';
import { DATA_KEYS } from '../../api/names.ts';
import { valueDigest } from '../../runtime/configmaps.ts';

/** A cached ConfigMap: `data` holds the values kept verbatim, `dataDigests` the digests of the rest. */
export type CachedConfigMap = V1ConfigMap & { dataDigests?: Record<string, string> };

const DIGEST_LENGTH = valueDigest('').length;

/** Whether a data key holds a signed card, v1.0 or v0.3 (the default audience's or a host's). */
export function isSignedCardKey(key: string): boolean {
  return (
    key === DATA_KEYS.card ||
    key.endsWith(`.${DATA_KEYS.card}`) ||
    key === DATA_KEYS.legacyCard ||
    key.endsWith(`.${DATA_KEYS.legacyCard}`)
  );
}

/** Trims a card ConfigMap in place before it is cached; other ConfigMaps keep their data. */
export function trimConfigMap(cm: CachedConfigMap): void {
  const m = cm.metadata ?? {};
  // Replaced, not pruned with delete, which would switch V8 to slower and larger dictionary objects.
  cm.metadata = {
    name: m.name,
    namespace: m.namespace,
    resourceVersion: m.resourceVersion,
    ...(m.labels ? { labels: m.labels } : {}),
    ...(m.ownerReferences
      ? {
          ownerReferences: m.ownerReferences.map((r) => ({
            apiVersion: r.apiVersion,
            kind: r.kind,
            name: r.name,
            uid: r.uid,
            ...(r.controller !== undefined ? { controller: r.controller } : {}),
          })),
        }
      : {}),
    ...(m.deletionTimestamp ? { deletionTimestamp: m.deletionTimestamp } : {}),
  };
  const labels = m.labels ?? {};
  if (labels[CARD_LABEL] === undefined || labels[CATALOG_LABEL] !== undefined || !cm.data) return;
  const data: Record<string, string> = {};
  const dataDigests: Record<string, string> = {};
  for (const [key, value] of Object.entries(cm.data)) {
    // A value no longer than its digest (cache-max-age-seconds) is kept as it is; so are the
    // central card server's hosts, for the host conflicts (serving/central-hosts.ts).
    if (isSignedCardKey(key) || key === SERVING_HOSTS_KEY || value.length <= DIGEST_LENGTH) data[key] = value;
    else dataDigests[key] = valueDigest(value);
  }
  cm.data = data;
  cm.dataDigests = dataDigests;
}
