/**
 * The GitOps examples (examples/gitops/): the Argo CD Application and the Flux objects install the
 * chart from its OCI reference at the chart's own version (so the pin cannot drift from
 * Chart.yaml), the Flux set references only objects it defines, the values they pass are ones the
 * chart accepts, and the drift rules point at what the chart renders.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { chartDir, helmWithValues, type K8sObject } from './chart.ts';
import { repoRoot } from '../../support/paths.ts';

const OCI_CHART = 'oci://ghcr.io/agentcard-dev/charts/agentcard-operator';
const chartVersion = (parse(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8')) as { version: string })
  .version;

type Obj = K8sObject & { spec: Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any

function load(file: string): Obj[] {
  return parseAllDocuments(readFileSync(join(repoRoot, 'examples/gitops', file), 'utf8')).map(
    (d) => d.toJS() as Obj,
  );
}

const argo = load('argocd/application.yaml');
const flux = load('flux/agentcard-operator.yaml');

/** The objects of `set` a `{kind, name, namespace?}` reference from `from` resolves to. */
function resolve(
  set: Obj[],
  from: Obj,
  ref: { kind?: string; name: string; namespace?: string },
  kind?: string,
) {
  const namespace = ref.namespace ?? from.metadata.namespace;
  return set.filter(
    (o) =>
      o.kind === (ref.kind ?? kind) && o.metadata.name === ref.name && o.metadata.namespace === namespace,
  );
}

async function rendered(values: Record<string, unknown>): Promise<K8sObject[]> {
  const result = await helmWithValues(
    ['template', 'agentcard-operator', chartDir, '--namespace', 'agentcard-system'],
    values,
  );
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  return parseAllDocuments(result.stdout)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

describe('the Argo CD Application example', () => {
  const app = argo.find((o) => o.kind === 'Application')!;

  it('installs the chart from its OCI reference at the version in Chart.yaml', () => {
    expect(app.spec.source).toMatchObject({ repoURL: OCI_CHART, path: '.', targetRevision: chartVersion });
  });

  it('passes values the chart accepts, keeping the CRDs', async () => {
    const objects = await rendered(app.spec.source.helm.valuesObject);
    const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition');
    expect(crds).toHaveLength(6);
    for (const crd of crds) {
      expect(crd.metadata.annotations?.['argocd.argoproj.io/sync-options']).toBe('Prune=false,Delete=false');
    }
  });

  it('syncs server-side and ignores the operator-managed caBundle', () => {
    expect(app.spec.syncPolicy.syncOptions).toEqual(
      expect.arrayContaining(['ServerSideApply=true', 'RespectIgnoreDifferences=true']),
    );
    expect(app.spec.ignoreDifferences).toContainEqual({
      group: 'admissionregistration.k8s.io',
      kind: 'MutatingWebhookConfiguration',
      jqPathExpressions: ['.webhooks[]?.clientConfig.caBundle'],
    });
  });
});

describe('the Flux example', () => {
  const byKind = (kind: string) => flux.filter((o) => o.kind === kind);
  const release = byKind('HelmRelease')[0]!;
  const source = byKind('OCIRepository')[0]!;

  it('defines an OCIRepository, a HelmRelease, a GitRepository and a Kustomization', () => {
    expect(flux.map((o) => `${o.apiVersion} ${o.kind}`).sort()).toEqual([
      'helm.toolkit.fluxcd.io/v2 HelmRelease',
      'kustomize.toolkit.fluxcd.io/v1 Kustomization',
      'source.toolkit.fluxcd.io/v1 GitRepository',
      'source.toolkit.fluxcd.io/v1 OCIRepository',
    ]);
  });

  it('pulls the chart from its OCI reference at the version in Chart.yaml', () => {
    expect(source.spec.url).toBe(OCI_CHART);
    expect(source.spec.ref).toEqual({ tag: chartVersion });
  });

  it('references only objects it defines', () => {
    const refs: [Obj, { kind?: string; name: string; namespace?: string }, string?][] = [];
    for (const o of flux) {
      if (o.spec.chartRef) refs.push([o, o.spec.chartRef]);
      if (o.spec.chart?.spec?.sourceRef) refs.push([o, o.spec.chart.spec.sourceRef]);
      if (o.spec.sourceRef) refs.push([o, o.spec.sourceRef]);
      for (const d of o.spec.dependsOn ?? []) refs.push([o, d, o.kind]);
    }
    expect(refs.length).toBeGreaterThanOrEqual(2);
    for (const [from, ref, kind] of refs) {
      expect(
        resolve(flux, from, ref, kind),
        `${from.kind}/${from.metadata.name} -> ${JSON.stringify(ref)}`,
      ).toHaveLength(1);
    }
  });

  it('creates and upgrades CRDs, and passes values the chart accepts', async () => {
    expect(release.spec.install.crds).toBe('Create');
    expect(release.spec.upgrade.crds).toBe('CreateReplace');
    const objects = await rendered(release.spec.values);
    const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition');
    expect(crds.map((c) => c.metadata.annotations?.['helm.sh/resource-policy'])).toEqual(
      Array(6).fill('keep'),
    );
    // The drift rule's path is the chart's one webhook.
    const mwc = objects.find((o) => o.kind === 'MutatingWebhookConfiguration') as K8sObject & {
      webhooks: unknown[];
    };
    expect(mwc.webhooks).toHaveLength(1);
    expect(release.spec.driftDetection.ignore).toContainEqual({
      paths: ['/webhooks/0/clientConfig/caBundle'],
      target: { group: 'admissionregistration.k8s.io', kind: 'MutatingWebhookConfiguration' },
    });
  });
});
