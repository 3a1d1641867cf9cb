// SourceAvailable's reasons are listed once for the CRD and the types (operator/api/reasons.ts);
// the fetch's own list (operator/source/fetch.ts) must not drift from it.
import { describe, expect, it } from 'vitest';
import { SOURCE_AVAILABLE_REASONS } from '../../../operator/api/reasons.ts';
import { classifyFetchError, SOURCE_REASONS } from '../../../operator/source/fetch.ts';

describe('SourceAvailable reasons', () => {
  it('lists every reason a fetch can fail with', () => {
    expect(SOURCE_AVAILABLE_REASONS).toEqual(expect.arrayContaining(Object.values(SOURCE_REASONS)));
  });

  it('lists the reason of every fetch error code, known or not', () => {
    for (const code of ['blocked', 'timeout', 'redirect', 'not-json', 'too-deep', 'something-new'])
      expect(SOURCE_AVAILABLE_REASONS).toContain(classifyFetchError(code, 'm').reason);
  });
});
