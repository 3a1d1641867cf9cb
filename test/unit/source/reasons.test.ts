// SourceAvailable's reasons are listed once for the CRD and the types (operator/api/reasons.ts);
// the fetch's own list (operator/source/fetch.ts) must not drift from it.
import { describe, expect, it } from 'vitest';
import { SOURCE_AVAILABLE_REASONS } from '../../../operator/api/reasons.ts';
import { FETCH_ERROR_CODES, type FetchErrorCode } from '../../../operator/discover/report.ts';
import { classifyFetchError, SOURCE_REASONS } from '../../../operator/source/fetch.ts';

describe('SourceAvailable reasons', () => {
  it('lists every reason a fetch can fail with', () => {
    expect(SOURCE_AVAILABLE_REASONS).toEqual(expect.arrayContaining(Object.values(SOURCE_REASONS)));
  });

  it('lists the reason of every fetch error code, known or not', () => {
    for (const code of [...FETCH_ERROR_CODES, 'something-new' as FetchErrorCode])
      expect(SOURCE_AVAILABLE_REASONS).toContain(classifyFetchError(code, 'm').reason);
  });

  it('gives each code its own reason, HTTPError only to an HTTP answer or an unknown code', () => {
    const http = FETCH_ERROR_CODES.filter((c) => classifyFetchError(c, 'm').reason === 'SourceHTTPError');
    expect(http).toEqual(['http']);
    expect(classifyFetchError('toString' as FetchErrorCode, 'm').reason).toBe('SourceHTTPError');
  });
});
