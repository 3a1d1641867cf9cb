/**
 * The GitOps examples (examples/gitops/) against the real API server with the real CRDs of
 * Argo CD and Flux: the CRD YAMLs come from the projects' Go module zips on the Go module proxy
 * (pinned versions, cached), are installed on the control plane, and the examples are applied
 * with a server-side dry run, so the API server validates every field against the projects' own
 * schemas. The argocd-cm patch is applied to a real ConfigMap the way the docs say.
 *
 * Not covered here: the HelmRelease. helm-controller's module is not served by the Go module
 * proxy (its list answers 403 "This module version is not available"), so its CRD cannot be
 * fetched the same way; test/unit/helm/gitops.test.ts checks its references and values.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { readZip } from '../controlplane/unzip.ts';
import { cacheRoot } from '../controlplane/paths.ts';
import { kubeconfigPath } from '../support/cluster.ts';
import { repoRoot } from '../support/paths.ts';
import { runTool } from '../support/tools.ts';

const MODULES = [
  {
    module: 'github.com/argoproj/argo-cd/v3',
    version: 'v3.6.1',
    files: ['manifests/crds/application-crd.yaml'],
  },
  {
    module: 'github.com/fluxcd/source-controller',
    version: 'v1.10.1',
    files: [
      'config/crd/bases/source.toolkit.fluxcd.io_ocirepositories.yaml',
      'config/crd/bases/source.toolkit.fluxcd.io_gitrepositories.yaml',
    ],
  },
  {
    module: 'github.com/fluxcd/kustomize-controller',
    version: 'v1.10.1',
    files: ['config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml'],
  },
];
const NAMESPACES = ['argocd', 'flux-system'];

const kubectl = (args: string[], input?: string) =>
  runTool('kubectl', args, { kubeconfig: kubeconfigPath(), timeoutMs: 120_000, ...(input ? { input } : {}) });

/** The module zip from the Go module proxy (GOPROXY's first https entry), cached by version. */
async function moduleZip(module: string, version: string): Promise<Buffer> {
  const dir = join(cacheRoot(), 'gitops-crds');
  const file = join(dir, `${module.replaceAll('/', '_')}@${version}.zip`);
  if (existsSync(file)) return readFileSync(file);
  const proxy =
    (process.env.GOPROXY ?? '').split(/[,|]/).find((p) => p.startsWith('https://')) ??
    'https://proxy.golang.org';
  // Module paths are case-encoded on the proxy (uppercase as !lower); these have none.
  const response = await fetch(`${proxy.replace(/\/$/, '')}/${module}/@v/${version}.zip`, {
    signal: AbortSignal.timeout(300_000),
  });
  if (!response.ok) throw new Error(`${module}@${version}: HTTP ${response.status} from ${proxy}`);
  const zip = Buffer.from(await response.arrayBuffer());
  mkdirSync(dir, { recursive: true });
  writeFileSync(file, zip);
  return zip;
}

const createdNamespaces: string[] = [];
const crdNames: string[] = [];

beforeAll(async () => {
  for (const { module, version, files } of MODULES) {
    const entries = readZip(await moduleZip(module, version));
    for (const file of files) {
      const entry = entries.find((e) => e.name === `${module}@${version}/${file}`);
      if (!entry) throw new Error(`${module}@${version} holds no ${file}`);
      const text = entry.data.toString('utf8');
      for (const doc of parseAllDocuments(text)) {
        const name = (doc.toJS() as { metadata?: { name?: string } } | null)?.metadata?.name;
        if (name) crdNames.push(name);
      }
      const applied = await kubectl(
        ['apply', '--server-side', '--field-manager=agentcard-tests', '-f', '-'],
        text,
      );
      if (applied.code !== 0) throw new Error(`installing ${file}: ${applied.stderr}`);
    }
  }
  const established = await kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    ...crdNames.map((n) => `crd/${n}`),
  ]);
  expect(established.stderr).toBe('');
  for (const ns of NAMESPACES) {
    const created = await kubectl(['create', 'namespace', ns]);
    if (created.code === 0) createdNamespaces.push(ns);
  }
}, 600_000);

afterAll(async () => {
  for (const ns of createdNamespaces) await kubectl(['delete', 'namespace', ns, '--wait=false']);
  if (crdNames.length) await kubectl(['delete', 'crd', ...crdNames, '--wait=false']);
});

/** Server-side dry run of `text`; returns kubectl's result. */
const dryRun = (text: string) => kubectl(['apply', '--server-side', '--dry-run=server', '-f', '-'], text);

describe('the GitOps examples on the real API server', () => {
  it('the Argo CD Application is valid against Argo CD v3 Application CRD', async () => {
    const text = readFileSync(join(repoRoot, 'examples/gitops/argocd/application.yaml'), 'utf8');
    const result = await dryRun(text);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(
      /application\.argoproj\.io\/agentcard-operator serverside-applied \(server dry run\)/,
    );
  });

  it('the argocd-cm patch merges into a ConfigMap with the three health checks', async () => {
    const created = await kubectl(['create', 'configmap', 'argocd-cm', '--namespace', 'argocd']);
    expect(created.code).toBe(0);
    const patched = await kubectl([
      'patch',
      'configmap',
      'argocd-cm',
      '--namespace',
      'argocd',
      '--type',
      'merge',
      '--patch-file',
      join(repoRoot, 'examples/gitops/argocd/argocd-cm-health.yaml'),
    ]);
    expect(patched.stderr).toBe('');
    const cm = JSON.parse(
      (await kubectl(['get', 'configmap', 'argocd-cm', '-n', 'argocd', '-o', 'json'])).stdout,
    ) as {
      data: Record<string, string>;
    };
    const keys = ['AgentCard', 'AgentCatalog', 'ClusterAgentCatalog'].map(
      (k) => `resource.customizations.health.agentcard.dev_${k}`,
    );
    expect(Object.keys(cm.data).sort()).toEqual(keys.sort());
    for (const key of keys) expect(cm.data[key]).toMatch(/^hs = \{ status = "Progressing"/);
  });

  it('the Flux OCIRepository, GitRepository and Kustomization are valid against the Flux CRDs', async () => {
    const docs = parseAllDocuments(
      readFileSync(join(repoRoot, 'examples/gitops/flux/agentcard-operator.yaml'), 'utf8'),
    ).map((d) => d.toJS() as { kind: string });
    const checked = docs.filter((d) => d.kind !== 'HelmRelease');
    expect(checked.map((d) => d.kind).sort()).toEqual(['GitRepository', 'Kustomization', 'OCIRepository']);
    const result = await dryRun(checked.map((d) => stringify(d)).join('---\n'));
    expect(result.stderr).toBe('');
    expect(result.stdout.trim().split('\n')).toHaveLength(3);
  });
});
