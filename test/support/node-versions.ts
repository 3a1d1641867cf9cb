/**
 * The Node.js binaries the packaged CLI is tested on: 24 is the `node` devDependency that
 * `npm ci` installs; 22 comes from the same `node` npm package, installed once per machine into
 * the machine-wide cache (test/controlplane/paths.ts), like the control plane's binaries.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { cacheRoot } from '../controlplane/paths.ts';
import { withLock } from '../controlplane/lock.ts';
import { repoRoot } from './paths.ts';

/** The Node.js 22 release the CLI is tested on (the `node` npm package of that version). */
export const NODE22_VERSION = '22.23.3';

function version(bin: string): string {
  return spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout.trim();
}

/** Node.js 24 from node_modules. */
export function node24(): string {
  const bin = realpathSync(join(repoRoot, 'node_modules', '.bin', 'node'));
  if (!version(bin).startsWith('v24.'))
    throw new Error(`expected Node.js 24 from the node devDependency, found ${version(bin)}`);
  return bin;
}

/** Node.js 22, installed into the machine cache on first use (needs the npm registry once). */
export async function node22(log: (line: string) => void = () => {}): Promise<string> {
  const dir = join(cacheRoot(), `node-${NODE22_VERSION}`);
  const bin = join(dir, 'node_modules', 'node', 'bin', 'node');
  const ready = () => existsSync(bin) && version(bin) === `v${NODE22_VERSION}`;
  if (ready()) return bin;
  return withLock(`${dir}.lock`, async () => {
    if (ready()) return bin;
    log(`installing Node.js ${NODE22_VERSION} (npm package node@${NODE22_VERSION}) into ${dir}`);
    rmSync(dir, { recursive: true, force: true });
    const npm = spawnSync(
      'npm',
      [
        'install',
        '--prefix',
        dir,
        '--no-save',
        '--no-package-lock',
        '--no-audit',
        '--no-fund',
        `node@${NODE22_VERSION}`,
      ],
      // npm runs on Node.js 24: the `node` package's install script runs on whatever runs npm.
      {
        encoding: 'utf8',
        env: { ...process.env, PATH: `${join(repoRoot, 'node_modules', '.bin')}:${process.env.PATH ?? ''}` },
        timeout: 300_000,
      },
    );
    if (npm.status !== 0 || !ready()) {
      throw new Error(
        `installing node@${NODE22_VERSION} failed: ${npm.stderr.split('\n').slice(-8).join('\n')}`,
      );
    }
    return bin;
  });
}
