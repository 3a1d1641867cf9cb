/**
 * Reads the mounted ConfigMap directory and notices when it changes.
 *
 * The kubelet updates a ConfigMap volume atomically: it writes the new files into a fresh
 * hidden directory (`..2026_01_02_03_04_05.123`), points a temporary symlink `..data_tmp` at
 * it, renames that over `..data`, then deletes the old directory. The visible files are
 * symlinks `agent-card.json -> ..data/agent-card.json`. Reading every file through the
 * resolved `..data` target gives one consistent version even while a swap is in progress.
 *
 * Changes are noticed by `fs.watch` on the directory (the rename of `..data` is an event in
 * it) and, as a safety net for file systems where watching is unreliable, a slow poll.
 */
import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { readFile, readdir, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { isVariantFile } from './audience.ts';
import { DOCUMENTS, MAX_AGE_FILE, MAX_FILE_BYTES } from './version.ts';
import type { FileContent, FileSet } from './version.ts';

const FILES = [...DOCUMENTS.map((d) => d.file), MAX_AGE_FILE];

/** The files of one version: the fixed ones, and the per-audience variants that are present. */
async function fileNames(base: string): Promise<string[]> {
  let entries: string[];
  try {
    entries = await readdir(base);
  } catch {
    return FILES;
  }
  return [...FILES, ...entries.filter(isVariantFile).sort()];
}

export interface Snapshot {
  /** Identifies what was read (resolved directory, and each file's inode, size and mtime). */
  fingerprint: string;
  files: FileSet;
}

/** The directory the files are read from: the `..data` target when there is one. */
async function baseDir(dir: string): Promise<string> {
  try {
    return await realpath(join(dir, '..data'));
  } catch {
    return dir;
  }
}

/** A cheap identity of the directory's current contents, from stat calls only. */
export async function fingerprint(dir: string): Promise<string> {
  const base = await baseDir(dir);
  const parts = [base];
  for (const file of await fileNames(base)) {
    try {
      const s = await stat(join(base, file));
      parts.push(`${file}:${s.ino}:${s.size}:${s.mtimeMs}`);
    } catch {
      parts.push(`${file}:-`);
    }
  }
  return parts.join('|');
}

/** Reads every file of one version. Throws only on unexpected I/O errors. */
export async function readSnapshot(dir: string): Promise<Snapshot> {
  const base = await baseDir(dir);
  const files = new Map<string, FileContent>();
  const parts = [base];
  for (const file of await fileNames(base)) {
    const path = join(base, file);
    let s;
    try {
      s = await stat(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        parts.push(`${file}:-`);
        continue;
      }
      throw err;
    }
    parts.push(`${file}:${s.ino}:${s.size}:${s.mtimeMs}`);
    // An oversized file is recorded by its size only; the checks refuse it without reading it.
    const bytes = s.size > MAX_FILE_BYTES ? Buffer.alloc(0) : await readFile(path);
    files.set(file, { bytes, size: s.size, mtimeMs: s.mtimeMs });
  }
  return { fingerprint: parts.join('|'), files };
}

export interface DirectoryWatch {
  /** Checks now (also what the watcher and the poll call). */
  check(): Promise<void>;
  close(): void;
}

/**
 * Calls `onChange` with each new snapshot of `dir` (and once at the start). Checks are
 * serialized; a check that finds the same fingerprint as the last one does nothing.
 */
export function watchDirectory(
  dir: string,
  opts: {
    onChange: (snapshot: Snapshot) => void;
    onError: (err: unknown) => void;
    pollMs?: number;
    debounceMs?: number;
    useWatch?: boolean;
  },
): DirectoryWatch {
  const debounceMs = opts.debounceMs ?? 20;
  let last: string | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let closed = false;
  let watcher: FSWatcher | undefined;
  let timer: NodeJS.Timeout | undefined;

  const checkOnce = async () => {
    const fp = await fingerprint(dir);
    if (fp === last) return;
    const snapshot = await readSnapshot(dir);
    // The directory changed again while it was read (or an old ..data target vanished): the
    // watcher or the next check will see the newer version.
    if (snapshot.fingerprint !== (await fingerprint(dir))) {
      again = true;
      return;
    }
    last = snapshot.fingerprint;
    opts.onChange(snapshot);
  };

  const check = (): Promise<void> => {
    if (closed) return Promise.resolve();
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await checkOnce();
        } catch (err) {
          opts.onError(err);
        }
      } while (again && !closed);
      running = undefined;
    })();
    return running;
  };

  const startWatch = () => {
    if (watcher || closed || opts.useWatch === false) return;
    try {
      watcher = watch(dir, { persistent: false }, () => {
        clearTimeout(timer);
        timer = setTimeout(() => void check(), debounceMs);
      });
      watcher.on('error', () => {
        // The directory itself went away; the poll re-establishes the watch.
        watcher?.close();
        watcher = undefined;
      });
    } catch {
      watcher = undefined;
    }
  };

  startWatch();
  const poll = setInterval(() => {
    startWatch();
    void check();
  }, opts.pollMs ?? 10_000);
  poll.unref();
  void check();

  return {
    check,
    close() {
      closed = true;
      clearInterval(poll);
      clearTimeout(timer);
      watcher?.close();
    },
  };
}
