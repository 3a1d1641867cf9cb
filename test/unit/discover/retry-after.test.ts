/** Retry-After (RFC 9110 section 10.2.3) and the decision to ask again after a 503 or 429, without a network. */
import { describe, expect, it } from 'vitest';
import {
  DISCOVER_RETRY,
  type RetryInput,
  parseHttpDate,
  parseRetryAfter,
  retryDecision,
} from '../../../operator/discover/retry.ts';

const now = Date.parse('2026-03-01T12:00:00Z');

describe('parseRetryAfter', () => {
  it('delay-seconds', () => {
    expect(parseRetryAfter('5', now)).toBe(5000);
    expect(parseRetryAfter('0', now)).toBe(0);
    expect(parseRetryAfter(' 120 ', now)).toBe(120_000);
    expect(parseRetryAfter('99999', now)).toBe(99_999_000);
  });

  it('an HTTP-date, against the clock given', () => {
    expect(parseRetryAfter('Sun, 01 Mar 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 01 Mar 2026 13:00:00 GMT', now)).toBe(3_600_000);
    expect(parseRetryAfter('Fri, 31 Dec 9999 23:59:59 GMT', now)).toBeGreaterThan(2 ** 40);
  });

  it('a date already past is no delay', () => {
    expect(parseRetryAfter('Sun, 06 Nov 1994 08:49:37 GMT', now)).toBe(0);
    expect(parseRetryAfter('Sun, 01 Mar 2026 11:59:59 GMT', now)).toBe(0);
  });

  it('anything else is undefined', () => {
    for (const garbage of [
      '',
      'soon',
      '-5',
      '1.5',
      '5s',
      '0x10',
      '1e3',
      'Infinity',
      '5, 10',
      '2026-03-01T12:00:30Z', // ISO 8601 is no HTTP-date
      'Sun, 01 Mar 2026 12:00:30 UTC',
      'Sun, 1 Mar 2026 12:00:30 GMT',
      'Sun, 31 Feb 2026 12:00:30 GMT', // no such day
      'Sun, 01 Mar 2026 24:00:00 GMT',
      'Sun, 01 Foo 2026 12:00:30 GMT',
      'Sun, 01 Mar 2026 12:00:30 GMT trailing',
    ]) {
      expect(parseRetryAfter(garbage, now), garbage).toBeUndefined();
    }
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });
});

describe('parseHttpDate', () => {
  const expected = Date.parse('1994-11-06T08:49:37Z');
  it('accepts the three forms of RFC 9110 section 5.6.7', () => {
    expect(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT', now)).toBe(expected);
    expect(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT', now)).toBe(expected);
    expect(parseHttpDate('Sun Nov  6 08:49:37 1994', now)).toBe(expected);
    expect(parseHttpDate('Sun Nov 16 08:49:37 1994', now)).toBe(Date.parse('1994-11-16T08:49:37Z'));
  });

  it('a two-digit year is never more than 50 years in the future', () => {
    expect(parseHttpDate('Monday, 01-Jan-76 00:00:00 GMT', now)).toBe(Date.parse('2076-01-01T00:00:00Z'));
    expect(parseHttpDate('Monday, 01-Jan-77 00:00:00 GMT', now)).toBe(Date.parse('1977-01-01T00:00:00Z'));
  });

  it('years below 100 are not read as 19xx', () => {
    expect(new Date(parseHttpDate('Mon, 01 Jan 0050 00:00:00 GMT', now)!).getUTCFullYear()).toBe(50);
  });

  it('a leap second is accepted', () => {
    expect(parseHttpDate('Sat, 31 Dec 2016 23:59:60 GMT', now)).toBe(Date.parse('2017-01-01T00:00:00Z'));
  });
});

describe('retryDecision', () => {
  const base: RetryInput = {
    status: 503,
    retryAfter: '1',
    attempts: 1,
    nowMs: now,
    deadlineAt: now + 120_000,
    policy: DISCOVER_RETRY,
  };
  const decide = (input: Partial<RetryInput>) => retryDecision({ ...base, ...input });

  it('a 503 or 429 with Retry-After is asked again after the delay given', () => {
    expect(decide({})).toEqual({ retry: true, delayMs: 1000 });
    expect(decide({ status: 429, retryAfter: '5' })).toEqual({ retry: true, delayMs: 5000 });
    expect(decide({ retryAfter: 'Sun, 01 Mar 2026 12:00:10 GMT' })).toEqual({ retry: true, delayMs: 10_000 });
    expect(decide({ retryAfter: '0' })).toEqual({ retry: true, delayMs: 0 });
    expect(decide({ retryAfter: ['2'] })).toEqual({ retry: true, delayMs: 2000 });
    expect(decide({ attempts: 2 })).toEqual({ retry: true, delayMs: 1000 });
    expect(decide({ deadlineAt: undefined })).toEqual({ retry: true, delayMs: 1000 });
  });

  it('without Retry-After, or for another status, the failure is as it was', () => {
    expect(decide({ retryAfter: undefined })).toEqual({ retry: false, message: 'HTTP 503' });
    expect(decide({ status: 500 })).toEqual({ retry: false, message: 'HTTP 500' });
    expect(decide({ status: 404 })).toEqual({ retry: false, message: 'HTTP 404' });
    // A later answer without Retry-After still counts the attempts.
    expect(decide({ retryAfter: undefined, attempts: 2 })).toEqual({
      retry: false,
      message: 'HTTP 503 after 2 attempts',
    });
  });

  it('stops after the attempts of the policy, and says how many', () => {
    expect(decide({ attempts: 9 })).toEqual({ retry: true, delayMs: 1000 });
    expect(decide({ attempts: 10 })).toEqual({
      retry: false,
      message: 'HTTP 503 after 10 attempts: the last answer had Retry-After: 1',
    });
  });

  it('a wait over the cap is not made: the failure names the Retry-After', () => {
    expect(decide({ retryAfter: '31' })).toEqual({
      retry: false,
      message:
        'HTTP 503 after 1 attempt: Retry-After: 31 asks for a wait longer than 30s, the longest waited',
    });
    expect(decide({ retryAfter: '30' })).toEqual({ retry: true, delayMs: 30_000 });
    expect(decide({ status: 429, retryAfter: 'Fri, 31 Dec 9999 23:59:59 GMT' })).toEqual({
      retry: false,
      message:
        'HTTP 429 after 1 attempt: Retry-After: Fri, 31 Dec 9999 23:59:59 GMT asks for a wait longer than 30s, the longest waited',
    });
  });

  it("a wait that reaches the run's deadline is not made", () => {
    expect(decide({ retryAfter: '10', deadlineAt: now + 10_000 })).toEqual({
      retry: false,
      message: "HTTP 503 after 1 attempt: Retry-After: 10 asks for a wait past the run's deadline",
    });
    expect(decide({ retryAfter: '10', deadlineAt: now + 10_001 })).toEqual({ retry: true, delayMs: 10_000 });
  });

  it('a Retry-After that is no delay, or several, is a failure that says so', () => {
    expect(decide({ retryAfter: 'soon' })).toEqual({
      retry: false,
      message: 'HTTP 503 after 1 attempt: Retry-After: soon is neither a number of seconds nor an HTTP date',
    });
    expect(decide({ retryAfter: ['1', '60'] })).toEqual({
      retry: false,
      message: 'HTTP 503 after 1 attempt: Retry-After: 1, 60 is neither a number of seconds nor an HTTP date',
    });
    // A hostile value is shortened and stripped of control characters.
    const long = decide({ retryAfter: `x\u0007${'y'.repeat(500)}` });
    expect(long.retry).toBe(false);
    expect(!long.retry && long.message.length).toBeLessThan(200);
    expect(!long.retry && long.message).toContain('Retry-After: x?yyy');
  });
});
