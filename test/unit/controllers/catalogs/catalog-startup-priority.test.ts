// What a catalog shows the shared start-up rule (controllers/catalogs/startup-priority.ts).
import type { V1ConfigMap } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { CATALOG_FILES } from '../../../../operator/catalog/build.ts';
import { digestOf } from '../../../../operator/runtime/configmaps.ts';
import type { CatalogObject } from '../../../../operator/controllers/catalogs/plan.ts';
import { catalogStartupView } from '../../../../operator/controllers/catalogs/startup-priority.ts';
import { startupPriority } from '../../../../operator/runtime/startup.ts';

const document = '{"specVersion":"1.0","entries":[]}';

function catalog(
  generation: number,
  status?: Record<string, unknown>,
  namespace: string | undefined = 'shop',
) {
  return {
    metadata: { name: 'agents', ...(namespace ? { namespace } : {}), uid: 'u1', generation },
    spec: { publisher: 'example.com' },
    ...(status ? { status } : {}),
  } satisfies CatalogObject;
}

const published = (observedGeneration: number, namespace = 'shop') => ({
  observedGeneration,
  digest: digestOf(document),
  configMap: 'agents-ai-catalog',
  namespace,
  entries: 0,
});

/** A cache holding `body` as the root ConfigMap's catalog (none: nothing cached). */
function cache(body: string | undefined, watched = ['shop']) {
  const asked: string[] = [];
  const lookup = (namespace: string, name: string): V1ConfigMap | undefined | 'unknown' => {
    asked.push(`${namespace}/${name}`);
    if (!watched.includes(namespace)) return 'unknown';
    return body === undefined
      ? undefined
      : {
          metadata: { name, namespace },
          data: { [CATALOG_FILES.catalog]: body, [CATALOG_FILES.page]: '<p>' },
        };
  };
  return { lookup, asked };
}

const priority = (c: CatalogObject, lookup: ReturnType<typeof cache>['lookup']) =>
  startupPriority(catalogStartupView(c, lookup));

describe('catalogStartupView', () => {
  it('re-plans a catalog as last reconciled in the background, reading its root ConfigMap from the status', () => {
    const c = cache(document);
    expect(priority(catalog(2, published(2)), c.lookup)).toBe('low');
    expect(c.asked).toEqual(['shop/agents-ai-catalog']);
  });

  it('puts a catalog whose spec changed, or never reconciled, first', () => {
    expect(priority(catalog(3, published(2)), cache(document).lookup)).toBe('high');
    expect(priority(catalog(1), cache(undefined).lookup)).toBe('high');
  });

  it('puts a catalog whose root ConfigMap is gone or holds another catalog first', () => {
    expect(priority(catalog(2, published(2)), cache(undefined).lookup)).toBe('high');
    expect(priority(catalog(2, published(2)), cache('{"edited":true}').lookup)).toBe('high');
  });

  it('leaves a catalog that never published (observed, e.g. an unreadable key) in the background', () => {
    const c = cache(undefined);
    expect(priority(catalog(2, { observedGeneration: 2, conditions: [] }), c.lookup)).toBe('low');
    expect(c.asked).toEqual([]);
  });

  it('reads a ClusterAgentCatalog in the namespace it published to; an unwatched one counts only its generation', () => {
    const watched = cache(undefined, ['agentcard-system']);
    expect(priority(catalog(2, published(2, 'agentcard-system'), undefined), watched.lookup)).toBe('high');
    expect(watched.asked).toEqual(['agentcard-system/agents-ai-catalog']);
    const unwatched = cache(undefined, []);
    expect(priority(catalog(2, published(2, 'agentcard-system'), undefined), unwatched.lookup)).toBe('low');
    expect(priority(catalog(3, published(2, 'agentcard-system'), undefined), unwatched.lookup)).toBe('high');
  });

  it('leaves a catalog being deleted in the background', () => {
    const deleting = catalog(3, published(2));
    (deleting.metadata as { deletionTimestamp?: string }).deletionTimestamp = '2026-01-01T00:00:00Z';
    expect(priority(deleting, cache(undefined).lookup)).toBe('low');
  });
});
