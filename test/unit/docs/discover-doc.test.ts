// docs/discover.md lists every error code a discover run can report, and only those.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DISCOVER_ERROR_CODES } from '../../../operator/discover/report.ts';
import { repoRoot } from '../../support/paths.ts';

describe('docs/discover.md', () => {
  it('lists the error codes of DISCOVER_ERROR_CODES', () => {
    const doc = readFileSync(join(repoRoot, 'docs/discover.md'), 'utf8');
    const paragraph = /Each failure is one row with a code: ([^]*?)\n\n/.exec(doc)?.[1] ?? '';
    const listed = [...paragraph.matchAll(/`([a-z-]+)`/g)].map((m) => m[1]!);
    expect(listed.sort()).toEqual([...DISCOVER_ERROR_CODES].sort());
  });
});
