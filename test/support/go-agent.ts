/**
 * Builds test/support/go-agent (a real A2A agent on github.com/a2aproject/a2a-go v0.3.3, from
 * the Go module proxy) once per machine, into the cache shared with the control plane, under a
 * key made of its source files (never committed), and runs it.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { cacheRoot } from '../controlplane/paths.ts';

const run = promisify(execFile);
const SOURCE_DIR = join(import.meta.dirname, 'go-agent');
const SOURCES = ['go.mod', 'go.sum', 'main.go'];

/** The path of the built agent (building it when this version is not in the cache yet). */
export async function goAgent(): Promise<string> {
  const hash = createHash('sha256');
  for (const name of SOURCES)
    hash
      .update(name)
      .update('\0')
      .update(await readFile(join(SOURCE_DIR, name)));
  const dir = join(cacheRoot(), `go-agent-${hash.digest('hex').slice(0, 12)}`);
  const bin = join(dir, 'go-agent');
  if (existsSync(bin)) return bin;
  await mkdir(dir, { recursive: true });
  const tmp = `${bin}.${process.pid}.tmp`;
  await run('go', ['build', '-trimpath', '-o', tmp, '.'], {
    cwd: SOURCE_DIR,
    env: { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=readonly', GOTOOLCHAIN: 'local' },
    timeout: 600_000,
  });
  await rename(tmp, bin); // atomic: a concurrent run sees the whole binary or none
  return bin;
}

export interface GoAgent {
  /** http://127.0.0.1:port */
  base: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts the agent on a loopback port; its card's version is read from `versionFile`. */
export async function startGoAgent(versionFile: string): Promise<GoAgent> {
  const child = spawn(await goAgent(), ['-listen', '127.0.0.1:0', '-version-file', versionFile], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const address = await new Promise<string>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`go-agent exited (${code})`)));
    createInterface({ input: child.stdout! }).once('line', resolve);
  });
  return {
    base: `http://${address}`,
    child,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
