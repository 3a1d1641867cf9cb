/**
 * docs/federation.md walks a hub and its spokes as a user follows it: every CatalogImport and
 * catalog it shows is one the API accepts (the same zod schemas the CRDs are made from), so a
 * field renamed in the code cannot leave the walk-through behind.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { AgentCatalogSpecSchema, ClusterAgentCatalogSpecSchema } from '../../../operator/catalog/resource.ts';
import { CatalogImportSpecSchema } from '../../../operator/federation/resource.ts';
import { repoRoot } from '../../support/paths.ts';

const SCHEMAS: Record<string, z.ZodType> = {
  CatalogImport: CatalogImportSpecSchema,
  AgentCatalog: AgentCatalogSpecSchema,
  ClusterAgentCatalog: ClusterAgentCatalogSpecSchema,
};

function agentcardObjects(): Array<{ kind: string; name: string; spec: unknown }> {
  const text = readFileSync(join(repoRoot, 'docs/federation.md'), 'utf8');
  const blocks = [...text.matchAll(/^```yaml\n([\s\S]*?)^```/gm)].map((m) => m[1]!);
  return blocks.flatMap((block) =>
    parseAllDocuments(block)
      .map(
        (d) =>
          d.toJS() as { apiVersion?: string; kind?: string; metadata?: { name?: string }; spec?: unknown },
      )
      .filter((o) => o?.apiVersion?.startsWith('agentcard.dev/'))
      .map((o) => ({ kind: o.kind ?? '', name: o.metadata?.name ?? '', spec: o.spec })),
  );
}

describe('docs/federation.md', () => {
  it('shows imports and catalogs the API accepts', () => {
    const objects = agentcardObjects().filter((o) => o.kind in SCHEMAS);
    expect(objects.map((o) => o.kind)).toEqual(
      expect.arrayContaining(['CatalogImport', 'ClusterAgentCatalog']),
    );
    for (const o of objects) {
      const result = SCHEMAS[o.kind]!.safeParse(o.spec);
      expect(result.success ? [] : result.error.issues, `${o.kind} ${o.name}`).toEqual([]);
    }
  });
});
