/**
 * The chart ships the CRDs as templates (helm/agentcard-operator/templates/crds/, so `helm
 * upgrade` upgrades them; see build/chart-crds.ts), made from the generated ones at the
 * repository root: `npm run gen:crd` writes both, and these tests fail when either is stale.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { CHART_CRD_DIR, CHART_CRDS, chartCrdTemplate } from '../../../build/chart-crds.ts';
import { helm, chartDir, type K8sObject } from './chart.ts';
import { repoRoot } from '../../support/paths.ts';

const FILES = [
  'agentcard.dev_agentcards.yaml',
  'agentcard.dev_agentcatalogs.yaml',
  'agentcard.dev_agentpolicies.yaml',
  'agentcard.dev_catalogimports.yaml',
  'agentcard.dev_clusteragentcatalogs.yaml',
  'agentcard.dev_clusteragentpolicies.yaml',
];

async function renderedCrds(args: string[] = []): Promise<K8sObject[]> {
  const result = await helm(['template', 'rel', chartDir, '--namespace', 'agentcard-system', ...args]);
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return parseAllDocuments(result.stdout)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o?.kind === 'CustomResourceDefinition');
}

describe("the chart's CRDs", () => {
  it.each(CHART_CRDS)('$template is made from $file (run `npm run gen:crd`)', ({ file, template }) => {
    const generated = readFileSync(join(repoRoot, file), 'utf8');
    const shipped = readFileSync(join(repoRoot, template), 'utf8');
    expect(shipped === chartCrdTemplate(generated), `${template} is stale: run \`npm run gen:crd\``).toBe(
      true,
    );
  });

  it('are the only files in the templates/crds folder, crds/ holds no others, and the chart has no crds/', () => {
    expect(readdirSync(join(repoRoot, CHART_CRD_DIR)).sort()).toEqual(FILES);
    expect(readdirSync(join(repoRoot, 'crds')).sort()).toEqual(FILES);
    // Helm would install a crds/ copy first and then fail on the templates' objects.
    expect(existsSync(join(chartDir, 'crds'))).toBe(false);
  });

  it('render, by default, every generated CRD with the chart labels and the keep annotations', async () => {
    const rendered = await renderedCrds();
    expect(rendered.map((c) => c.metadata.name).sort()).toEqual([
      'agentcards.agentcard.dev',
      'agentcatalogs.agentcard.dev',
      'agentpolicies.agentcard.dev',
      'catalogimports.agentcard.dev',
      'clusteragentcatalogs.agentcard.dev',
      'clusteragentpolicies.agentcard.dev',
    ]);
    for (const crd of rendered) {
      expect(crd.metadata.annotations).toEqual({
        'helm.sh/resource-policy': 'keep',
        'argocd.argoproj.io/sync-options': 'Prune=false,Delete=false',
      });
      expect(crd.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('Helm');
      // Apart from the metadata the chart adds, the rendered CRD is the generated file.
      const file = FILES.find((f) => f.includes(`_${crd.metadata.name.split('.')[0]}.`))!;
      const generated = parse(readFileSync(join(repoRoot, 'crds', file), 'utf8')) as K8sObject;
      expect({ ...crd, metadata: { name: crd.metadata.name } }).toEqual(generated);
    }
  });

  it('with crds.keep=false: no annotation keeps them (uninstall and Argo CD delete them)', async () => {
    for (const crd of await renderedCrds(['--set', 'crds.keep=false'])) {
      expect(crd.metadata.annotations).toBeUndefined();
    }
  });

  it('with crds.enabled=false: none is rendered', async () => {
    expect(await renderedCrds(['--set', 'crds.enabled=false'])).toEqual([]);
  });

  it('refuses a generated CRD that would not survive as a template', () => {
    expect(() => chartCrdTemplate('kind: X\nmetadata:\n  name: a\nspec: {description: "{{x}}"}\n')).toThrow(
      /template action/,
    );
    expect(() => chartCrdTemplate('kind: X\nspec: {}\n')).toThrow(/no top-level "metadata:"/);
  });
});
