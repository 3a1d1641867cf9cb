/**
 * Builds test/support/go-client (a load client on Go's net/http) with the machine's Go toolchain,
 * once per machine: the binary goes to the cache shared with the control plane, under a key made
 * of its source files, and is never committed.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cacheRoot } from '../controlplane/paths.ts';

const run = promisify(execFile);
const SOURCE_DIR = join(import.meta.dirname, 'go-client');
const SOURCES = ['go.mod', 'main.go'];

export interface GoClientResult {
  requests: number;
  errors: number;
  newConns: number;
  reusedConns: number;
  firstErrors: string[];
}

/** The path of the built client (building it when this version is not in the cache yet). */
export async function goClient(): Promise<string> {
  const hash = createHash('sha256');
  for (const name of SOURCES)
    hash
      .update(name)
      .update('\0')
      .update(await readFile(join(SOURCE_DIR, name)));
  const dir = join(cacheRoot(), `go-client-${hash.digest('hex').slice(0, 12)}`);
  const bin = join(dir, 'go-client');
  if (existsSync(bin)) return bin;
  await mkdir(dir, { recursive: true });
  const tmp = `${bin}.${process.pid}.tmp`;
  await run('go', ['build', '-trimpath', '-o', tmp, '.'], {
    cwd: SOURCE_DIR,
    env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local' },
    timeout: 300_000,
  });
  await rename(tmp, bin); // atomic: a concurrent run sees the whole binary or none
  return bin;
}

/** Runs the client; see main.go for the flags. */
export async function runGoClient(args: Record<string, string | number>): Promise<GoClientResult> {
  const bin = await goClient();
  const { stdout } = await run(
    bin,
    Object.entries(args).map(([k, v]) => `-${k}=${v}`),
    { timeout: 120_000 },
  );
  return JSON.parse(stdout) as GoClientResult;
}
