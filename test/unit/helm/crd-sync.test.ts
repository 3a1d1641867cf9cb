/**
 * The chart ships the CRD in its own crds/ directory (Helm installs it from there), and that copy
 * must be the generated one at the repository root: `npm run gen:crd` writes both.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chartDir } from './chart.ts';
import { repoRoot } from '../../support/paths.ts';

describe("the chart's CRD", () => {
  it('is byte for byte the generated crds/agentcard.dev_agentcards.yaml (run `npm run gen:crd`)', () => {
    const generated = readFileSync(join(repoRoot, 'crds', 'agentcard.dev_agentcards.yaml'), 'utf8');
    const shipped = readFileSync(join(chartDir, 'crds', 'agentcard.dev_agentcards.yaml'), 'utf8');
    expect(
      shipped === generated,
      'helm/agentcard-operator/crds/ differs from crds/: run `npm run gen:crd`',
    ).toBe(true);
  });

  it('is the only file in the chart crds/ directory', () => {
    expect(readdirSync(join(chartDir, 'crds'))).toEqual(['agentcard.dev_agentcards.yaml']);
  });
});
