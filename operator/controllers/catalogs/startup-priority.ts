/**
 * What a catalog shows the start-up rule (runtime/startup.ts), the same rule as AgentCards': a
 * catalog whose spec changed since its last reconcile, or whose published root ConfigMap
 * (`status.namespace`/`status.configMap`) is gone or holds another `ai-catalog.json` than
 * `status.digest` names, is queued `high` when this replica starts reconciling, before the
 * re-plan of every other catalog.
 *
 * Only the root document is compared: a partition edited by hand is found by the re-plan (low),
 * as a changed Secret is for cards. A ClusterAgentCatalog that
 * publishes in a namespace the operator does not watch has no cached ConfigMap to compare: only
 * its generation counts here.
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import { CATALOG_FILES } from '../../catalog/build.ts';
import type { StartupView } from '../../runtime/startup.ts';
import { ownedCatalogStatus, type CatalogObject } from './plan.ts';

/**
 * `configMap(namespace, name)`: the cached ConfigMap, `undefined` when it is not there, or
 * `'unknown'` when that namespace is not cached.
 */
export function catalogStartupView(
  catalog: CatalogObject,
  configMap: (namespace: string, name: string) => V1ConfigMap | undefined | 'unknown',
): StartupView {
  const status = ownedCatalogStatus(catalog.status);
  const published = status.digest !== undefined && status.configMap !== undefined;
  const live = published
    ? configMap(status.namespace ?? catalog.metadata.namespace ?? '', status.configMap!)
    : undefined;
  return {
    generation: catalog.metadata.generation,
    observedGeneration: status.observedGeneration,
    deleting: !!catalog.metadata.deletionTimestamp,
    publishedDigest: published ? status.digest : undefined,
    served: live === 'unknown' ? 'unknown' : live?.data?.[CATALOG_FILES.catalog],
  };
}
