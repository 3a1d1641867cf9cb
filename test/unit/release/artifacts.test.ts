/**
 * What the release workflow publishes, made here the way it makes them: `helm lint` and
 * `helm package` of the chart folder it names, and `npm pack`. The artifacts must carry the
 * names the workflow pushes them under (read from .github/workflows/release.yml and
 * package.json, not repeated here) and the release version, and the chart must pull the image
 * the workflow pushes, at that version.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { releaseNames } from '../../../build/release-names.ts';
import { helm } from '../helm/chart.ts';
import { repoRoot } from '../../support/paths.ts';

const names = releaseNames();
const out = mkdtempSync(join(tmpdir(), 'agentcard-artifacts-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('the chart the release pushes', () => {
  const chartTgz = join(out, `${names.chartName}-${names.version}.tgz`);
  beforeAll(async () => {
    const r = await helm(['package', join(repoRoot, names.chartDir), '--destination', out]);
    expect(r.code, r.stderr).toBe(0);
  }, 120_000);

  it('passes helm lint', async () => {
    const r = await helm(['lint', '--strict', join(repoRoot, names.chartDir)]);
    expect(r.stdout + r.stderr).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    expect(r.code).toBe(0);
  });

  it('is packaged as <CHART_NAME>-<version>.tgz, the file the workflow pushes', async () => {
    expect(readdirSync(out)).toContain(`${names.chartName}-${names.version}.tgz`);
    const chart = parse((await helm(['show', 'chart', chartTgz])).stdout) as Record<string, string>;
    expect(chart).toMatchObject({ name: names.chartName, version: names.version, appVersion: names.version });
  });

  it('pulls the image the release pushes, at the release version', async () => {
    const r = await helm(['template', 'agentcard-operator', chartTgz, '--namespace', 'agentcard-system']);
    expect(r.code, r.stderr).toBe(0);
    const deployment = parseAllDocuments(r.stdout)
      .map(
        (d) =>
          d.toJS() as { kind?: string; spec?: { template: { spec: { containers: { image: string }[] } } } },
      )
      .find((o) => o?.kind === 'Deployment')!;
    expect(deployment.spec!.template.spec.containers.map((c) => c.image)).toContain(
      `${names.image}:${names.version}`,
    );
  });
});

describe('the npm package the release publishes', () => {
  let packed: { name: string; version: string; filename: string; files: { path: string }[] };
  beforeAll(() => {
    // As the workflow: `npm pack` (its prepack script builds the bundle).
    const pack = spawnSync('npm', ['pack', '--json', '--pack-destination', out], {
      cwd: repoRoot,
      encoding: 'utf8',
      timeout: 240_000,
      env: { ...process.env, PATH: `${join(repoRoot, 'node_modules', '.bin')}:${process.env.PATH ?? ''}` },
    });
    expect(pack.status, pack.stderr.slice(-2000)).toBe(0);
    [packed] = JSON.parse(pack.stdout.slice(pack.stdout.indexOf('['))) as [typeof packed];
  }, 300_000);

  it('is the scoped package at the release version, with the agentcard command', () => {
    expect(packed.name).toBe(names.npmPackage);
    expect(packed.version).toBe(names.version);
    // npm's tarball name for @scope/name: scope-name-version.tgz (the file the docs name).
    expect(packed.filename).toBe(`${names.npmPackage.slice(1).replace('/', '-')}-${names.version}.tgz`);
    const inside = JSON.parse(
      execFileSync('tar', ['-xzOf', join(out, packed.filename), 'package/package.json'], {
        encoding: 'utf8',
      }),
    ) as Record<string, unknown>;
    expect(inside).toMatchObject({
      name: names.npmPackage,
      version: names.version,
      bin: { agentcard: 'bin/agentcard.js' },
    });
    expect(inside.private).toBeUndefined();
    expect(packed.files.map((f) => f.path)).toContain('dist/agentcard.js');
  });

  it('prints the release version from the bundle it holds', () => {
    const dir = join(out, 'unpacked');
    execFileSync('mkdir', ['-p', dir]);
    execFileSync('tar', ['-xzf', join(out, packed.filename), '-C', dir]);
    const node = join(repoRoot, 'node_modules', '.bin', 'node');
    const r = spawnSync(node, [join(dir, 'package', 'bin', 'agentcard.js'), '--version'], {
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`agentcard ${names.version}\n`);
  });
});

describe('the docs', () => {
  it('state the Kubernetes versions the chart accepts (Chart.yaml kubeVersion)', () => {
    const chart = parse(readFileSync(join(repoRoot, names.chartDir, 'Chart.yaml'), 'utf8')) as {
      kubeVersion: string;
    };
    const install = readFileSync(join(repoRoot, 'docs/install.md'), 'utf8');
    expect(install).toContain(`\`kubeVersion: ${chart.kubeVersion}\``);
    const minor = /^>=1\.(\d+)\.0-0$/.exec(chart.kubeVersion)?.[1];
    expect(install).toContain(`**Kubernetes 1.${minor} or newer.**`);
  });

  it('install the chart from the OCI repository the release pushes to', () => {
    for (const file of ['README.md', 'docs/install.md']) {
      expect(readFileSync(join(repoRoot, file), 'utf8'), file).toContain(
        `helm install agentcard-operator ${names.chartRef}`,
      );
    }
  });
});
