import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { withLock } from './lock.ts';
import { cacheRoot, moduleDir } from './paths.ts';

/** The programs this Go module builds, each one file in the cache's `bin/`. */
export const BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'pki'] as const;
export type Binary = (typeof BINARIES)[number];

const PACKAGES = [
  './cmd/etcd',
  './cmd/pki',
  'k8s.io/kubernetes/cmd/kube-apiserver',
  'k8s.io/kubernetes/cmd/kube-controller-manager',
];

/** The Kubernetes release go.mod pins (the `k8s.io/kubernetes vX.Y.Z` requirement). */
export function kubernetesVersion(goMod: string): string {
  const match = /^\s*k8s\.io\/kubernetes (v\d+\.\d+\.\d+)\b/m.exec(goMod);
  if (!match) throw new Error('test/controlplane/go.mod does not require k8s.io/kubernetes vX.Y.Z');
  return match[1]!;
}

/** Linker flags that stamp the version into the binaries, as the Kubernetes release build does (helm and kubectl read it). */
export function versionLdflags(version: string): string {
  const [major, minor] = version.slice(1).split('.');
  const pkg = 'k8s.io/component-base/version';
  return [
    `-X ${pkg}.gitVersion=${version}`,
    `-X ${pkg}.gitMajor=${major}`,
    `-X ${pkg}.gitMinor=${minor}`,
    `-X ${pkg}.gitTreeState=clean`,
  ].join(' ');
}

/** A short digest of the inputs that decide the binaries: go.mod, go.sum, the commands' sources and the build flags. */
export function buildKey(inputs: { name: string; content: string | Buffer }[], flags: string): string {
  const hash = createHash('sha256');
  for (const input of [...inputs].sort((a, b) => a.name.localeCompare(b.name))) {
    hash.update(`${input.name}\0`).update(input.content).update('\0');
  }
  return hash.update(flags).digest('hex').slice(0, 12);
}

function moduleInputs(): { name: string; content: Buffer }[] {
  const files = ['go.mod', 'go.sum'];
  for (const entry of readdirSync(join(moduleDir, 'cmd'), { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) files.push(relative(moduleDir, join(entry.parentPath, entry.name)));
  }
  return files.map((name) => ({ name, content: readFileSync(join(moduleDir, name)) }));
}

/** The cache folder of this exact build: `<cache>/controlplane-<k8s version>-<key>`. */
export function buildDir(): { dir: string; version: string; ldflags: string } {
  const version = kubernetesVersion(readFileSync(join(moduleDir, 'go.mod'), 'utf8'));
  const ldflags = `-s -w ${versionLdflags(version)}`;
  const key = buildKey(moduleInputs(), `${PACKAGES.join(' ')} ${ldflags}`);
  return { dir: join(cacheRoot(), `controlplane-${version}-${key}`), version, ldflags };
}

/**
 * Returns the folder holding the built binaries, building them with the Go toolchain first if
 * this version is not in the cache yet (a few minutes on a 2-core machine; later calls return at
 * once). Concurrent callers wait for one build.
 */
export async function ensureBinaries(log: (line: string) => void): Promise<string> {
  const { dir, version, ldflags } = buildDir();
  const bin = join(dir, 'bin');
  if (complete(bin)) return bin;
  await withLock(
    `${dir}.lock`,
    async () => {
      if (complete(bin)) return;
      await checkGo();
      log(`building etcd, kube-apiserver ${version} and kube-controller-manager into ${bin}`);
      log('(only the first run on a machine builds: about 11 minutes on 2 cores, module downloads included)');
      const started = Date.now();
      const tmp = join(dir, `bin.tmp-${process.pid}`);
      rmSync(tmp, { recursive: true, force: true });
      mkdirSync(tmp, { recursive: true });
      await run('go', ['build', '-ldflags', ldflags, '-o', `${tmp}/`, ...PACKAGES], moduleDir, {
        // A clean machine must build from go.sum as committed; VCS stamping needs no git here.
        GOFLAGS: '-mod=readonly -buildvcs=false',
      });
      rmSync(bin, { recursive: true, force: true });
      renameSync(tmp, bin);
      const seconds = Math.round((Date.now() - started) / 1000);
      writeFileSync(
        join(dir, 'build.json'),
        JSON.stringify({ version, seconds, builtAt: new Date() }) + '\n',
      );
      log(`built in ${seconds} s`);
    },
    () => log(`waiting for another process that is building ${bin}`),
  );
  return bin;
}

function complete(bin: string): boolean {
  return BINARIES.every((name) => existsSync(join(bin, name)));
}

/** Fails with an instruction when Go is missing or too old for go.mod. */
async function checkGo(): Promise<void> {
  let goVersion: string;
  try {
    goVersion = (await run('go', ['env', 'GOVERSION'], moduleDir, {}, true)).trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new Error(
        'the test control plane is built from source with Go, and `go` is not on PATH: install Go 1.26 or newer (https://go.dev/dl/)',
        { cause: err },
      );
    }
    throw err;
  }
  const [major = 0, minor = 0] = goVersion.replace(/^go/, '').split('.').map(Number);
  if (major < 1 || (major === 1 && minor < 26)) {
    throw new Error(`the test control plane needs Go 1.26 or newer to build, found ${goVersion}`);
  }
}

function run(
  cmd: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
  capture = false,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', capture ? 'pipe' : 'inherit', 'inherit'],
    });
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args[0]} failed with exit code ${code}`)),
    );
  });
}
