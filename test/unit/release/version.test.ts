/**
 * One version: package.json's `version` is the chart's `version` and `appVersion`, the image's
 * version label (Dockerfile ARG VERSION), what `agentcard --version` prints, and the version in
 * every install command of the docs. A copy that drifts fails here; `npm version` (the
 * documented bump, build/version.ts as its lifecycle script) moves them all in one commit.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { releaseNotes } from '../../../build/changelog.ts';
import { releaseNames } from '../../../build/release-names.ts';
import { checkVersions, cutRelease, syncVersions } from '../../../build/version.ts';
import { parseDockerfile } from '../../integration/prod-build-image.ts';
import { agentcard } from '../../support/cli.ts';
import { repoRoot } from '../../support/paths.ts';

const { version, chartDir, image, chartRef, npmPackage } = releaseNames();
const scratch = mkdtempSync(join(tmpdir(), 'agentcard-version-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** The files the version lives in, copied into `dir` (plus what build/version.ts runs with). */
function copyRepo(dir: string): void {
  for (const path of [
    'package.json',
    'package-lock.json',
    '.npmrc',
    'CHANGELOG.md',
    'Dockerfile',
    'README.md',
    'docs',
    'examples',
    'build',
    '.github',
    `${chartDir}/Chart.yaml`,
  ]) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    cpSync(join(repoRoot, path), join(dir, path), { recursive: true });
  }
}

describe('the version', () => {
  it('is a SemVer version, and every copy is the same', () => {
    expect(version).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
    expect(checkVersions()).toEqual([]);
    const chart = parse(readFileSync(join(repoRoot, chartDir, 'Chart.yaml'), 'utf8')) as Record<
      string,
      string
    >;
    expect([chart.version, chart.appVersion]).toEqual([version, version]);
    expect(readFileSync(join(repoRoot, 'Dockerfile'), 'utf8')).toContain(`\nARG VERSION=${version}\n`);
  });

  it('labels the image, whose build refuses any other version', () => {
    const dockerfile = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');
    const dir = join(scratch, 'image');
    mkdirSync(dir);
    cpSync(join(repoRoot, 'package.json'), join(dir, 'package.json'));
    const node = join(repoRoot, 'node_modules', '.bin', 'node');
    for (const [buildArgs, ok] of [
      [{}, true],
      [{ VERSION: version }, true],
      [{ VERSION: '9.9.9' }, false],
    ] as const) {
      const stages = parseDockerfile(dockerfile, buildArgs);
      const label = stages
        .at(-1)!
        .instructions.find((i) => i.op === 'LABEL')!
        .args.join(' ');
      expect(label).toContain(`org.opencontainers.image.version="${buildArgs.VERSION ?? version}"`);
      // The base image label names what the build really used (release builds pin a digest).
      expect(label).toContain(
        'org.opencontainers.image.base.name="gcr.io/distroless/nodejs24-debian13:nonroot"',
      );
      const check = stages
        .find((s) => s.name === 'build')!
        .instructions.find((i) => i.op === 'RUN' && i.raw.includes('package.json'))!;
      const r = spawnSync('sh', ['-c', check.args.join(' ')], {
        cwd: dir,
        encoding: 'utf8',
        env: { ...process.env, PATH: `${dirname(node)}:${process.env.PATH ?? ''}` },
      });
      expect(r.status, r.stderr).toBe(ok ? 0 : 1);
      if (!ok) expect(r.stderr).toBe(`VERSION 9.9.9 is not package.json version ${version}\n`);
    }
  });

  it('is what `agentcard --version` prints', async () => {
    const r = await agentcard(['--version']);
    expect(r).toEqual({ code: 0, stdout: `agentcard ${version}\n`, stderr: '' });
  });

  it('the install docs name the published artifacts at this version', () => {
    const install = readFileSync(join(repoRoot, 'docs/install.md'), 'utf8');
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    for (const doc of [install, readme])
      expect(doc).toMatch(
        new RegExp(`${chartRef.replace(/[./]/g, '\\$&')}\\s+--version ${version.replace(/\./g, '\\.')}`),
      );
    expect(install).toContain(`${image}:${version}`);
    expect(install).toContain(`${npmPackage}@${version}`);
  });

  it('a copy that differs is found, and the sync sets every copy', () => {
    const dir = join(scratch, 'drift');
    copyRepo(dir);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string };
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ ...pkg, version: '1.2.3-rc.1' }));
    const drift = checkVersions(dir);
    for (const what of ['Chart.yaml version', 'Chart.yaml appVersion', 'Dockerfile ARG VERSION']) {
      expect(drift.join('\n')).toContain(`${what}: ${version}`);
    }
    expect(drift).toContain(`docs/install.md: image tag: ${version}`);
    expect(drift).toContain(`docs/install.md: chart --version: ${version}`);
    expect(drift).toContain(`docs/install.md: npm package: ${version}`);
    expect(drift).toContain(`examples/demo-agent.yaml: image tag: ${version}`);

    expect(syncVersions(dir)).toEqual(
      expect.arrayContaining([`${chartDir}/Chart.yaml`, 'Dockerfile', 'docs/install.md']),
    );
    expect(checkVersions(dir)).toEqual([]);
    const chart = readFileSync(join(dir, chartDir, 'Chart.yaml'), 'utf8');
    expect(chart).toMatch(/^version: 1\.2\.3-rc\.1$/m);
    expect(chart).toMatch(/^appVersion: '1\.2\.3-rc\.1'$/m);
    expect(readFileSync(join(dir, 'docs/install.md'), 'utf8')).toContain(`${image}:1.2.3-rc.1`);
    expect(readFileSync(join(dir, 'examples/demo-agent.yaml'), 'utf8')).toContain(`${image}:1.2.3-rc.1`);
    expect(syncVersions(dir)).toEqual([]); // idempotent
  });

  it('a release moves the Unreleased notes under the version, once', () => {
    const before =
      '# Changelog\n\n## [Unreleased]\n\n### Added\n\n- a thing\n\n## [0.1.0] - 2026-01-02\n\n- old\n';
    const after = cutRelease(before, '0.2.0', '2026-03-04');
    expect(after).toBe(
      '# Changelog\n\n## [Unreleased]\n\n## [0.2.0] - 2026-03-04\n\n### Added\n\n- a thing\n\n## [0.1.0] - 2026-01-02\n\n- old\n',
    );
    expect(releaseNotes(after, '0.2.0')).toBe('### Added\n\n- a thing');
    expect(cutRelease(after, '0.2.0', '2026-03-05')).toBe(after);
  });

  it('`npm version minor` bumps every copy, moves the notes, commits and tags', () => {
    const dir = join(scratch, 'bump');
    copyRepo(dir);
    symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
    writeFileSync(join(dir, '.gitignore'), 'node_modules\n');
    const git = (...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
        cwd: dir,
        encoding: 'utf8',
      });
    git('init', '-q');
    git('add', '-A');
    git('commit', '-qm', 'initial');
    const [major, minor] = version.split('.').map(Number);
    const next = `${major}.${minor! + 1}.0`;
    const bump = spawnSync('npm', ['version', 'minor'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 120_000,
      env: {
        ...process.env,
        // npm runs the lifecycle script with the Node.js 24 of node_modules (it runs .ts files).
        PATH: `${join(repoRoot, 'node_modules', '.bin')}:${process.env.PATH ?? ''}`,
        GIT_AUTHOR_NAME: 't',
        GIT_AUTHOR_EMAIL: 't@example.com',
        GIT_COMMITTER_NAME: 't',
        GIT_COMMITTER_EMAIL: 't@example.com',
      },
    });
    expect(bump.status, bump.stderr).toBe(0);
    expect(bump.stdout).toContain(`v${next}`);
    expect(checkVersions(dir)).toEqual([]);
    expect(releaseNames(dir).version).toBe(next);
    expect(git('status', '--porcelain')).toBe(''); // everything is in the commit
    expect(git('log', '-1', '--format=%s')).toBe(`chore(release): v${next}\n`);
    expect(git('tag', '--points-at', 'HEAD')).toBe(`v${next}\n`);
    const files = git('show', '--name-only', '--format=', 'HEAD').trim().split('\n').sort();
    expect(files).toEqual(
      expect.arrayContaining([
        'CHANGELOG.md',
        'Dockerfile',
        `${chartDir}/Chart.yaml`,
        'docs/install.md',
        'package.json',
      ]),
    );
    const changelog = readFileSync(join(dir, 'CHANGELOG.md'), 'utf8');
    expect(changelog).toMatch(
      new RegExp(`## \\[Unreleased\\]\\n\\n## \\[${next.replace(/\./g, '\\.')}\\] - \\d{4}-\\d{2}-\\d{2}\\n`),
    );
    expect(releaseNotes(changelog, next)).toContain('### Added');
  }, 180_000);
});
