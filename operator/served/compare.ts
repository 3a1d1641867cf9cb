/**
 * What a client received from a public host, compared with what the operator published (pure,
 * no network). The published card is the signed card of the owned ConfigMap; the served one is
 * the body a client got from `https://<host>/.well-known/agent-card.json`.
 *
 * Verdicts, first match wins:
 * - `Unreachable`: the fetch failed (the reason names the failure, never a body or a header);
 * - `SignatureBroken`: the published card is signed and the served one has no signatures (a proxy
 *   stripped them), or its signatures differ and none verifies against the card's own keys while
 *   the signed content is unchanged (a gateway re-signed it with keys of its own);
 * - `Rewritten`: the served JSON differs from the published JSON; the differing paths are listed
 *   (a bounded number). A proxy that rewrites `supportedInterfaces[].url` and leaves the
 *   signatures in place lands here: the paths say what it changed;
 * - `ServedAsSigned`: the same JSON (RFC 8785 canonical form, so whitespace and key order a proxy
 *   changes do not matter) and one of its signatures verifies against the card's own keys
 *   (A2A 1.0 specification, section 8.4.3);
 * - `ServedAsPublished`: the same JSON, for a card published without signatures.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../card/jcs.ts';
import { formatPath, type PathSegment } from '../card/problem.ts';
import { verifyCard, type JWKS } from '../card/verify.ts';
import { describeError } from '../errors.ts';

export const SERVED_VERDICTS = [
  'ServedAsSigned',
  'ServedAsPublished',
  'Rewritten',
  'SignatureBroken',
  'Unreachable',
] as const;
export type ServedVerdictName = (typeof SERVED_VERDICTS)[number];

/** Paths listed at most per verdict: enough to see what a proxy does, small enough for a condition. */
export const MAX_LISTED_PATHS = 8;

/** What a client got: the body, or why there is none. */
export type ServedFetch = { ok: true; text: string } | { ok: false; reason: string };

export interface ServedComparison {
  verdict: ServedVerdictName;
  /** The JSON paths that differ (`supportedInterfaces[0].url`), at most MAX_LISTED_PATHS. */
  paths: string[];
  /** How many differing paths there are in all (more than `paths` lists when over the cap). */
  differences: number;
  /** One line for people: why this verdict. */
  detail: string;
  /** sha256 of the served card's canonical JSON, when it was a JSON object. */
  servedDigest?: string;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  !!v && typeof v === 'object' && !Array.isArray(v);

const hasSignatures = (card: Record<string, unknown>): boolean =>
  Array.isArray(card.signatures) && card.signatures.length > 0;

/** "sha256:<hex>" of a document's canonical JSON (RFC 8785). */
export const canonicalDigest = (value: unknown): string =>
  `sha256:${createHash('sha256').update(canonicalJson(value)).digest('hex')}`;

/** Longest path shown: the member names come from whoever served the card. */
const MAX_PATH_LENGTH = 200;

/**
 * A path made safe for a condition message and a terminal: one line, no control characters,
 * bounded (a hostile server chooses the member names).
 */
function printable(path: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is removed
  const clean = path.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, '?');
  return clean.length > MAX_PATH_LENGTH ? `${clean.slice(0, MAX_PATH_LENGTH - 3)}...` : clean;
}

/**
 * The paths where two JSON values differ (pure): a member only one side has, an array item only
 * one side has, or a different scalar. Object key order does not matter; array order does.
 * Stops collecting paths at `limit` but keeps counting.
 */
export function jsonDifferences(
  before: unknown,
  after: unknown,
  limit = MAX_LISTED_PATHS,
): { paths: string[]; total: number } {
  const paths: string[] = [];
  let total = 0;
  const note = (at: PathSegment[]) => {
    total++;
    if (paths.length < limit) paths.push(printable(formatPath(at)) || '(the whole document)');
  };
  const walk = (a: unknown, b: unknown, at: PathSegment[]): void => {
    if (Array.isArray(a) && Array.isArray(b)) {
      for (let i = 0; i < Math.max(a.length, b.length); i++) {
        if (i >= a.length || i >= b.length) note([...at, i]);
        else walk(a[i], b[i], [...at, i]);
      }
      return;
    }
    if (isObject(a) && isObject(b)) {
      const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
      for (const key of keys) {
        if (!Object.hasOwn(a, key) || !Object.hasOwn(b, key)) note([...at, key]);
        else walk(a[key], b[key], [...at, key]);
      }
      return;
    }
    // Scalars, or two values of different kinds: compared as canonical JSON (1.0 equals 1).
    if (JSON.stringify(a) !== JSON.stringify(b)) note(at);
  };
  walk(before, after, []);
  return { paths, total };
}

const listed = (paths: string[], total: number): string =>
  paths.join(', ') + (total > paths.length ? ` and ${total - paths.length} more` : '');

/**
 * Compares the served card with the published one (`published`: the ConfigMap's text, which the
 * operator signed) and verifies the served signatures against `keys` (the card's own JWKS).
 */
export async function compareServed(
  published: string,
  keys: JWKS,
  served: ServedFetch,
): Promise<ServedComparison> {
  const none = { paths: [], differences: 0 };
  if (!served.ok) return { verdict: 'Unreachable', ...none, detail: served.reason };
  const original = JSON.parse(published) as Record<string, unknown>;
  let received: unknown;
  try {
    received = JSON.parse(served.text);
  } catch {
    return {
      verdict: 'Rewritten',
      paths: ['(the whole document)'],
      differences: 1,
      detail: 'the body is not JSON',
    };
  }
  if (!isObject(received)) {
    return {
      verdict: 'Rewritten',
      paths: ['(the whole document)'],
      differences: 1,
      detail: 'the body is JSON but not an object',
    };
  }
  let servedDigest: string;
  try {
    servedDigest = canonicalDigest(received);
  } catch (err) {
    return {
      verdict: 'Rewritten',
      paths: ['(the whole document)'],
      differences: 1,
      detail: describeError(err),
    };
  }
  const { paths, total } = jsonDifferences(original, received);
  const found = { paths, differences: total, servedDigest };
  const signed = hasSignatures(original);
  if (signed && !hasSignatures(received)) {
    return {
      verdict: 'SignatureBroken',
      ...found,
      detail: `the signatures are missing${total ? ` (differs at ${listed(paths, total)})` : ''}`,
    };
  }
  const verification = signed ? await verifyCard(received, keys) : undefined;
  if (total === 0) {
    if (!verification)
      return { verdict: 'ServedAsPublished', ...found, detail: 'the published card (unsigned)' };
    if (verification.verified) {
      return {
        verdict: 'ServedAsSigned',
        ...found,
        detail: `the published card; its signature verifies (kid ${verification.kid ?? 'unknown'})`,
      };
    }
    // The very bytes that were published, not verifying: the keys changed since (a rotation the
    // ConfigMap has not caught up with yet).
    const why = verification.results.find((r) => r.error)?.error ?? 'no signature verifies';
    return { verdict: 'SignatureBroken', ...found, detail: `its signatures do not verify: ${why}` };
  }
  const contentChanged = paths.some((p) => !/^signatures(\[|$)/.test(p));
  if (signed && !contentChanged && !verification?.verified) {
    return {
      verdict: 'SignatureBroken',
      ...found,
      detail: `the signatures were replaced and none verifies against the card's keys (differs at ${listed(paths, total)})`,
    };
  }
  return {
    verdict: 'Rewritten',
    ...found,
    detail: `differs at ${listed(paths, total)}${
      signed ? (verification?.verified ? '' : '; its signatures no longer verify') : ''
    }`,
  };
}
