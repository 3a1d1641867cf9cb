/**
 * Builds test/support/go-agent (a real A2A agent on github.com/a2aproject/a2a-go v0.3.3, from
 * the Go module proxy) once per machine, into the cache shared with the control plane, under a
 * key made of its source files (never committed), and runs it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { goProgram } from './go-tools.ts';

const SOURCE_DIR = join(import.meta.dirname, 'go-agent');
const SOURCES = ['go.mod', 'go.sum', 'main.go'];

/** The path of the built agent (building it when this version is not in the cache yet). */
export function goAgent(): Promise<string> {
  return goProgram({ sourceDir: SOURCE_DIR, sources: SOURCES, cacheName: 'go-agent', binName: 'go-agent' });
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
