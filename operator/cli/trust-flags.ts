/**
 * The certificate-trust flags shared by `agentcard verify` and `agentcard discover`:
 * `--trust-bundle FILE` (PEM CA certificates, as trust-manager or cert-manager distribute them)
 * and `--identity PATTERN` (repeatable). Each needs the other: a bundle alone would trust every
 * workload its CAs ever certified, and an identity means nothing without roots to anchor it.
 */
import { UserError, describeError } from '../errors.ts';
import { parseIdentityPattern, parseTrustBundle } from '../card/x5c.ts';
import type { X509Certificate } from 'node:crypto';
import { readInput } from './input.ts';

/** A trust bundle of a few hundred CAs stays well below this. */
export const MAX_BUNDLE_BYTES = 4 * 1024 * 1024;

export const TRUST_FLAGS = {
  'trust-bundle': { type: 'string', multiple: true },
  identity: { type: 'string', multiple: true },
} as const;

/** Checks the pairing of the flags and the patterns (usage errors, exit 2). */
export function identityPatterns(bundles: readonly string[], identities: readonly string[]): string[] {
  if (bundles.length > 0 && identities.length === 0)
    throw new UserError(
      '--trust-bundle needs --identity PATTERN: the identities whose signatures you trust',
      2,
    );
  if (identities.length > 0 && bundles.length === 0)
    throw new UserError(
      '--identity needs --trust-bundle FILE: the CA certificates that vouch for identities',
      2,
    );
  return identities.map((pattern) => {
    try {
      return parseIdentityPattern(pattern);
    } catch (err) {
      throw new UserError(`--identity: ${describeError(err)}`, 2);
    }
  });
}

/** Reads and parses one PEM bundle file. */
export async function readTrustBundle(file: string): Promise<X509Certificate[]> {
  const text = await readInput(file, MAX_BUNDLE_BYTES);
  try {
    return parseTrustBundle(text, `--trust-bundle ${file}`);
  } catch (err) {
    throw new UserError(describeError(err), 2);
  }
}
