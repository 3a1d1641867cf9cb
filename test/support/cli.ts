/**
 * Runs the real `agentcard` command as a child process (Node.js 24 from node_modules), from the
 * package as it ships (test-package.ts).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { repoRoot } from './paths.ts';
import { agentcardBin } from './test-package.ts';

const node = join(repoRoot, 'node_modules/.bin/node');

export type Result = { code: number; stdout: string; stderr: string };

export function agentcard(
  args: string[],
  opts: { input?: string | Buffer; cwd?: string; env?: Record<string, string> } = {},
): Promise<Result> {
  return new Promise((resolve) => {
    const child = execFile(
      node,
      [agentcardBin(), ...args],
      {
        cwd: opts.cwd ?? repoRoot,
        maxBuffer: 16 * 1024 * 1024,
        timeout: 60_000,
        env: { ...process.env, AGENTCARD_DEBUG: '', ...opts.env },
      },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
    child.stdin?.on('error', () => {}); // the command may stop reading early (size limit)
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    else child.stdin?.end();
  });
}

/** A failure: non-zero exit, exactly one line on stderr naming the problem, no stack trace. */
export function expectOneLineError(r: Result, pattern: RegExp, code = 1): void {
  expect(r.code, r.stderr).toBe(code);
  expect(r.stderr.endsWith('\n')).toBe(true);
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^agentcard: /);
  expect(lines[0]).toMatch(pattern);
  expect(r.stderr).not.toMatch(/\n\s+at /);
}

export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'agentcard-cli-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
