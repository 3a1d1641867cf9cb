/**
 * The release and CI workflows cannot run here (no GitHub runner, no registry): they are checked
 * with actionlint (the standard linter for GitHub Actions, built at a pinned version from the Go
 * module proxy), and what they publish is checked against the repository: the names they push
 * (env of release.yml) are the chart's default image, the chart's name and the npm package's
 * name, and every step the release needs is there with the settings that make it what the docs
 * promise (multi-arch, SBOM, provenance, keyless signature, npm provenance, notes from the
 * changelog). Whether helm package and npm pack produce those artifacts: artifacts.test.ts.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { releaseNames, RELEASE_WORKFLOW } from '../../../build/release-names.ts';
import { goTool } from '../../support/go-tools.ts';
import { repoRoot } from '../../support/paths.ts';

/** actionlint, pinned (github.com/rhysd/actionlint releases). */
const ACTIONLINT = { pkg: 'github.com/rhysd/actionlint/cmd/actionlint', version: 'v1.7.12' };

type Step = { uses?: string; run?: string; with?: Record<string, unknown>; env?: Record<string, string> };
type Job = {
  needs?: string | string[];
  permissions?: Record<string, string>;
  steps: Step[];
};
type Workflow = { on: Record<string, unknown>; permissions?: unknown; jobs: Record<string, Job> };

const workflowsDir = join(repoRoot, '.github', 'workflows');
const read = (file: string) => parse(readFileSync(join(repoRoot, file), 'utf8')) as Workflow;
const release = read(RELEASE_WORKFLOW);
const names = releaseNames();
const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as Record<string, unknown>;
const steps = (job: string) => release.jobs[job]?.steps ?? [];
const runs = (job: string) =>
  steps(job)
    .map((s) => s.run ?? '')
    .join('\n');
const uses = (job: string, action: string) => steps(job).find((s) => s.uses?.startsWith(`${action}@`));

let actionlint: string;
const tmp = mkdtempSync(join(tmpdir(), 'agentcard-actionlint-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
beforeAll(async () => {
  actionlint = await goTool(ACTIONLINT.pkg, ACTIONLINT.version);
}, 900_000);

function lint(dir: string): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const files = readdirSync(join(dir, '.github', 'workflows')).map((f) => join('.github', 'workflows', f));
    execFile(
      actionlint,
      ['-no-color', '-oneline', ...files],
      { cwd: dir, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, out: stdout + stderr }),
    );
  });
}

describe('the GitHub workflows', () => {
  it('are a release and a CI workflow', () => {
    expect(readdirSync(workflowsDir).sort()).toEqual(['ci.yml', 'release.yml']);
  });

  it('pass actionlint (syntax, expressions, action inputs, shell scripts)', async () => {
    const r = await lint(repoRoot);
    expect(r.out).toBe('');
    expect(r.code).toBe(0);
  });

  it('actionlint fails on a broken workflow (the check can fail)', async () => {
    const copy = join(tmp, 'broken');
    cpSync(join(repoRoot, '.github'), join(copy, '.github'), { recursive: true });
    const file = join(copy, RELEASE_WORKFLOW);
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace(
        '${{ needs.version.outputs.version }}',
        '${{ needs.versions.outputs.version }}',
      ),
    );
    const r = await lint(copy);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/release\.yml:\d+:\d+: .*"versions"/);
    // With ShellCheck installed, actionlint checks the run: scripts too (an unquoted variable).
    writeFileSync(
      file,
      readFileSync(file, 'utf8').replace(
        'cosign sign --yes "${IMAGE}@${DIGEST}"',
        'cosign sign --yes ${IMAGE}@${DIGEST}',
      ),
    );
    expect((await lint(copy)).out).toMatch(
      /release\.yml:\d+:\d+: shellcheck reported issue in this script: SC2086:/,
    );
  });

  it('the CI workflow runs .ci/run on pull requests', () => {
    const ci = read('.github/workflows/ci.yml');
    expect(Object.keys(ci.on)).toContain('pull_request');
    const job = Object.values(ci.jobs)[0]! as Job & { container?: { image: string; options?: string } };
    // On the fresh Debian .ci/run is written for (root: the tests install their Debian packages),
    // privileged: the node project (`npm run test:node`) makes namespaces and cgroups.
    expect(job.container).toEqual({ image: 'debian:bookworm', options: '--privileged' });
    expect(job.steps.at(-1)!.run).toBe('.ci/run');
    expect(job.steps.find((s) => s.uses?.startsWith('actions/setup-go@'))?.with?.['go-version-file']).toBe(
      'test/controlplane/go.mod',
    );
  });
});

describe('the release workflow', () => {
  it('runs on a version tag, with no permission unless a job asks', () => {
    expect(release.on).toEqual({ push: { tags: ['v[0-9]+.[0-9]+.[0-9]+*'] } });
    expect(release.permissions).toEqual({});
    expect(runs('version')).toContain('"v${version}"');
    expect(runs('version')).toContain('jq -r .version package.json');
  });

  it('publishes nothing before the tests pass', () => {
    expect(steps('test').at(-1)!.run).toBe('.ci/run');
    expect(release.jobs.test).toMatchObject({
      container: { image: 'debian:bookworm', options: '--privileged' },
    });
    const needs = (job: string) => [release.jobs[job]?.needs ?? []].flat();
    expect(needs('image')).toContain('test');
    expect(needs('npm')).toContain('test');
    expect(needs('chart')).toContain('image'); // the chart's default image exists before the chart
    expect(needs('release')).toEqual(expect.arrayContaining(['image', 'chart', 'npm']));
  });

  it('pushes the image the chart pulls by default: multi-arch, SBOM, provenance, version label, signed', () => {
    const values = parse(readFileSync(join(repoRoot, names.chartDir, 'values.yaml'), 'utf8')) as {
      image: { repository: string; tag: string };
    };
    expect(values.image.repository).toBe(names.image);
    expect(values.image.tag).toBe(''); // the chart's appVersion, which is the release version
    const build = uses('image', 'docker/build-push-action')!.with!;
    expect(String(build.platforms).split(',').sort()).toEqual(['linux/amd64', 'linux/arm64']);
    expect(build).toMatchObject({ push: true, sbom: true, provenance: 'mode=max' });
    expect(String(build['build-args'])).toContain('VERSION=${{ needs.version.outputs.version }}');
    expect(uses('image', 'docker/metadata-action')!.with!.images).toBe('${{ env.IMAGE }}');
    expect(uses('image', 'sigstore/cosign-installer')).toBeDefined();
    expect(runs('image')).toContain('cosign sign --yes "${IMAGE}@${DIGEST}"');
    expect(release.jobs.image!.permissions).toMatchObject({ 'id-token': 'write', packages: 'write' });
  });

  it('pushes the chart by the name of Chart.yaml to the OCI repository, and signs it', () => {
    const chart = parse(readFileSync(join(repoRoot, names.chartDir, 'Chart.yaml'), 'utf8')) as {
      name: string;
    };
    expect(chart.name).toBe(names.chartName);
    expect(names.chartRepository).toMatch(/^oci:\/\//);
    const script = runs('chart');
    expect(script).toContain('helm package "${CHART_DIR}" --destination out');
    expect(script).toContain('helm push "out/${CHART_NAME}-${VERSION}.tgz" "${CHART_REPOSITORY}"');
    expect(script).toContain('cosign sign --yes "${CHART_REPOSITORY#oci://}/${CHART_NAME}@${digest}"');
  });

  it('publishes the CLI under the scoped, public package name with provenance', () => {
    expect(names.npmPackage).toMatch(/^@[a-z0-9-]+\/agentcard$/);
    expect(pkg.private).toBeUndefined();
    expect(pkg.bin).toEqual({ agentcard: 'bin/agentcard.js' });
    expect(pkg.publishConfig).toEqual({ access: 'public', provenance: true });
    // npm provenance requires the package's repository to be the one the workflow runs in.
    expect((pkg.repository as { url: string }).url).toBe(
      `git+https://github.com/${names.image.split('/')[1]}/agentcard-operator.git`,
    );
    expect(runs('npm')).toContain('test "$(jq -r .name package.json)" = "${NPM_PACKAGE}"');
    expect(runs('npm')).toContain('npm publish out/*.tgz --provenance --access public');
    expect(release.jobs.npm!.permissions).toMatchObject({ 'id-token': 'write' });
  });

  it('writes the release notes from CHANGELOG.md', () => {
    expect(runs('release')).toContain('node build/changelog.ts "${VERSION}" > notes.md');
    expect(runs('release')).toContain('--notes-file notes.md');
  });
});
