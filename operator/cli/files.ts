/**
 * Expands the file arguments of `agentcard validate` into the files to read: a file stays as it
 * is, a directory becomes every `*.yaml`, `*.yml` and `*.json` file below it, walked recursively
 * in byte order of the path, so a CI job can give `-f deploy/agentcards/` and get a stable
 * report.
 *
 * The walk is kubectl's `apply -R -f DIR` walk, with one difference: it
 * - reads symbolic links to files (a mounted ConfigMap's keys are links) but does not descend
 *   into symbolic links to directories (no loops, nothing outside the tree by accident);
 * - skips hidden entries (a name starting with "."): `.git/`, and the `..data` / `..2024_...`
 *   folders a mounted ConfigMap has next to its links, which would otherwise be read twice.
 */
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { UserError } from '../errors.ts';

/** The extensions read from a directory (kubectl's FileExtensions). */
export const MANIFEST_EXTENSIONS = ['.yaml', '.yml', '.json'] as const;

/** A directory walk stops here: a mistaken `-f /` should end with an error, not scan the disk. */
export const MAX_DIRECTORY_FILES = 10_000;

/** One input of the command: a file to read, or an argument that could not be expanded. */
export type InputFile =
  { type: 'file'; path: string; fromDirectory: boolean } | { type: 'error'; path: string; error: UserError };

const hasManifestExtension = (name: string) =>
  MANIFEST_EXTENSIONS.some((ext) => name.toLowerCase().endsWith(ext));

/** The files a list of arguments stands for; `-` (standard input) passes through. */
export async function expandInputs(args: readonly string[]): Promise<InputFile[]> {
  const out: InputFile[] = [];
  for (const arg of args) {
    if (arg === '-') {
      out.push({ type: 'file', path: arg, fromDirectory: false });
      continue;
    }
    let isDirectory = false;
    try {
      isDirectory = (await stat(arg)).isDirectory();
    } catch {
      // Not there or not readable: reading it names the reason (readInput).
    }
    if (!isDirectory) {
      out.push({ type: 'file', path: arg, fromDirectory: false });
      continue;
    }
    try {
      const files = await walk(arg);
      if (files.length === 0) {
        throw new UserError(
          `${arg}: no ${MANIFEST_EXTENSIONS.map((e) => `*${e}`).join(', ')} file in the directory`,
        );
      }
      for (const path of files) out.push({ type: 'file', path, fromDirectory: true });
    } catch (err) {
      if (!(err instanceof UserError)) throw err;
      out.push({ type: 'error', path: arg, error: err });
    }
  }
  return out;
}

/** Every manifest file below `root`, sorted by path (byte order, the same on every machine). */
async function walk(root: string): Promise<string[]> {
  const found: string[] = [];
  const pending = [root];
  while (pending.length > 0) {
    const dir = pending.pop()!;
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new UserError(
        `cannot read directory ${dir}: ${code === 'EACCES' || code === 'EPERM' ? 'permission denied' : (code ?? 'read error')}`,
      );
    }
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) pending.push(path);
      else if ((entry.isFile() || entry.isSymbolicLink()) && hasManifestExtension(entry.name)) {
        found.push(path);
        if (found.length > MAX_DIRECTORY_FILES) {
          throw new UserError(
            `${root}: more than ${MAX_DIRECTORY_FILES} manifest files; give a narrower directory`,
          );
        }
      }
    }
  }
  return found.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
