/**
 * `agentcard discover URL --signed-original FILE`: what a client receives at URL, compared with
 * the signed card FILE (what was published) and verified against the card's own keys (--jwks),
 * the operator's served-card check (operator/served/) from a laptop or a CI job. The fetch is the
 * discover fetcher's: address policy, no redirects, size and time limits.
 */
import type { CaOption } from '../probe/connect.ts';
import type { AddressPolicy } from '../probe/policy.ts';
import type { JWKS } from '../card/verify.ts';
import { UserError } from '../errors.ts';
import { shorten, redactUrl } from '../discover/plan.ts';
import { canonicalDigest, compareServed, type ServedComparison } from '../served/compare.ts';
import { fetchServedCard } from '../served/check.ts';
import { WELL_KNOWN_CARD_PATH } from '../served/targets.ts';

export interface ServedReport extends ServedComparison {
  url: string;
  /** sha256 of the signed original's canonical JSON. */
  publishedDigest: string;
  ok: boolean;
}

/** The card URL of what the user gave: an origin gets the well-known card path. */
export function servedCardUrl(given: string): string {
  const url = new URL(given);
  return url.pathname === '/' && !url.search ? new URL(WELL_KNOWN_CARD_PATH, url).href : url.href;
}

/** Parses the signed original: a JSON object, or a usage error naming the file. */
export function parseOriginal(text: string, file: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UserError(`--signed-original ${file}: not JSON`, 2);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new UserError(`--signed-original ${file}: not a JSON object (a signed agent card)`, 2);
  return value as Record<string, unknown>;
}

export async function servedAgainstOriginal(opts: {
  url: string;
  original: string;
  keys: JWKS;
  policy: AddressPolicy;
  ca?: CaOption;
  timeoutMs: number;
  maxBytes: number;
}): Promise<ServedReport> {
  const url = servedCardUrl(opts.url);
  const fetched = await fetchServedCard(url, {
    policy: opts.policy,
    timeoutMs: opts.timeoutMs,
    maxBytes: opts.maxBytes,
    ...(opts.ca ? { ca: opts.ca } : {}),
  });
  const comparison = await compareServed(opts.original, opts.keys, fetched);
  return {
    url: redactUrl(url),
    ...comparison,
    publishedDigest: canonicalDigest(JSON.parse(opts.original)),
    ok: comparison.verdict === 'ServedAsSigned' || comparison.verdict === 'ServedAsPublished',
  };
}

/** The text output: the verdict, why, and the differing paths. */
export function formatServed(report: ServedReport): string {
  const lines = [`${report.url}: ${report.verdict}`, `  ${shorten(report.detail, 500)}`];
  if (report.paths.length) {
    const more = report.differences - report.paths.length;
    lines.push(`  paths: ${report.paths.join(', ')}${more > 0 ? ` (and ${more} more)` : ''}`);
  }
  return lines.join('\n') + '\n';
}
