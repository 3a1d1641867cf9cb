/* eslint-disable @typescript-eslint/no-explicit-any -- the tests walk the CRD schema as loose JSON */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CATALOG_KIND, CLUSTER_CATALOG_KIND } from '../../../operator/api/names.ts';
import { slug } from '../../../operator/card/reference.ts';
import { buildCatalogCrd } from '../../../operator/catalog/crd.ts';
import {
  CATALOG_REFERENCE_FILE,
  catalogReferenceMarkdown,
  formattedCatalogReference,
} from '../../../operator/catalog/reference.ts';
import { repoRoot } from '../../support/paths.ts';

type Node = Record<string, any>;

/** Each section of the page by anchor: its rows, field name -> the row's cells. */
function sections(markdown: string): Map<string, Map<string, string[]>> {
  const out = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  for (const line of markdown.split('\n')) {
    const heading = /^## `([^`]+)`$/.exec(line);
    if (heading) out.set(slug(heading[1]!), (current = new Map()));
    const row = /^\| `([^`]+)` +\|(.*)\|$/.exec(line);
    if (row && current)
      current.set(
        row[1]!,
        row[2]!.split(' | ').map((c) => c.trim()),
      );
  }
  return out;
}

/**
 * Follows the page as a reader does, from a kind's section through the links of the type column,
 * and checks that every field of the schema has its row on the way. Returns the fields seen.
 */
function walk(node: Node, anchor: string, page: Map<string, Map<string, string[]>>, path: string): string[] {
  const rows = page.get(anchor);
  expect(rows, `section #${anchor} for ${path}`).toBeDefined();
  const seen: string[] = [];
  for (const [name, child] of Object.entries((node.properties ?? {}) as Record<string, Node>)) {
    const row = rows!.get(name);
    expect(row, `row ${name} of ${path} in #${anchor}`).toBeDefined();
    seen.push(`${path}.${name}`);
    let object = child;
    while (object.items ?? (typeof object.additionalProperties === 'object' && object.additionalProperties))
      object = object.items ?? object.additionalProperties;
    if (object.properties && name !== 'metadata') {
      const link = /\(#([^)]+)\)/.exec(row![0]!);
      expect(link, `a link for ${path}.${name}`).not.toBeNull();
      seen.push(...walk(object, link![1]!, page, `${path}.${name}`));
    }
  }
  return seen;
}

const root = (kind: typeof CATALOG_KIND | typeof CLUSTER_CATALOG_KIND) =>
  (buildCatalogCrd(kind) as Node).spec.versions[0].schema.openAPIV3Schema as Node;

describe('the catalog API reference', () => {
  it(`${CATALOG_REFERENCE_FILE} is up to date (run npm run gen:docs)`, async () => {
    expect(readFileSync(join(repoRoot, CATALOG_REFERENCE_FILE), 'utf8')).toBe(
      await formattedCatalogReference(),
    );
  });

  it('documents every field of both kinds, reached through the links of the page', () => {
    const page = sections(catalogReferenceMarkdown());
    const namespaced = walk(root(CATALOG_KIND), 'agentcatalog', page, CATALOG_KIND);
    const cluster = walk(root(CLUSTER_CATALOG_KIND), 'clusteragentcatalog', page, CLUSTER_CATALOG_KIND);
    expect(namespaced.length).toBeGreaterThan(60);
    expect(cluster).toContain('ClusterAgentCatalog.spec.namespaceSelector.matchExpressions.operator');
    expect(cluster).toContain('ClusterAgentCatalog.status.conditions.reason');
    expect(namespaced.some((p) => p.includes('namespaceSelector'))).toBe(false);
  });

  it("links the cluster kind's shared objects to the namespaced kind's sections, once each", () => {
    const page = sections(catalogReferenceMarkdown());
    expect(page.get('clusteragentcatalog')!.get('status')![0]).toBe('[object](#agentcatalogstatus)');
    expect(page.get('clusteragentcatalogspec')!.get('signing')![0]).toBe(
      '[object](#agentcatalogspecsigning)',
    );
    // Its own: the spec (it has namespaceSelector), and namespaceSelector (its own description).
    expect(page.get('clusteragentcatalogspec')!.get('namespaceSelector')![0]).toBe(
      '[object](#clusteragentcatalogspecnamespaceselector)',
    );
    expect(page.has('clusteragentcatalogstatus')).toBe(false);
    expect(page.has('clusteragentcatalogspecsigning')).toBe(false);
  });

  it('gives type, required, default and validation from the schema', () => {
    const page = sections(catalogReferenceMarkdown());
    const spec = page.get('agentcatalogspec')!;
    expect(spec.get('entries')).toEqual([
      'string',
      'no',
      '`url`',
      expect.stringContaining('Validation: one of `url`, `inline`.'),
    ]);
    expect(spec.get('publisher')![2]).toBe('`cluster.local`');
    expect(page.get('agentcatalogspecinclude')!.get('url')![1]).toBe('yes');
    expect(page.get('agentcatalogstatus')!.get('conditions')![3]).toContain('a map-list keyed by `type`');
  });

  it('links only to sections it has', () => {
    const text = catalogReferenceMarkdown();
    const anchors = new Set(sections(text).keys());
    const links = [...text.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThan(20);
    for (const link of links) expect(anchors, link).toContain(link);
  });
});
