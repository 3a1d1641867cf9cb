/**
 * The chart's install notes name files of this repository (the examples): each must exist, so a
 * user who follows the notes never looks for a file that is not there. And they warn about a
 * combination of values that installs but does not do what it is for.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chartDir, helm, NAMESPACE, RELEASE } from './chart.ts';
import { repoRoot } from '../../support/paths.ts';

describe('NOTES.txt', () => {
  it('names only files that exist', () => {
    const notes = readFileSync(join(chartDir, 'templates', 'NOTES.txt'), 'utf8');
    const paths = [...notes.matchAll(/\bexamples\/[\w./-]+\.ya?ml\b/g)].map((m) => m[0]);
    expect(paths).toContain('examples/gateway-api/httproute-well-known.yaml');
    expect(paths).toContain('examples/demo-agent.yaml');
    expect(paths.filter((p) => !existsSync(join(repoRoot, p)))).toEqual([]);
  });

  /** The notes `helm install` prints with `values` (a client-side dry run renders them). */
  async function notesWith(values: string[]): Promise<string> {
    const args = ['install', RELEASE, chartDir, '--namespace', NAMESPACE, '--dry-run=client'];
    const result = await helm([...args, ...values.flatMap((v) => ['--set', v])]);
    expect(result.code, result.stderr).toBe(0);
    return result.stdout.slice(result.stdout.indexOf('NOTES:'));
  }

  it('warns when label adoption is on without the card server that serves the adopted cards', async () => {
    const warning = /adoption is on \(adoption.enabled\) but the card server is off/;
    expect(await notesWith(['adoption.enabled=true'])).toMatch(warning);
    expect(await notesWith(['adoption.enabled=true', 'cardServer.enabled=true'])).not.toMatch(warning);
    expect(await notesWith([])).not.toMatch(warning);
  });
});
