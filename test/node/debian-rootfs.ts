// Root file systems made of Debian packages, for the product images of product-images.ts: the
// files a package installed on this machine (`dpkg -L`), copied into an image's folder the way a
// merged-/usr Debian (13, which distroless and the nginx images build on) lays them out. Only
// what a container runs from is kept: no manual pages, no documentation but the copyright files.
import { execFileSync, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readlinkSync,
  realpathSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { dirname, join } from 'node:path';

/** Folders that merged-/usr Debian keeps as symlinks into /usr. */
const MERGED = ['bin', 'sbin', 'lib', 'lib64'] as const;

/** The path a file of a package has on a merged-/usr system: /lib/x.so -> /usr/lib/x.so. */
export function mergedUsrPath(path: string): string {
  for (const dir of MERGED) {
    if (path === `/${dir}` || path.startsWith(`/${dir}/`)) return `/usr${path}`;
  }
  return path;
}

/** Whether a packaged file belongs in a container image (no docs but copyright, no man pages, no init scripts). */
export function keepInImage(path: string): boolean {
  if (/^\/usr\/share\/doc\//.test(path)) return /\/copyright$/.test(path);
  return !/^\/(usr\/share\/(man|info|lintian|bug|vim|apport)|etc\/(init\.d|logrotate\.d|ufw|default)|usr\/lib\/systemd|lib\/systemd)(\/|$)/.test(
    path,
  );
}

/** `dpkg-query` version of each package (for cache keys): `name=version` lines, sorted. */
export function packageVersions(packages: readonly string[]): string[] {
  const out = execFileSync('dpkg-query', ['-W', '-f', '${Package}=${Version}\n', ...packages], {
    encoding: 'utf8',
  });
  return out.trim().split('\n').sort();
}

/**
 * The Debian packages that hold the shared libraries `binaries` load (`ldd`), found with one
 * `dpkg-query -S`: what a base image must carry for them to run.
 */
export function libraryPackages(binaries: readonly string[]): string[] {
  const libs = new Set<string>();
  for (const bin of binaries) {
    const out = execFileSync('ldd', [bin], { encoding: 'utf8' });
    for (const m of out.matchAll(/(\/\S+)\s+\(0x/g)) libs.add(m[1]!);
  }
  // dpkg records the unmerged path (/lib/x86_64-linux-gnu/libc.so.6) of the file a symlink names.
  const candidates = (path: string) => {
    const real = realpathSync(path);
    return [path, real, real.replace(/^\/usr\//, '/'), path.replace(/^\/usr\//, '/')];
  };
  const all = [...new Set([...libs].flatMap(candidates))];
  const r = spawnSync('dpkg-query', ['-S', ...all], { encoding: 'utf8' });
  const owners = new Map<string, string>();
  for (const line of r.stdout.split('\n')) {
    const m = /^([^:\s]+)(?::\w+)?: (\/.*)$/.exec(line);
    if (m) owners.set(m[2]!, m[1]!);
  }
  const packages = new Set<string>();
  for (const lib of libs) {
    const pkg = candidates(lib)
      .map((c) => owners.get(c))
      .find(Boolean);
    if (!pkg) throw new Error(`no Debian package owns ${lib} (needed by ${binaries.join(', ')})`);
    packages.add(pkg);
  }
  return [...packages].sort();
}

/** Creates the merged-/usr symlinks (/bin -> usr/bin, ...) in `root`. */
export function mergedUsrLinks(root: string): void {
  for (const dir of MERGED) {
    mkdirSync(join(root, 'usr', dir), { recursive: true });
    symlinkSync(`usr/${dir}`, join(root, dir));
  }
}

/**
 * Copies the files of the installed `packages` into `root` (call mergedUsrLinks first): regular
 * files with their mode, symlinks as they are (pointing into /usr where they pointed into /lib).
 * Fails naming a package that is not installed.
 */
export function copyPackages(root: string, packages: readonly string[]): void {
  for (const pkg of packages) {
    let listing: string;
    try {
      listing = execFileSync('dpkg-query', ['-L', pkg], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch {
      throw new Error(`the Debian package ${pkg} is not installed: run \`apt-get install ${pkg}\``);
    }
    for (const path of listing.split('\n')) {
      if (!path.startsWith('/') || path === '/.' || !keepInImage(path)) continue;
      let stat;
      try {
        stat = lstatSync(path);
      } catch {
        continue; // listed but removed (e.g. a diverted file)
      }
      const target = join(root, mergedUsrPath(path));
      if (stat.isDirectory()) {
        mkdirSync(target, { recursive: true });
      } else if (stat.isSymbolicLink()) {
        if (existsSync(target) || isLink(target)) continue;
        mkdirSync(dirname(target), { recursive: true });
        const link = readlinkSync(path);
        symlinkSync(link.startsWith('/') ? mergedUsrPath(link) : link, target);
      } else if (stat.isFile()) {
        mkdirSync(dirname(target), { recursive: true });
        copyFileSync(path, target);
      }
    }
  }
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Whether `path` is an executable regular file (for checks of an assembled root). */
export function isExecutable(path: string): boolean {
  try {
    const s = statSync(path);
    return s.isFile() && (s.mode & 0o111) !== 0;
  } catch {
    return false;
  }
}
