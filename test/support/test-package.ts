/**
 * The `agentcard` command the tests run as a child process: the package as users get it (npm
 * package and image: package.json, bin/agentcard.js and the bundle in dist/, build/bundle.ts's
 * stagePackage), staged once per state of the sources under node_modules/.cache.
 *
 * Why not the TypeScript sources, as `npx agentcard` in a checkout runs them: a test run starts
 * hundreds of these processes, and each start from the sources costs about 0.35 s more CPU than
 * from the bundle (Node.js strips the types and loads some 300 modules instead of a few chunks),
 * on machines where the suite is CPU-bound. It also means the tests exercise what ships.
 *
 * The directory is named by a digest of everything the bundle is built from (the sources, the
 * build scripts, bin/agentcard.js, package.json and the lockfile), so an edit gives a new package
 * and a stale one is never run. Every project's global setup stages it (stageTestPackage), and
 * concurrent setups agree: each builds into a directory of its own and renames it into place.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { repoRoot } from './paths.ts';

const packagesDir = join(repoRoot, 'node_modules', '.cache', 'agentcard-test-package');

/** The files the bundle is built from, besides the dependencies (pinned by the lockfile). */
function inputFiles(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else files.push(path);
    }
  };
  walk(join(repoRoot, 'operator'));
  walk(join(repoRoot, 'build'));
  files.push(...['bin/agentcard.js', 'package.json', 'package-lock.json'].map((f) => join(repoRoot, f)));
  return files.sort();
}

let cachedDir: string | undefined;

/** The directory of the test package for the sources as they are now (staged or not). */
export function testPackageDir(): string {
  if (!cachedDir) {
    const hash = createHash('sha256');
    for (const file of inputFiles()) {
      hash.update(relative(repoRoot, file)).update('\0').update(readFileSync(file)).update('\0');
    }
    cachedDir = join(packagesDir, hash.digest('hex').slice(0, 16));
  }
  return cachedDir;
}

/** `bin/agentcard.js` of the staged test package (stageTestPackage must have run). */
export function agentcardBin(): string {
  const bin = join(testPackageDir(), 'bin', 'agentcard.js');
  if (!existsSync(bin)) {
    throw new Error(
      `the test package is not staged (${bin}): run the tests through vitest, whose global setup stages it`,
    );
  }
  return bin;
}

/**
 * Stages the test package for the current sources unless it is there, and removes the packages
 * of earlier sources. Returns its directory.
 */
export async function stageTestPackage(log: (line: string) => void): Promise<string> {
  const dir = testPackageDir();
  if (existsSync(join(dir, 'dist'))) return dir;
  const started = performance.now();
  const building = `${dir}.building-${process.pid}`;
  // Loaded here, not at the top: every test file that runs `agentcard` imports this module, and
  // only the global setup builds (esbuild's API is not worth loading in each of them).
  const { stagePackage } = await import('../../build/bundle.ts');
  await stagePackage(building);
  try {
    renameSync(building, dir);
    log(`staged the agentcard package the tests run in ${Math.round(performance.now() - started)} ms`);
  } catch (err) {
    // Another project's setup staged the same sources first: theirs is as good.
    rmSync(building, { recursive: true, force: true });
    if (!existsSync(join(dir, 'dist'))) throw err;
  }
  for (const entry of readdirSync(packagesDir)) {
    const builder = /\.building-(\d+)$/.exec(entry)?.[1];
    if (entry === basename(dir) || (builder && isRunning(Number(builder)))) continue;
    rmSync(join(packagesDir, entry), { recursive: true, force: true });
  }
  return dir;
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Global setup of the test projects (vitest.config.ts). */
export default async function setup(): Promise<void> {
  await stageTestPackage((line) => process.stderr.write(`[test package] ${line}\n`));
}
