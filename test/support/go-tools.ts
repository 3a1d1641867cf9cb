/**
 * Go tools and files the tests use, from the Go module proxy at pinned versions, built or
 * unpacked once per machine into the cache shared with the control plane (never committed):
 * - `goTool`: `go install module/cmd@version` into `<cache>/go-tools/<name>-<version>/`;
 * - `goModuleDir`: a module's source tree (e.g. a project's CRDs), its h1: hash checked against
 *   the pinned one, as go.sum would.
 * The go command checks every module against the checksum database as usual.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cacheRoot } from '../controlplane/paths.ts';
import { withLock } from '../controlplane/lock.ts';

const run = promisify(execFile);
const goEnv = () => ({ ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' });

/** The binary of `pkg@version` (a main package path), built on first use. */
export async function goTool(pkg: string, version: string): Promise<string> {
  const name = pkg.split('/').at(-1)!;
  const dir = join(cacheRoot(), 'go-tools', `${name}-${version}`);
  const bin = join(dir, name);
  if (existsSync(bin)) return bin;
  await mkdir(dir, { recursive: true });
  await withLock(`${dir}.lock`, async () => {
    if (existsSync(bin)) return;
    const tmp = join(dir, `tmp-${process.pid}`);
    await rm(tmp, { recursive: true, force: true });
    try {
      await run('go', ['install', '-trimpath', `${pkg}@${version}`], {
        env: { ...goEnv(), GOBIN: tmp },
        timeout: 600_000,
      });
      await rename(join(tmp, name), bin); // atomic: a concurrent reader sees all of it or nothing
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });
  return bin;
}

/** The unpacked source of `module@version` (read-only, in the Go module cache). */
export async function goModuleDir(module: string, version: string, h1: string): Promise<string> {
  const { stdout } = await run('go', ['mod', 'download', '-json', `${module}@${version}`], {
    env: goEnv(),
    cwd: cacheRoot(), // outside any go.mod
    timeout: 300_000,
  });
  const info = JSON.parse(stdout) as { Dir?: string; Sum?: string; Error?: string };
  if (info.Error || !info.Dir)
    throw new Error(`go mod download ${module}@${version}: ${info.Error ?? 'no Dir'}`);
  if (info.Sum !== h1) throw new Error(`${module}@${version} has hash ${info.Sum}, expected ${h1}`);
  return info.Dir;
}

/**
 * The binary of a Go program kept in the repository (`sourceDir` with its `sources`), built once
 * per machine into `<cache>/<cacheName>-<hash of the sources>/<binName>`.
 */
export async function goProgram(opts: {
  sourceDir: string;
  sources: string[];
  cacheName: string;
  binName: string;
  /** `-mod=readonly` (go.sum pins every module) unless the program resolves them itself. */
  goflags?: string;
  timeoutMs?: number;
}): Promise<string> {
  const hash = createHash('sha256');
  for (const name of opts.sources)
    hash
      .update(name)
      .update('\0')
      .update(await readFile(join(opts.sourceDir, name)));
  const dir = join(cacheRoot(), `${opts.cacheName}-${hash.digest('hex').slice(0, 12)}`);
  const bin = join(dir, opts.binName);
  if (existsSync(bin)) return bin;
  await mkdir(dir, { recursive: true });
  await withLock(`${dir}.lock`, async () => {
    if (existsSync(bin)) return;
    const tmp = `${bin}.${process.pid}.tmp`;
    await run('go', ['build', '-trimpath', '-o', tmp, '.'], {
      cwd: opts.sourceDir,
      env: {
        ...process.env,
        CGO_ENABLED: '0',
        GOFLAGS: opts.goflags ?? '-mod=readonly',
        GOTOOLCHAIN: 'local',
      },
      timeout: opts.timeoutMs ?? 600_000,
    });
    await rename(tmp, bin); // atomic: a concurrent run sees the whole binary or none
  });
  return bin;
}
