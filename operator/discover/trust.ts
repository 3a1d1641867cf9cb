/**
 * Whose keys a discovered document is checked against. Only keys the user trusts count
 * (`--jwks`, read from files or URLs given on the command line). A signature header's `jku` is a
 * hint, not a trust anchor (A2A #2096 and PR #2099; AI Catalog spec "Trust Anchoring"): it is
 * followed only with `--trust-jku`, only over https (RFC 7515 section 4.1.2), and only on the
 * host the document itself came from, so a card cannot send the verifier to fetch keys from
 * anywhere it likes. The decision is pure; fetching is the caller's.
 */
import type { JWKS, VerifyOptions } from '../card/verify.ts';
import type { CertificateTrust } from '../card/x5c.ts';
import { shorten } from './plan.ts';

export interface Trust {
  /** The keys the user trusts (all --jwks sources merged). */
  jwks: JWKS;
  /** --trust-bundle and --identity: signatures with an x5c chain are checked against them. */
  certificates?: CertificateTrust;
  /** --trust-jku */
  trustJku: boolean;
  /** Fetches and parses a key set (called only for a jku the policy allows; memoised by the caller). */
  fetchJwks: (url: string) => Promise<JWKS>;
}

export type JkuDecision = { follow: true } | { follow: false; reason: string };

const hostOf = (url: string): string | undefined => {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return undefined;
  }
};

/** Whether the jku of a document fetched from `source` may be followed. */
export function jkuDecision(jku: string, source: string, trustJku: boolean): JkuDecision {
  const shown = shorten(jku);
  const jkuHost = hostOf(jku);
  const sourceHost = hostOf(source);
  if (!jkuHost) return { follow: false, reason: `its jku '${shown}' is not a URL` };
  if (jkuHost !== sourceHost) {
    return {
      follow: false,
      reason: `its jku points elsewhere (${shown}, host ${jkuHost}, while the document came from ${sourceHost ?? 'an inline entry'}); not followed`,
    };
  }
  if (!trustJku) {
    return {
      follow: false,
      reason: `its jku ${shown} is only a hint: give the signer's keys with --jwks, or follow it with --trust-jku`,
    };
  }
  if (!jku.startsWith('https://'))
    return { follow: false, reason: `its jku ${shown} is not https; not followed` };
  return { follow: true };
}

/** The options of verifyCard / verifyCatalog for a document fetched from `source`. */
export function verifyOptions(trust: Trust, source: string): VerifyOptions {
  return {
    resolveJku: jkuResolver(trust, source),
    ...(trust.certificates ? { certificates: trust.certificates } : {}),
  };
}

/** The resolveJku callback of verifyCard / verifyCatalog for a document fetched from `source`. */
export function jkuResolver(trust: Trust, source: string): (jku: string) => Promise<JWKS> {
  return async (jku) => {
    const decision = jkuDecision(jku, source, trust.trustJku);
    if (!decision.follow) throw new Error(decision.reason);
    return trust.fetchJwks(jku);
  };
}
