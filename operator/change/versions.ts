/**
 * Whether a card's `version` moved to a new major version (pure), for the rule "a breaking change
 * needs a new major version". A2A 1.0 (section 4.4.1) leaves the format of `version` to the agent;
 * most agents use Semantic Versioning, so the comparison reads it the way SemVer 2.0.0 does, and
 * says so when it cannot.
 *
 * - `MAJOR[.MINOR[.PATCH]]` with an optional leading `v`, and a pre-release or build suffix after
 *   PATCH (`1.2.0-rc.1`, `1.2.0+build`), are understood; only MAJOR and MINOR matter.
 * - Major version zero is for initial development (SemVer item 4): there a new MINOR is the new
 *   major (0.3 -> 0.4 is a bump), as npm's and Cargo's caret ranges read it.
 * - Anything else (a date, a name) is not a version this can compare: no bump is seen, so a
 *   breaking change needs the accept annotation instead.
 */

export interface MajorVersion {
  major: number;
  minor: number;
}

// MAJOR, MAJOR.MINOR or MAJOR.MINOR.PATCH; a pre-release or build suffix only after PATCH, as in
// SemVer items 9 and 10 (so that a date such as 2026-01-05 is not read as version 2026).
const SEMVER_ISH = /^v?(0|[1-9]\d*)(?:\.(0|[1-9]\d*)(?:\.(?:0|[1-9]\d*)(?:[-+][0-9A-Za-z.+-]+)?)?)?$/;

/** MAJOR and MINOR of a semver-ish version, or undefined when it is not one. */
export function parseMajorVersion(version: string): MajorVersion | undefined {
  const m = SEMVER_ISH.exec(version.trim());
  if (!m) return undefined;
  const major = Number(m[1]);
  const minor = Number(m[2] ?? '0');
  return Number.isSafeInteger(major) && Number.isSafeInteger(minor) ? { major, minor } : undefined;
}

export type MajorBump =
  { bumped: true } | { bumped: false; why: 'same-major' | 'lower' | 'not-semver'; version?: string };

/** Whether `after` is a new major version of `before` (higher, not just different). */
export function majorBump(before: string, after: string): MajorBump {
  const [b, a] = [parseMajorVersion(before), parseMajorVersion(after)];
  if (!b) return { bumped: false, why: 'not-semver', version: before };
  if (!a) return { bumped: false, why: 'not-semver', version: after };
  const key = (v: MajorVersion) => (v.major === 0 ? [0, v.minor] : [v.major, 0]);
  const [bk, ak] = [key(b), key(a)] as [[number, number], [number, number]];
  const order = ak[0] - bk[0] || ak[1] - bk[1];
  if (order > 0) return { bumped: true };
  return { bumped: false, why: order === 0 ? 'same-major' : 'lower' };
}
