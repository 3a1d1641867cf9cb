/** Runs the real `agentcard sidecar` command as its own process, as the injected container does. */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { SIDECAR_NODE_OPTIONS } from '../../operator/sidecar/runtime.ts';
import { agentcardBin } from './test-package.ts';

export interface Running {
  child: ChildProcess;
  port: number;
  metricsPort: number;
  logs: Record<string, unknown>[];
  exited: Promise<number | null>;
}

export async function spawnSidecar(
  dir: string,
  extraArgs: string[] = [],
  extraEnv: Record<string, string> = {},
): Promise<Running> {
  const child = spawn(
    process.execPath,
    [
      agentcardBin(),
      'sidecar',
      '--dir',
      dir,
      '--port',
      '0',
      '--metrics-port',
      '0',
      '--address',
      '127.0.0.1',
      ...extraArgs,
    ],
    {
      env: { ...process.env, NODE_OPTIONS: SIDECAR_NODE_OPTIONS, ...extraEnv },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const logs: Record<string, unknown>[] = [];
  const listening = new Promise<Record<string, unknown>>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('sidecar did not start within 15 s')), 15_000);
    createInterface({ input: child.stderr! }).on('line', (line) => {
      const entry = JSON.parse(line) as Record<string, unknown>;
      logs.push(entry);
      if (entry.msg === 'listening') {
        clearTimeout(timer);
        resolve(entry);
      }
    });
    void exited.then((code) => reject(new Error(`sidecar exited with ${code}`)));
  });
  const entry = await listening;
  return { child, port: entry.port as number, metricsPort: entry.metricsPort as number, logs, exited };
}
