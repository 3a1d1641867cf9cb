/**
 * docs/operations.md lists every Prometheus metric the operator, the webhook and the sidecar
 * export: the names are read from the code (every `agentcard_...`, `workqueue_...` and
 * `controller_runtime_...` identifier under operator/).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../support/paths.ts';

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

describe('docs/operations.md', () => {
  it('lists every metric the code exports', () => {
    const names = new Set(
      sources(join(repoRoot, 'operator')).flatMap((file) =>
        // Not `$agentcard_...`: those are variables of the nginx configuration.
        [
          ...readFileSync(file, 'utf8').matchAll(
            /(?<![$\w])(?:agentcard|workqueue|controller_runtime)_[a-z_]+[a-z]\b/g,
          ),
        ].map((m) => m[0]),
      ),
    );
    expect(names.size).toBeGreaterThan(15);
    expect(names).toContain('workqueue_queue_duration_seconds');
    expect(names).toContain('controller_runtime_reconcile_total');
    const doc = readFileSync(join(repoRoot, 'docs/operations.md'), 'utf8');
    const missing = [...names].filter((name) => !new RegExp(`\`${name}(?![a-z_])`).test(doc));
    expect(missing).toEqual([]);
  });
});
