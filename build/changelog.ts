/**
 * The release notes of one version: its section of CHANGELOG.md (Keep a Changelog 1.1.0: one
 * `## [X.Y.Z] - YYYY-MM-DD` heading per release, newest first, `## [Unreleased]` on top).
 * The release workflow runs `node build/changelog.ts X.Y.Z > notes.md`; a tag whose version has
 * no section fails the release, so a release never goes out without its notes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './release-names.ts';

/** The body of the `## [version]` section (without its heading), trimmed; undefined when absent. */
export function releaseNotes(changelog: string, version: string): string | undefined {
  const lines = changelog.split('\n');
  const heading = new RegExp(`^## \\[${version.replace(/[.+]/g, '\\$&')}\\](?:\\s|$)`);
  const start = lines.findIndex((l) => heading.test(l));
  if (start < 0) return undefined;
  let end = lines.findIndex((l, i) => i > start && /^## /.test(l));
  if (end < 0) end = lines.length;
  // Link reference definitions at the end of the file (`[0.1.0]: https://...`) are not notes.
  const body = lines
    .slice(start + 1, end)
    .filter((l) => !/^\[[^\]]+\]: /.test(l))
    .join('\n')
    .trim();
  return body === '' ? undefined : body;
}

/** The release versions of the changelog, newest first (not Unreleased). */
export function releasedVersions(changelog: string): Array<{ version: string; date: string }> {
  return [...changelog.matchAll(/^## \[(\d+\.\d+\.\d+[^\]]*)\] - (\d{4}-\d{2}-\d{2})$/gm)].map((m) => ({
    version: m[1]!,
    date: m[2]!,
  }));
}

if (import.meta.main) {
  const version = process.argv[2];
  if (!version) {
    process.stderr.write('usage: node build/changelog.ts X.Y.Z\n');
    process.exit(2);
  }
  const notes = releaseNotes(readFileSync(join(repoRoot, 'CHANGELOG.md'), 'utf8'), version);
  if (notes === undefined) {
    process.stderr.write(`CHANGELOG.md has no section "## [${version}] - YYYY-MM-DD" with notes\n`);
    process.exit(1);
  }
  process.stdout.write(`${notes}\n`);
}
