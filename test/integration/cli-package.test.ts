/**
 * The `agentcard` CLI as CI pipelines install it: `npm pack`, then `npm install -g` of the
 * tarball into an empty prefix, then validate, sign and verify from there, on Node.js 22 and 24.
 * The tarball holds the bundle (build/bundle.ts) and no dependency, so the install needs no
 * registry and nothing TypeScript (Node refuses to strip types under node_modules).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { node22, node24 } from '../support/node-versions.ts';
import { repoRoot } from '../support/paths.ts';

const manifest = join(repoRoot, 'test', 'fixtures', 'cards', 'recipe-agent.yaml');
let work: string;
let tarball: string;
let packed: { files: Array<{ path: string }>; unpackedSize: number; size: number };

/** Runs `cmd` with `node` first on PATH, as a CI job with that Node.js set up would. */
function run(node: string, cmd: string, args: string[], opts: { cwd?: string } = {}) {
  return spawnSync(cmd, args, {
    cwd: opts.cwd ?? work,
    encoding: 'utf8',
    timeout: 120_000,
    env: {
      HOME: join(work, 'home'),
      PATH: `${dirname(node)}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      npm_config_cache: join(work, 'npm-cache'),
      npm_config_update_notifier: 'false',
    },
  });
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'agentcard-package-'));
  mkdirSync(join(work, 'home'));
  // `npm pack` runs the prepack script, which builds dist/ (npm run build).
  const pack = spawnSync('npm', ['pack', '--json', '--pack-destination', work], {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: 180_000,
    env: { ...process.env, PATH: `${join(repoRoot, 'node_modules', '.bin')}:${process.env.PATH ?? ''}` },
  });
  if (pack.status !== 0) throw new Error(`npm pack failed: ${pack.stderr.slice(-2000)}`);
  const json = pack.stdout.slice(pack.stdout.indexOf('['));
  [packed] = JSON.parse(json) as [typeof packed & { filename: string }];
  tarball = join(work, (packed as typeof packed & { filename: string }).filename);
}, 240_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the packed CLI', () => {
  it('holds the bundle, bin/agentcard.js and package.json, without sources or dependencies', () => {
    const paths = packed.files.map((f) => f.path).sort();
    expect(paths).toContain('bin/agentcard.js');
    expect(paths).toContain('dist/agentcard.js');
    expect(paths).toContain('package.json');
    const others = paths.filter(
      (p) => !/^(dist\/.+\.js|bin\/agentcard\.js|package\.json|README\.md)$/.test(p),
    );
    expect(others).toEqual([]);
    // The demo agent (express, a gRPC server) is for the image only.
    expect(paths.filter((p) => /echo-agent/.test(p))).toEqual([]);
    // Small: the bundle is a few MiB (no node_modules, no generated Kubernetes API classes).
    expect(packed.unpackedSize).toBeLessThan(8 * 2 ** 20);
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      engines?: { node?: string };
    };
    expect(Object.keys(pkg.dependencies ?? {})).toEqual([]);
    expect(pkg.engines?.node).toBe('>=22');
  });

  for (const [label, nodeBinary] of [
    ['Node.js 22', () => node22((line) => process.stderr.write(`[node22] ${line}\n`))],
    ['Node.js 24', async () => node24()],
  ] as const) {
    it(`installs with npm install -g into an empty prefix and validates, signs and verifies on ${label}`, async () => {
      const node = await nodeBinary();
      const major = label.slice(-2);
      expect(run(node, node, ['--version']).stdout).toMatch(new RegExp(`^v${major}\\.`));
      const prefix = join(work, `prefix-${major}`);
      mkdirSync(prefix);
      const install = run(node, 'npm', [
        'install',
        '-g',
        '--prefix',
        prefix,
        '--no-audit',
        '--no-fund',
        '--offline',
        tarball,
      ]);
      expect(install.status, install.stderr).toBe(0);
      const agentcard = join(prefix, 'bin', 'agentcard');
      const dir = join(work, `run-${major}`);
      mkdirSync(dir);

      const validate = run(node, agentcard, ['validate', '--strict', '-f', manifest], { cwd: dir });
      expect(validate.stderr).toBe('');
      expect(validate.status).toBe(0);
      expect(validate.stdout).toMatch(/valid/);

      const keygen = run(
        node,
        agentcard,
        ['keygen', '--alg', 'ES256', '--kid', 'ci-key', '--out', 'key.jwk', '--jwks-out', 'jwks.json'],
        { cwd: dir },
      );
      expect(keygen.status, keygen.stderr).toBe(0);
      const sign = run(node, agentcard, ['sign', '-f', manifest, '--key', 'key.jwk'], { cwd: dir });
      expect(sign.status, sign.stderr).toBe(0);
      const card = JSON.parse(sign.stdout) as { signatures?: Array<{ protected: string }> };
      expect(card.signatures).toHaveLength(1);
      writeFileSync(join(dir, 'card.json'), sign.stdout);

      const verify = run(node, agentcard, ['verify', '-f', 'card.json', '--jwks', 'jwks.json'], { cwd: dir });
      expect(verify.stderr).toBe('');
      expect(verify.status).toBe(0);
      expect(verify.stdout).toMatch(/verified: kid ci-key/);

      // A tampered card fails verification with a reason per signature, without a stack trace.
      writeFileSync(join(dir, 'tampered.json'), JSON.stringify({ ...card, description: 'tampered' }));
      const tampered = run(node, agentcard, ['verify', '-f', 'tampered.json', '--jwks', 'jwks.json'], {
        cwd: dir,
      });
      expect(tampered.status).not.toBe(0);
      expect(tampered.stderr).toMatch(/signature does not match/);
      expect(tampered.stderr.trim().split('\n').at(-1)).toMatch(
        /^agentcard: tampered\.json: no signature verified/,
      );
      expect(tampered.stderr).not.toMatch(/\n\s+at /);

      // The command the package leaves out says where it is, in one line.
      const demo = run(node, agentcard, ['demo-agent', '--port=0', '--grpc-port=0'], { cwd: dir });
      expect(demo.status).toBe(1);
      expect(demo.stderr).toMatch(
        /^agentcard: demo-agent: not in this package; it ships in the operator image/,
      );
      expect(demo.stderr.trim().split('\n')).toHaveLength(1);
    });
  }
});
