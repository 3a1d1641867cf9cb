/**
 * Builds test/support/go-client (a load client on Go's net/http) with the machine's Go toolchain,
 * once per machine: the binary goes to the cache shared with the control plane, under a key made
 * of its source files, and is never committed.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { goProgram } from './go-tools.ts';

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
export function goClient(): Promise<string> {
  return goProgram({
    sourceDir: SOURCE_DIR,
    sources: SOURCES,
    cacheName: 'go-client',
    binName: 'go-client',
    goflags: '-mod=mod',
    timeoutMs: 300_000,
  });
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
