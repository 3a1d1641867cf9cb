/**
 * The names users install the release by. They are written down once, in the release workflow
 * that publishes them (.github/workflows/release.yml, `env`), and the npm name in package.json;
 * the version sync (build/version.ts) and the tests read them from there, so the chart's default
 * image, the docs and what the workflow publishes cannot drift apart.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';

export const repoRoot = resolve(import.meta.dirname, '..');
export const RELEASE_WORKFLOW = '.github/workflows/release.yml';

export interface ReleaseNames {
  /** The image repository, without a tag: `ghcr.io/<org>/agentcard-operator`. */
  image: string;
  /** The chart's folder in this repository. */
  chartDir: string;
  /** The chart's name (Chart.yaml `name`; the OCI repository's last segment). */
  chartName: string;
  /** The OCI registry path the chart is pushed to, `oci://...` without the chart's name. */
  chartRepository: string;
  /** What `helm install` takes: `<chartRepository>/<chartName>`. */
  chartRef: string;
  /** The npm package of the CLI (package.json `name`). */
  npmPackage: string;
  /** The release version (package.json `version`). */
  version: string;
}

function env(workflow: Record<string, unknown>, key: string): string {
  const value = (workflow.env as Record<string, unknown> | undefined)?.[key];
  if (typeof value !== 'string' || value === '') throw new Error(`${RELEASE_WORKFLOW}: no env.${key}`);
  return value;
}

export function releaseNames(root = repoRoot): ReleaseNames {
  const workflow = parse(readFileSync(join(root, RELEASE_WORKFLOW), 'utf8')) as Record<string, unknown>;
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    name: string;
    version: string;
  };
  const chartRepository = env(workflow, 'CHART_REPOSITORY');
  const chartName = env(workflow, 'CHART_NAME');
  return {
    image: env(workflow, 'IMAGE'),
    chartDir: env(workflow, 'CHART_DIR'),
    chartName,
    chartRepository,
    chartRef: `${chartRepository}/${chartName}`,
    npmPackage: pkg.name,
    version: pkg.version,
  };
}
