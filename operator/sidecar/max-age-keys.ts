/**
 * Cache-Control's max-age in a form a stock nginx can read: besides `cache-max-age-seconds` (the
 * number as text, which the Node mode reads), the published ConfigMap spells the number with one
 * key per decimal digit, place and digit in the key's name: 300 is
 * `cache-max-age-seconds.place2-digit3`, `...place1-digit0` and `...place0-digit0`.
 *
 * nginx can test whether a file exists (`if (-f ...)`) but cannot put a file's content in a
 * header without a scripting module; with these keys the nginx mode (nginx.ts) builds the header
 * from existence tests alone, as the files are now, so a new max-age is served as soon as the
 * kubelet swaps the new version in, with no reload and no njs.
 */
import { MAX_AGE_FILE, MAX_AGE_LIMIT } from './version.ts';

/** Decimal places of the largest max-age (86400: 5). */
export const MAX_AGE_PLACES = String(MAX_AGE_LIMIT).length;

/** The key that says the digit at `place` (0: units) is `digit`. */
export function maxAgeDigitKey(place: number, digit: number): string {
  return `${MAX_AGE_FILE}.place${place}-digit${digit}`;
}

/** The digit keys of `seconds` (the value of each is its digit, for people reading the ConfigMap). */
export function maxAgeDigitKeys(seconds: number): Record<string, string> {
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_AGE_LIMIT) {
    throw new Error(`max-age must be an integer from 0 to ${MAX_AGE_LIMIT}, got ${seconds}`);
  }
  const text = String(seconds);
  const keys: Record<string, string> = {};
  for (let i = 0; i < text.length; i++) {
    keys[maxAgeDigitKey(text.length - 1 - i, Number(text[i]))] = text[i]!;
  }
  return keys;
}
