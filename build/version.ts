/**
 * One version, single-sourced: package.json's `version` is the release version; the chart's
 * `version` and `appVersion` (so the image tag the chart pulls by default), the image's
 * `org.opencontainers.image.version` label (Dockerfile `ARG VERSION`) and every versioned
 * install command in the docs are copies that this module rewrites. The CLI's `--version` reads
 * package.json itself (operator/version.ts).
 *
 * Bump: `npm version <major|minor|patch|X.Y.Z>`. npm updates package.json and the lockfile, runs
 * this as the `version` lifecycle script, which syncs the copies, moves CHANGELOG.md's Unreleased
 * notes into a section for the new version and stages what it changed; npm then commits
 * (`chore(release): vX.Y.Z`, .npmrc) and tags `vX.Y.Z`; pushing the tag runs the release
 * (docs/versioning.md). `node build/version.ts` alone syncs the copies; `--check` only lists the
 * ones that differ (exit 1).
 * test/unit/release/version.test.ts fails when a copy differs.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { releaseNames, repoRoot, type ReleaseNames } from './release-names.ts';

/**
 * A place holding a copy of the version: group 1 is what precedes it, group 2 the version,
 * group 3 (optional) what must follow it.
 */
export interface VersionPlace {
  what: string;
  pattern: RegExp;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
/** A SemVer 2.0 version (pre-release and build metadata allowed). */
const SEMVER = String.raw`\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?`;

/** The copies in files with a fixed place: the chart and the Dockerfile. */
export function fixedPlaces(names: ReleaseNames): Record<string, VersionPlace[]> {
  return {
    [`${names.chartDir}/Chart.yaml`]: [
      { what: 'Chart.yaml version', pattern: new RegExp(`^(version: )(${SEMVER})$`, 'm') },
      { what: 'Chart.yaml appVersion', pattern: new RegExp(`^(appVersion: ')(${SEMVER})(')$`, 'm') },
    ],
    Dockerfile: [{ what: 'Dockerfile ARG VERSION', pattern: new RegExp(`^(ARG VERSION=)(${SEMVER})$`, 'm') }],
  };
}

/** The versioned install commands in the docs: the image tag, the chart's --version, the npm package. */
export function docPlaces(names: ReleaseNames): VersionPlace[] {
  return [
    { what: 'image tag', pattern: new RegExp(`(${escape(names.image)}:)(${SEMVER})`, 'g') },
    {
      what: 'chart --version',
      // `helm install NAME oci://.../chart --version X`, possibly with a line continuation.
      pattern: new RegExp(`(${escape(names.chartRef)}(?:\\s*\\\\\\n)?\\s+--version\\s+)(${SEMVER})`, 'g'),
    },
    { what: 'npm package', pattern: new RegExp(`(${escape(names.npmPackage)}@)(${SEMVER})`, 'g') },
    // The shell variable of the mirror and from-source recipes (docs/install.md).
    { what: 'VERSION=', pattern: new RegExp(`^(VERSION=)(${SEMVER})`, 'gm') },
  ];
}

/**
 * The files that show install commands or pin the released image: README.md, docs/**.md (not
 * CHANGELOG.md: history) and examples/** (the demo agent runs the operator's image at its version).
 */
export function docFiles(root = repoRoot): string[] {
  const below = (dir: string, ext: RegExp) =>
    readdirSync(join(root, dir), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && ext.test(e.name))
      .map((e) => relative(root, join(e.parentPath, e.name)))
      .sort();
  return ['README.md', ...below('docs', /\.md$/), ...below('examples', /\.ya?ml$/)];
}

/** Every copy of the version in `text` that is not `version`, as `what: found`. */
export function findDrift(text: string, places: VersionPlace[], version: string): string[] {
  const out: string[] = [];
  for (const place of places) {
    const re = new RegExp(
      place.pattern.source,
      place.pattern.flags.includes('g') ? place.pattern.flags : `${place.pattern.flags}g`,
    );
    let found = false;
    for (const m of text.matchAll(re)) {
      found = true;
      if (m[2] !== version) out.push(`${place.what}: ${m[2]}`);
    }
    if (!found && !place.pattern.flags.includes('g')) out.push(`${place.what}: not found`);
  }
  return out;
}

/** `text` with every copy of the version set to `version`. */
export function applyVersion(text: string, places: VersionPlace[], version: string): string {
  let out = text;
  for (const place of places) {
    out = out.replace(place.pattern, (_m, before: string, _old: string, after: unknown) =>
      // Without a group 3, the third argument is the match's offset.
      typeof after === 'string' ? `${before}${version}${after}` : `${before}${version}`,
    );
  }
  return out;
}

/** Every file with its places, relative to `root`. */
export function versionedFiles(root = repoRoot): Array<{ file: string; places: VersionPlace[] }> {
  const names = releaseNames(root);
  const fixed = Object.entries(fixedPlaces(names)).map(([file, places]) => ({ file, places }));
  return [...fixed, ...docFiles(root).map((file) => ({ file, places: docPlaces(names) }))];
}

/** The copies that differ from package.json's version, as `file: what: found`. */
export function checkVersions(root = repoRoot): string[] {
  const { version } = releaseNames(root);
  return versionedFiles(root).flatMap(({ file, places }) =>
    findDrift(readFileSync(join(root, file), 'utf8'), places, version).map((d) => `${file}: ${d}`),
  );
}

/** Writes package.json's version into every copy; returns the files it changed. */
export function syncVersions(root = repoRoot): string[] {
  const { version } = releaseNames(root);
  const changed: string[] = [];
  for (const { file, places } of versionedFiles(root)) {
    const path = join(root, file);
    const before = readFileSync(path, 'utf8');
    const after = applyVersion(before, places, version);
    if (after !== before) {
      writeFileSync(path, after);
      changed.push(file);
    }
  }
  return changed;
}

/**
 * CHANGELOG.md with the Unreleased notes moved under `## [version] - date` and an empty
 * Unreleased section above it; unchanged when the version has a section already.
 */
export function cutRelease(changelog: string, version: string, date: string): string {
  if (changelog.includes(`\n## [${version}]`)) return changelog;
  const heading = '## [Unreleased]\n';
  const at = changelog.indexOf(heading);
  if (at < 0) throw new Error('CHANGELOG.md has no "## [Unreleased]" section');
  return `${changelog.slice(0, at)}${heading}\n## [${version}] - ${date}\n${changelog.slice(at + heading.length)}`;
}

if (import.meta.main) {
  if (process.argv.includes('--check')) {
    const drift = checkVersions();
    for (const line of drift) process.stderr.write(`${line} (package.json: ${releaseNames().version})\n`);
    process.exit(drift.length === 0 ? 0 : 1);
  }
  const changed = syncVersions();
  const release = process.env.npm_lifecycle_event === 'version';
  if (release) {
    const file = join(repoRoot, 'CHANGELOG.md');
    const before = readFileSync(file, 'utf8');
    const after = cutRelease(before, releaseNames().version, new Date().toISOString().slice(0, 10));
    if (after !== before) {
      writeFileSync(file, after);
      changed.push('CHANGELOG.md');
    }
  }
  process.stdout.write(
    changed.length ? `set the version in ${changed.join(', ')}\n` : 'every copy of the version is current\n',
  );
  // As npm's `version` lifecycle script: stage the copies, so npm's commit holds them.
  if (release && changed.length > 0) {
    execFileSync('git', ['add', '--', ...changed], { cwd: repoRoot, stdio: 'inherit' });
  }
}
