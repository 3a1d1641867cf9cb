// A lock shared by the integration files of one checkout, for a family of files that may run
// beside any other file but not beside each other: they create cluster-scoped objects that every
// operator of the family reconciles, whatever its --namespace (vitest.config.ts says which).
//
// The lock is a directory (mkdir is atomic) under the control plane's state folder, holding the
// holder's PID: a holder that died without releasing it (a killed run) is recognised and replaced.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { clusterDir } from '../controlplane/paths.ts';

/** The families of integration files that take turns on the shared control plane. */
export type ClusterLockName = 'cluster-catalogs' | 'cluster-policies';

/** How long a file waits for its family's earlier files at most: their whole run, with margin. */
const WAIT_MS = 1_200_000;

const lockDir = (name: ClusterLockName) => join(clusterDir, 'locks', name);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the lock if it is free (or its holder is gone); true when this process holds it. */
function tryAcquire(name: ClusterLockName): boolean {
  const dir = lockDir(name);
  mkdirSync(join(clusterDir, 'locks'), { recursive: true });
  try {
    mkdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    let holder: number;
    try {
      holder = Number(readFileSync(join(dir, 'pid'), 'utf8'));
    } catch {
      return false; // just created by another process, which is writing its PID
    }
    if (!Number.isInteger(holder) || alive(holder)) return false;
    rmSync(dir, { recursive: true, force: true }); // the holder died without releasing it
    return false; // try again on the next round, as any waiter may
  }
  writeFileSync(join(dir, 'pid'), String(process.pid));
  return true;
}

/**
 * Holds the family's lock from before this file's first set-up to after its last tear-down:
 * call it at the top of the file, before any other hook is registered (hooks after run in reverse).
 */
export function useClusterLock(name: ClusterLockName): void {
  beforeAll(async () => {
    const deadline = Date.now() + WAIT_MS;
    while (!tryAcquire(name)) {
      if (Date.now() > deadline) throw new Error(`the ${name} lock was not free within ${WAIT_MS} ms`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }, WAIT_MS + 10_000);
  afterAll(() => {
    const dir = lockDir(name);
    try {
      if (Number(readFileSync(join(dir, 'pid'), 'utf8')) === process.pid) rmSync(dir, { recursive: true });
    } catch {
      // not held (the set-up failed before taking it)
    }
  });
}
