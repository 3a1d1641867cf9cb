/**
 * Builds test/support/go-verifier (an independent x5c card verifier on Go's crypto/x509,
 * go-jose and go-spiffe, from the Go module proxy at the versions of its go.mod/go.sum) with the
 * machine's Go toolchain, once per machine: the binary goes to the cache shared with the control
 * plane, under a key made of its source files, and is never committed.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { goProgram } from './go-tools.ts';

const run = promisify(execFile);
const SOURCE_DIR = join(import.meta.dirname, 'go-verifier');
const SOURCES = ['go.mod', 'go.sum', 'main.go'];

export interface GoVerdict {
  verified: boolean;
  identity?: string;
  error?: string;
}

/** The path of the built verifier (building it when this version is not in the cache yet). */
export function goVerifier(): Promise<string> {
  return goProgram({
    sourceDir: SOURCE_DIR,
    sources: SOURCES,
    cacheName: 'go-verifier',
    binName: 'go-verifier',
  });
}

/** Runs the verifier on files; see main.go for the flags. */
export async function goVerify(opts: {
  card: string;
  bundle: string;
  identity: string;
  now?: Date;
  /** Most certificates an x5c header may carry (the verifier's default: 5). */
  maxChain?: number;
}): Promise<GoVerdict> {
  const bin = await goVerifier();
  const args = [`-card=${opts.card}`, `-bundle=${opts.bundle}`, `-identity=${opts.identity}`];
  if (opts.maxChain !== undefined) args.push(`-max-chain=${opts.maxChain}`);
  if (opts.now) args.push(`-now=${opts.now.toISOString().replace(/\.\d{3}Z$/, 'Z')}`);
  const { stdout } = await run(bin, args, { timeout: 60_000 });
  return JSON.parse(stdout) as GoVerdict;
}
