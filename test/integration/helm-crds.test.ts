/**
 * The chart's CRD lifecycle with the real helm (4, server-side apply) on the real API server:
 * - an existing user of a chart that shipped the CRDs in crds/ (and upgraded them with
 *   `kubectl apply --server-side`) upgrades to this chart: refused until the CRDs are adopted
 *   (docs/install.md, "Upgrade"), then upgraded with `--force-conflicts`;
 * - `helm upgrade` with changed values and a changed CRD updates the CRD and the Deployment;
 * - `helm uninstall` keeps the CRDs (crds.keep), and with them the AgentCards.
 * The CRDs are shared by every test file on the control plane (this file is in integration-serial,
 * run alone), so it changes only a printer column and leaves them as generated.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiextensionsV1Api, AppsV1Api, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { createTestNamespace, kubeConfig, kubeconfigPath, type TestNamespace } from '../support/cluster.ts';
import { Api, installImportCrd, installPolicyCrds, sampleCard } from '../support/operator.ts';
import { repoRoot } from '../support/paths.ts';
import { runTool } from '../support/tools.ts';
import { chartDir } from '../unit/helm/chart.ts';

const kc = kubeConfig();
const crdsApi = kc.makeApiClient(ApiextensionsV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const api = new Api(kc);

const CRD_FILES = [
  'agentcard.dev_agentcards.yaml',
  'agentcard.dev_agentcatalogs.yaml',
  'agentcard.dev_clusteragentcatalogs.yaml',
  'agentcard.dev_agentpolicies.yaml',
  'agentcard.dev_clusteragentpolicies.yaml',
  'agentcard.dev_catalogimports.yaml',
];
const CRD_NAMES = [
  'agentcards.agentcard.dev',
  'agentcatalogs.agentcard.dev',
  'clusteragentcatalogs.agentcard.dev',
  'agentpolicies.agentcard.dev',
  'clusteragentpolicies.agentcard.dev',
  'catalogimports.agentcard.dev',
];

let ns: TestNamespace;
let release = '';
let work: string;

const helm = (a: string[]) => runTool('helm', a, { kubeconfig: kubeconfigPath(), timeoutMs: 180_000 });
const kubectl = (a: string[], input?: string) =>
  runTool('kubectl', a, { kubeconfig: kubeconfigPath(), ...(input ? { input } : {}) });

const readCrd = (name = 'agentcards.agentcard.dev') => crdsApi.readCustomResourceDefinition({ name });
const columns = (crd: V1CustomResourceDefinition) =>
  (crd.spec.versions[0]!.additionalPrinterColumns ?? []).map((c) => c.name);

/** The AgentCard CRD as generated, with its printer columns changed by `edit`. */
function agentCardCrd(edit: (cols: { name: string }[]) => { name: string }[]): string {
  const crd = parse(
    readFileSync(join(repoRoot, 'crds', CRD_FILES[0]!), 'utf8'),
  ) as V1CustomResourceDefinition;
  const version = crd.spec.versions[0]!;
  version.additionalPrinterColumns = edit(
    version.additionalPrinterColumns ?? [],
  ) as typeof version.additionalPrinterColumns;
  return stringify(crd);
}

/** A copy of the chart as it was before: the CRDs in crds/ (never upgraded by Helm), version 0.0.1. */
function previousChart(): string {
  const dir = join(work, 'previous', 'agentcard-operator');
  cpSync(chartDir, dir, { recursive: true });
  rmSync(join(dir, 'templates', 'crds'), { recursive: true });
  mkdirSync(join(dir, 'crds'));
  for (const file of CRD_FILES) cpSync(join(repoRoot, 'crds', file), join(dir, 'crds', file));
  const chart = join(dir, 'Chart.yaml');
  writeFileSync(chart, readFileSync(chart, 'utf8').replace(/^version: .*$/m, 'version: 0.0.1'));
  return dir;
}

/** A copy of this chart whose AgentCard CRD template has one more printer column (a CRD change). */
function nextChart(): string {
  const dir = join(work, 'next', 'agentcard-operator');
  cpSync(chartDir, dir, { recursive: true });
  const template = join(dir, 'templates', 'crds', CRD_FILES[0]!);
  const text = readFileSync(template, 'utf8');
  const column = [
    '        - name: Generation',
    '          type: integer',
    '          jsonPath: .metadata.generation',
    '          priority: 1',
  ].join('\n');
  const next = text.replace(/^( {6}additionalPrinterColumns:\n)/m, `$1${column}\n`);
  expect(next).not.toBe(text);
  writeFileSync(template, next);
  const chart = join(dir, 'Chart.yaml');
  writeFileSync(chart, readFileSync(chart, 'utf8').replace(/^version: .*$/m, 'version: 99.0.0'));
  return dir;
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'agentcard-helm-crds-'));
  // Every CRD the chart ships exists, as other files of the run may have left them (and as on a
  // cluster that had the older chart): the adoption step below must cover each.
  await installPolicyCrds(kc);
  await installImportCrd(kc);
  ns = await createTestNamespace('helm-crds');
  release = `cr-${ns.name.slice(-8)}`;
});

afterAll(async () => {
  if (release) await helm(['uninstall', release, '--namespace', ns.name, '--wait']);
  // Leave the shared CRDs as generated, and owned by no release.
  await installPolicyCrds(kc);
  await installImportCrd(kc);
  for (const name of CRD_NAMES) {
    await kubectl(['annotate', 'crd', name, 'meta.helm.sh/release-name-', 'meta.helm.sh/release-namespace-']);
  }
  await ns?.cleanup();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the CRDs across helm install, upgrade and uninstall', () => {
  it('an existing release with CRDs from crds/ is refused by the upgrade until they are adopted', async () => {
    // The state the previous chart and docs left: CRDs applied server-side by kubectl (here one
    // printer column older), a release that does not own them.
    const old = agentCardCrd((cols) => cols.filter((c) => c.name !== 'Message'));
    const applied = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', '-'], old);
    expect(applied.stderr).toBe('');
    // --skip-crds: the release was installed long ago; Helm 4 would apply crds/ at install time.
    const installed = await helm([
      'install',
      release,
      previousChart(),
      '--namespace',
      ns.name,
      '--skip-crds',
    ]);
    expect(installed.stderr).toBe('');
    expect(installed.code).toBe(0);
    expect(columns(await readCrd())).not.toContain('Message');

    const refused = await helm(['upgrade', release, chartDir, '--namespace', ns.name]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(
      /CustomResourceDefinition "agentcards\.agentcard\.dev".*invalid ownership metadata/s,
    );
  });

  it('after the one-time adoption, helm upgrade --force-conflicts takes them over and upgrades them', async () => {
    // The step docs/install.md gives, for every CRD.
    for (const name of CRD_NAMES) {
      const annotated = await kubectl([
        'annotate',
        '--overwrite',
        'crd',
        name,
        `meta.helm.sh/release-name=${release}`,
        `meta.helm.sh/release-namespace=${ns.name}`,
      ]);
      expect(annotated.code).toBe(0);
      const labelled = await kubectl([
        'label',
        '--overwrite',
        'crd',
        name,
        'app.kubernetes.io/managed-by=Helm',
      ]);
      expect(labelled.code).toBe(0);
    }
    // Without --force-conflicts, server-side apply refuses to take fields kubectl applied.
    const conflict = await helm(['upgrade', release, chartDir, '--namespace', ns.name]);
    expect(conflict.code).not.toBe(0);
    expect(conflict.stderr).toMatch(/conflict/i);

    const upgraded = await helm(['upgrade', release, chartDir, '--namespace', ns.name, '--force-conflicts']);
    expect(upgraded.stderr).toBe('');
    expect(upgraded.code).toBe(0);
    const crd = await readCrd();
    expect(columns(crd)).toContain('Message');
    for (const name of CRD_NAMES) {
      const metadata = (await readCrd(name)).metadata!;
      expect(metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');
      expect(metadata.annotations?.['argocd.argoproj.io/sync-options']).toBe('Prune=false,Delete=false');
      expect(metadata.labels?.['helm.sh/chart']).toMatch(/^agentcard-operator-\d/);
      expect(metadata.labels?.['helm.sh/chart']).not.toBe('agentcard-operator-0.0.1');
    }
  });

  it('helm upgrade with changed values and a changed CRD updates both', async () => {
    const upgraded = await helm([
      'upgrade',
      release,
      nextChart(),
      '--namespace',
      ns.name,
      '--force-conflicts',
      '--set',
      'operator.concurrency=7',
    ]);
    expect(upgraded.stderr).toBe('');
    expect(upgraded.code).toBe(0);
    const crd = await readCrd();
    expect(columns(crd)[0]).toBe('Generation');
    expect(crd.metadata?.labels?.['helm.sh/chart']).toBe('agentcard-operator-99.0.0');
    const deployment = await apps.readNamespacedDeployment({
      name: `${release}-agentcard-operator`,
      namespace: ns.name,
    });
    expect(deployment.spec!.template.spec!.containers[0]!.args).toContain('--concurrency=7');

    // And back: a column the chart no longer has is removed from the CRD.
    const back = await helm(['upgrade', release, chartDir, '--namespace', ns.name, '--reuse-values']);
    expect(back.stderr).toBe('');
    expect(back.code).toBe(0);
    expect(columns(await readCrd())).not.toContain('Generation');
  });

  it('helm uninstall keeps every CRD and every AgentCard', async () => {
    await api.createCard(ns.name, 'kept', { card: sampleCard() });
    const result = await helm(['uninstall', release, '--namespace', ns.name, '--wait']);
    expect(result.code).toBe(0);
    expect(result.stdout + result.stderr).toMatch(/kept due to the resource policy/);
    release = '';
    for (const name of CRD_NAMES) {
      const crd = await readCrd(name);
      expect(crd.metadata?.deletionTimestamp).toBeUndefined();
    }
    expect((await api.getCard(ns.name, 'kept'))?.metadata.name).toBe('kept');
  });
});
