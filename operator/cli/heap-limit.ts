/**
 * V8's old-space limit derived from the container's memory limit, so that a container near its
 * limit makes the garbage collector work harder (and, at worst, the process ends with a clear
 * "heap out of memory") instead of being OOM-killed by the kernel with no word said.
 *
 * Why Node.js 24 alone does not do it: it sizes the heap from the cgroup limit
 * (process.constrainedMemory(), cgroup v1 and v2) as V8 does from physical memory, half of it but
 * never less than 256 MiB of old space. Measured with Node.js 24.21 in cgroup v1 memory limits:
 * heap_size_limit 259 MiB at 256 and at 512 MiB (at 256 the whole container, at 512 half of it),
 * 560 MiB at 1 GiB, 1,120 MiB at 2 GiB. `--max-old-space-size-percentage` (Node.js 24.8+) takes a
 * fraction of the limit but keeps nothing fixed for what lies outside the heap.
 *
 * The rule: the old space gets three quarters of the limit, and at least 128 MiB stays outside it
 * for what is not V8's old space (about 100 MiB measured: the Node.js binary's pages, code, the
 * young generation, TLS and HTTP buffers; docs/scaling.md), but never less than 64 MiB.
 */

const MiB = 1024 * 1024;

/** Fraction of the container limit given to V8's old space. */
export const OLD_SPACE_FRACTION = 0.75;
/** Kept outside the old space at least (the non-heap part of RSS measured about 100 MiB). */
export const NON_HEAP_RESERVE_MIB = 128;
/** Below this the operator cannot do its work; the limit is then too small anyway. */
export const MIN_OLD_SPACE_MIB = 64;

/** The environment variable the chart fills from the downward API (limits.memory, in bytes). */
export const MEMORY_LIMIT_ENV = 'AGENTCARD_MEMORY_LIMIT';
/** Set on the restarted process: its heap flag came from the limit, not from the user. */
export const HEAP_FROM_LIMIT_ENV = 'AGENTCARD_HEAP_FROM_LIMIT';

/** The old-space size in MiB for a container memory limit in bytes. */
export function oldSpaceMiB(limitBytes: number): number {
  const limitMiB = limitBytes / MiB;
  const derived = Math.min(limitMiB * OLD_SPACE_FRACTION, limitMiB - NON_HEAP_RESERVE_MIB);
  return Math.max(MIN_OLD_SPACE_MIB, Math.floor(derived));
}

/** Flags that set V8's old-space size already: the user's choice wins. */
const HEAP_FLAG = /(^|\s)--max-old-space-size(-percentage)?(=|\s|$)/;

export type HeapPlan =
  | { action: 'keep'; reason: 'no-limit' | 'flag-given' }
  | { action: 'restart'; oldSpaceMiB: number; limitBytes: number }
  | { action: 'invalid'; value: string };

/**
 * What the operator does at start: nothing when no limit is given or a heap flag is already set
 * (by the user, or by a previous restart of this decision), else restart itself with the flag.
 */
export function planHeapLimit(input: {
  limit: string | undefined;
  execArgv: readonly string[];
  nodeOptions: string | undefined;
}): HeapPlan {
  if (input.execArgv.some((a) => HEAP_FLAG.test(a)) || HEAP_FLAG.test(input.nodeOptions ?? '')) {
    return { action: 'keep', reason: 'flag-given' };
  }
  const raw = input.limit?.trim();
  if (!raw) return { action: 'keep', reason: 'no-limit' };
  // The downward API gives a plain integer of bytes (divisor 1); anything else is refused rather
  // than guessed at.
  if (!/^[0-9]{1,20}$/.test(raw)) return { action: 'invalid', value: raw.slice(0, 40) };
  const limitBytes = Number(raw);
  if (!Number.isSafeInteger(limitBytes) || limitBytes <= 0)
    return { action: 'invalid', value: raw.slice(0, 40) };
  return { action: 'restart', oldSpaceMiB: oldSpaceMiB(limitBytes), limitBytes };
}

/** The command line of the restarted process: the same, with the heap flag before the script. */
export function restartArgs(
  execPath: string,
  execArgv: readonly string[],
  argv: readonly string[],
  oldSpace: number,
): string[] {
  return [execPath, ...execArgv, `--max-old-space-size=${oldSpace}`, ...argv.slice(1)];
}
