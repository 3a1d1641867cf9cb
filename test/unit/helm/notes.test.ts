/**
 * The chart's install notes name files of this repository (the examples): each must exist, so a
 * user who follows the notes never looks for a file that is not there.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chartDir } from './chart.ts';
import { repoRoot } from '../../support/paths.ts';

describe('NOTES.txt', () => {
  it('names only files that exist', () => {
    const notes = readFileSync(join(chartDir, 'templates', 'NOTES.txt'), 'utf8');
    const paths = [...notes.matchAll(/\bexamples\/[\w./-]+\.ya?ml\b/g)].map((m) => m[0]);
    expect(paths).toContain('examples/gateway-api/httproute-well-known.yaml');
    expect(paths).toContain('examples/demo-agent.yaml');
    expect(paths.filter((p) => !existsSync(join(repoRoot, p)))).toEqual([]);
  });
});
