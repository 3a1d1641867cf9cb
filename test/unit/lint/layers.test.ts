// The layer rules of operator/ (.dependency-cruiser.cjs, from layers.json) fire: run on a small
// tree in a temporary folder with an upward import, an import between two controllers and a
// cycle, the real command (as `npm run lint` runs it) reports exactly those, and passes the
// imports the layers allow.
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../../controlplane/paths.ts';

const dir = mkdtempSync(join(tmpdir(), 'layers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function write(path: string, text: string): void {
  mkdirSync(dirname(join(dir, path)), { recursive: true });
  writeFileSync(join(dir, path), text);
}

function cruise(): Array<{ rule: string; from: string; to: string }> {
  const run = spawnSync(
    process.execPath,
    [
      join(repoRoot, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruiser.mjs'),
      'operator',
      '--config',
      '.dependency-cruiser.cjs',
      '--output-type',
      'json',
    ],
    { cwd: dir, encoding: 'utf8' },
  );
  const out = JSON.parse(run.stdout) as {
    summary: { violations: Array<{ rule: { name: string }; from: string; to: string }> };
  };
  return out.summary.violations.map((v) => ({ rule: v.rule.name, from: v.from, to: v.to }));
}

describe('the layer rules', () => {
  copyFileSync(join(repoRoot, '.dependency-cruiser.cjs'), join(dir, '.dependency-cruiser.cjs'));
  copyFileSync(join(repoRoot, 'layers.json'), join(dir, 'layers.json'));
  write(
    'tsconfig.json',
    JSON.stringify({ compilerOptions: { allowImportingTsExtensions: true, noEmit: true } }),
  );

  it('pass what the layers allow', () => {
    write('operator/api/names.ts', 'export const A = 1;\n');
    write('operator/runtime/queue.ts', "import { A } from '../api/names.ts';\nexport const Q = A;\n");
    write(
      'operator/controllers/metrics.ts',
      "import { Q } from '../runtime/queue.ts';\nexport const M = Q;\n",
    );
    write(
      'operator/controllers/catalogs/plan.ts',
      "import { M } from '../metrics.ts';\nexport const P = M;\n",
    );
    write(
      'operator/controllers/adoption/plan.ts',
      "import { Q } from '../../runtime/queue.ts';\nexport const R = Q;\n",
    );
    expect(cruise()).toEqual([]);
  });

  it('refuse an upward import, an import between controllers, and a cycle', () => {
    write(
      'operator/runtime/queue.ts',
      "import { M } from '../controllers/metrics.ts';\nexport const Q = M;\n",
    );
    write(
      'operator/controllers/adoption/plan.ts',
      "import { P } from '../catalogs/plan.ts';\nexport const R = P;\n",
    );
    write('operator/card/a.ts', "import { B } from './b.ts';\nexport const A = B;\n");
    write('operator/card/b.ts', "import { A } from './a.ts';\nexport const B = A;\n");
    const found = cruise();
    expect(found).toContainEqual({
      rule: 'layer-services-and-runtime',
      from: 'operator/runtime/queue.ts',
      to: 'operator/controllers/metrics.ts',
    });
    expect(found).toContainEqual({
      rule: 'layer-controllers',
      from: 'operator/controllers/adoption/plan.ts',
      to: 'operator/controllers/catalogs/plan.ts',
    });
    expect(found.filter((v) => v.rule === 'no-circular').map((v) => v.from)).toEqual(
      expect.arrayContaining(['operator/card/a.ts']),
    );
  });
});

describe('layers.json', () => {
  it('places every folder and file of operator/', () => {
    const { layers } = JSON.parse(readFileSync(join(repoRoot, 'layers.json'), 'utf8')) as {
      layers: Array<{ folders: string[] }>;
    };
    const placed = new Set(layers.flatMap((l) => l.folders));
    const operator = join(repoRoot, 'operator');
    const unplaced = readdirSync(operator, { withFileTypes: true }).flatMap((entry) => {
      if (entry.isFile()) return placed.has('operator/*.ts') ? [] : [entry.name];
      if (entry.name !== 'controllers') return placed.has(entry.name) ? [] : [entry.name];
      // The controllers' parent: each folder and file in it is placed on its own.
      return readdirSync(join(operator, 'controllers')).flatMap((c) =>
        placed.has(`controllers/${c}`) ? [] : [`controllers/${c}`],
      );
    });
    expect(unplaced).toEqual([]);
  });
});

describe('docs/design.md', () => {
  it('shows the layers of layers.json, in order', () => {
    const { layers } = JSON.parse(readFileSync(join(repoRoot, 'layers.json'), 'utf8')) as {
      layers: Array<{ name: string; folders: string[] }>;
    };
    const design = readFileSync(join(repoRoot, 'docs', 'design.md'), 'utf8');
    const rows = [...design.matchAll(/^\| (\d+)\s+\| ([^|]+)\| ([^|]+)\|/gm)].map((m) => ({
      name: m[2]!.trim(),
      folders: m[3]!
        .trim()
        .split(/,\s*/)
        .map((f) => f.replace(/`/g, '')),
    }));
    expect(rows).toEqual(layers.map((l) => ({ name: l.name, folders: l.folders })));
  });
});
