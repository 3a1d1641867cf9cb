import { closeSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Runs `fn` while holding an exclusive lock file, so two test runs on one machine (two
 * checkouts, or a person and a test run) never build into the same cache folder at once. A lock
 * left by a process that no longer exists is taken over.
 */
export async function withLock<T>(lockFile: string, fn: () => Promise<T>, onWait?: () => void): Promise<T> {
  mkdirSync(dirname(lockFile), { recursive: true });
  let waited = false;
  for (;;) {
    try {
      const fd = openSync(lockFile, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (isStale(lockFile)) {
        rmSync(lockFile, { force: true });
        continue;
      }
      if (!waited) onWait?.();
      waited = true;
      await sleep(1000);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lockFile, { force: true });
  }
}

/** A lock is stale when its owner is gone (an empty file younger than 5 s is still being written). */
function isStale(file: string): boolean {
  try {
    const pid = Number.parseInt(readFileSync(file, 'utf8'), 10);
    if (Number.isNaN(pid)) return Date.now() - statSync(file).mtimeMs > 5000;
    return !isAlive(pid);
  } catch {
    return false;
  }
}

/** Whether a process with this id exists (signal 0 checks without sending anything). */
export function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
