/**
 * The chart ships the CRDs in its own crds/ directory (Helm installs them from there), and those
 * copies must be the generated ones at the repository root: `npm run gen:crd` writes both.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chartDir } from './chart.ts';
import { repoRoot } from '../../support/paths.ts';

const CRDS = [
  'agentcard.dev_agentcards.yaml',
  'agentcard.dev_agentcatalogs.yaml',
  'agentcard.dev_clusteragentcatalogs.yaml',
];

describe("the chart's CRDs", () => {
  it.each(CRDS)('%s is byte for byte the generated one in crds/ (run `npm run gen:crd`)', (file) => {
    const generated = readFileSync(join(repoRoot, 'crds', file), 'utf8');
    const shipped = readFileSync(join(chartDir, 'crds', file), 'utf8');
    expect(
      shipped === generated,
      'helm/agentcard-operator/crds/ differs from crds/: run `npm run gen:crd`',
    ).toBe(true);
  });

  it('are the only files in the chart crds/ directory, and crds/ holds no others', () => {
    expect(readdirSync(join(chartDir, 'crds')).sort()).toEqual(CRDS);
    expect(readdirSync(join(repoRoot, 'crds')).sort()).toEqual(CRDS);
  });
});
