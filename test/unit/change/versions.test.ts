import { describe, expect, it } from 'vitest';
import { majorBump, parseMajorVersion } from '../../../operator/change/versions.ts';

describe('parseMajorVersion', () => {
  it.each([
    ['1.4.0', { major: 1, minor: 4 }],
    ['v2', { major: 2, minor: 0 }],
    ['0.3', { major: 0, minor: 3 }],
    ['3.0.0-rc.1+build.5', { major: 3, minor: 0 }],
    [' 10.2.1 ', { major: 10, minor: 2 }],
  ])('reads %j', (version, expected) => {
    expect(parseMajorVersion(version)).toEqual(expected);
  });

  it.each(['2026-01-05', 'latest', '', '01.2.3', '1.2.3.4', 'v', '1..2', '99999999999999999999'])(
    'is not a version it can compare: %j',
    (version) => {
      expect(parseMajorVersion(version)).toBeUndefined();
    },
  );
});

describe('majorBump', () => {
  it.each([
    ['1.4.0', '2.0.0'],
    ['1.9.9', 'v2.0.0-rc.1'],
    ['1', '3'],
    ['0.3.1', '0.4.0'],
    ['0.9.0', '1.0.0'],
  ])('%s -> %s is a new major version', (before, after) => {
    expect(majorBump(before, after)).toEqual({ bumped: true });
  });

  it.each([
    ['1.4.0', '1.5.0', 'same-major'],
    ['1.4.0', '1.4.0', 'same-major'],
    ['0.3.0', '0.3.7', 'same-major'],
    ['2.0.0', '1.9.0', 'lower'],
    ['0.4.0', '0.3.0', 'lower'],
  ] as const)('%s -> %s is not (%s)', (before, after, why) => {
    expect(majorBump(before, after)).toEqual({ bumped: false, why });
  });

  it('names the version it cannot read', () => {
    expect(majorBump('1.0.0', 'spring-release')).toEqual({
      bumped: false,
      why: 'not-semver',
      version: 'spring-release',
    });
    expect(majorBump('2026.01', '2.0.0')).toEqual({ bumped: false, why: 'not-semver', version: '2026.01' });
  });
});
