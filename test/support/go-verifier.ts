/**
 * Builds test/support/go-verifier (an independent x5c card verifier on Go's crypto/x509,
 * go-jose and go-spiffe, from the Go module proxy at the versions of its go.mod/go.sum) with the
 * machine's Go toolchain, once per machine: the binary goes to the cache shared with the control
 * plane, under a key made of its source files, and is never committed.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cacheRoot } from '../controlplane/paths.ts';

const run = promisify(execFile);
const SOURCE_DIR = join(import.meta.dirname, 'go-verifier');
const SOURCES = ['go.mod', 'go.sum', 'main.go'];

export interface GoVerdict {
  verified: boolean;
  identity?: string;
  error?: string;
}

/** The path of the built verifier (building it when this version is not in the cache yet). */
export async function goVerifier(): Promise<string> {
  const hash = createHash('sha256');
  for (const name of SOURCES)
    hash
      .update(name)
      .update('\0')
      .update(await readFile(join(SOURCE_DIR, name)));
  const dir = join(cacheRoot(), `go-verifier-${hash.digest('hex').slice(0, 12)}`);
  const bin = join(dir, 'go-verifier');
  if (existsSync(bin)) return bin;
  await mkdir(dir, { recursive: true });
  const tmp = `${bin}.${process.pid}.tmp`;
  await run('go', ['build', '-trimpath', '-o', tmp, '.'], {
    cwd: SOURCE_DIR,
    // -mod=readonly: go.sum pins every module; the go command checks them as usual.
    env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=readonly', GOTOOLCHAIN: 'local' },
    timeout: 600_000,
  });
  await rename(tmp, bin); // atomic: a concurrent run sees the whole binary or none
  return bin;
}

/** Runs the verifier on files; see main.go for the flags. */
export async function goVerify(opts: {
  card: string;
  bundle: string;
  identity: string;
  now?: Date;
}): Promise<GoVerdict> {
  const bin = await goVerifier();
  const args = [`-card=${opts.card}`, `-bundle=${opts.bundle}`, `-identity=${opts.identity}`];
  if (opts.now) args.push(`-now=${opts.now.toISOString().replace(/\.\d{3}Z$/, 'Z')}`);
  const { stdout } = await run(bin, args, { timeout: 60_000 });
  return JSON.parse(stdout) as GoVerdict;
}
