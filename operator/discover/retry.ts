/**
 * Asking again after `503 Service Unavailable` (RFC 9110 section 15.6.4) or `429 Too Many
 * Requests` (RFC 6585 section 4), the way a careful client does: only when the server said when
 * (`Retry-After`, RFC 9110 section 10.2.3), a bounded number of times, and never longer than a
 * cap or past the run's deadline, whatever the server asked for. Without a `Retry-After` the
 * answer is a failure, as any other status. Pure: the fetcher does the waiting.
 */
import { shorten } from './plan.ts';

export interface RetryPolicy {
  /** Requests in all, the first one included. */
  maxAttempts: number;
  /** Longest single wait; a server asking for longer gets the failure at once. */
  maxWaitMs: number;
}

/**
 * Discover's: ten requests, as client-go's REST client makes for a Retry-After (rest/request.go,
 * maxRetries), waits of up to 30 s. Our catalog server asks for 5 s until the kubelet has brought
 * its ConfigMap into the volume (up to about a minute after a publish): ten requests cover 45 s.
 */
export const DISCOVER_RETRY: RetryPolicy = { maxAttempts: 10, maxWaitMs: 30_000 };

/** The statuses whose Retry-After means "ask again then" (for 3xx it is only advice). */
export const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 503]);

const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const DAY_LONG = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
// The three forms of an HTTP-date (RFC 9110 section 5.6.7); recipients must accept all three.
const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^${DAY_LONG}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^${DAY} ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`);

/** Milliseconds since the epoch of a date's parts, or undefined when they are no real date. */
function utc(year: number, month: string, day: number, h: number, m: number, s: number): number | undefined {
  const index = MONTHS.indexOf(month);
  // Second 60 is a leap second (RFC 9110 section 5.6.7); it carries into the next minute.
  if (h > 23 || m > 59 || s > 60) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(year, index, day); // not Date.UTC, which reads years 0-99 as 1900-1999
  // A day the month has not (31 Feb) rolls over into the next month: no real date.
  if (date.getUTCMonth() !== index || date.getUTCDate() !== day) return undefined;
  return date.setUTCHours(h, m, s);
}

/** An HTTP-date (RFC 9110 section 5.6.7) in milliseconds since the epoch, or undefined. */
export function parseHttpDate(text: string, nowMs: number): number | undefined {
  let m = IMF_FIXDATE.exec(text);
  if (m) return utc(Number(m[3]), m[2]!, Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
  m = RFC850_DATE.exec(text);
  if (m) {
    // A two-digit year is the one that is not more than 50 years in the future (section 5.6.7).
    const thisYear = new Date(nowMs).getUTCFullYear();
    let year = Math.floor(thisYear / 100) * 100 + Number(m[3]);
    if (year > thisYear + 50) year -= 100;
    return utc(year, m[2]!, Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
  }
  m = ASCTIME_DATE.exec(text);
  if (m) return utc(Number(m[6]), m[1]!, Number(m[2]!.trim()), Number(m[3]), Number(m[4]), Number(m[5]));
  return undefined;
}

/**
 * A Retry-After value (RFC 9110 section 10.2.3: delay-seconds or an HTTP-date) as the delay in
 * milliseconds from `nowMs`; a date already past is no delay. Anything else (a negative or
 * fractional number, a date in another format, several values) is undefined.
 */
export function parseRetryAfter(value: string | undefined, nowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  // delay-seconds = 1*DIGIT; a huge one stays a huge number (it is capped by the caller).
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = parseHttpDate(text, nowMs);
  return at === undefined ? undefined : Math.max(0, at - nowMs);
}

export interface RetryInput {
  status: number;
  /** The Retry-After field as received (several field lines: the list). */
  retryAfter: string | string[] | undefined;
  /** Requests made so far for this URL, the one just answered included (1 after the first). */
  attempts: number;
  nowMs: number;
  /** When the run ends, in the same clock as nowMs (none: only the cap bounds a wait). */
  deadlineAt?: number;
  policy: RetryPolicy;
}

export type RetryDecision = { retry: true; delayMs: number } | { retry: false; message: string };

const seconds = (ms: number) => `${Math.round(ms / 100) / 10}s`;
const times = (n: number) => `${n} attempt${n === 1 ? '' : 's'}`;

/**
 * Whether to ask again after this answer, and when; or the message of the failure, which names
 * the status, the Retry-After given and the attempts made.
 */
export function retryDecision(input: RetryInput): RetryDecision {
  const { status, attempts, policy } = input;
  const failed = (why?: string): RetryDecision => ({
    retry: false,
    message: `HTTP ${status}${attempts > 1 || why ? ` after ${times(attempts)}` : ''}${why ? `: ${why}` : ''}`,
  });
  const raw = input.retryAfter;
  if (!RETRY_STATUSES.has(status) || raw === undefined) return failed();
  // Retry-After is a single value; several field lines are a server contradicting itself.
  const value = Array.isArray(raw) ? (raw.length === 1 ? raw[0]! : undefined) : raw;
  const given = `Retry-After: ${shorten(Array.isArray(raw) ? raw.join(', ') : raw, 64)}`;
  const delayMs = value === undefined ? undefined : parseRetryAfter(value, input.nowMs);
  if (delayMs === undefined) return failed(`${given} is neither a number of seconds nor an HTTP date`);
  if (attempts >= policy.maxAttempts) return failed(`the last answer had ${given}`);
  if (delayMs > policy.maxWaitMs) {
    return failed(`${given} asks for a wait longer than ${seconds(policy.maxWaitMs)}, the longest waited`);
  }
  if (input.deadlineAt !== undefined && input.nowMs + delayMs >= input.deadlineAt) {
    return failed(`${given} asks for a wait past the run's deadline`);
  }
  return { retry: true, delayMs };
}
