/**
 * Shared helpers of the benchmarks: a timing loop and the writer of docs/BENCHMARKS.md, where
 * each benchmark owns one section (between markers) that it replaces on every run, with the
 * machine it ran on noted.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export const BENCHMARKS_FILE = fileURLToPath(new URL('../docs/BENCHMARKS.md', import.meta.url));

/** One line describing the machine: CPU, cores, current load, memory, OS, Node.js. */
export function machine(): string {
  const cpus = os.cpus();
  const model = cpus[0]?.model.trim() ?? 'unknown CPU';
  const memory = Math.round(os.totalmem() / 2 ** 30);
  const load = os.loadavg()[0]!.toFixed(1);
  return `${model}, ${os.availableParallelism()} cores available (shared with other work; load average ${load} when written), ${memory} GiB RAM, ${os.type()} ${os.release()} ${os.arch()}, Node.js ${process.version}`;
}

export type Timing = {
  /** Operations per round and rounds measured. */
  ops: number;
  rounds: number;
  /** Time per operation in microseconds: median and best of the rounds. */
  medianUs: number;
  bestUs: number;
};

/**
 * Times functions side by side (each call awaited): a warm-up round of `ops` calls each, then
 * `rounds` rounds in which every function runs `ops` calls in turn, so that load from other work
 * on the machine affects all of them alike. Reports the median and the best round, per call.
 * Bounded by design: functions x ops x (rounds + 1) calls.
 */
export async function compare(
  fns: Record<string, () => unknown>,
  opts: { ops?: number; rounds?: number } = {},
): Promise<Record<string, Timing>> {
  const ops = opts.ops ?? 2000;
  const rounds = opts.rounds ?? 7;
  const perOp: Record<string, number[]> = {};
  for (const [label, fn] of Object.entries(fns)) {
    perOp[label] = [];
    for (let i = 0; i < ops; i++) await fn();
  }
  for (let r = 0; r < rounds; r++) {
    for (const [label, fn] of Object.entries(fns)) {
      const start = process.hrtime.bigint();
      for (let i = 0; i < ops; i++) await fn();
      perOp[label]!.push(Number(process.hrtime.bigint() - start) / 1000 / ops);
    }
  }
  const out: Record<string, Timing> = {};
  for (const [label, list] of Object.entries(perOp)) {
    list.sort((a, b) => a - b);
    out[label] = { ops, rounds, medianUs: list[Math.floor(rounds / 2)]!, bestUs: list[0]! };
  }
  return out;
}

/** Times one function; see compare(). */
export async function time(fn: () => unknown, opts: { ops?: number; rounds?: number } = {}): Promise<Timing> {
  return (await compare({ fn }, opts)).fn!;
}

const marker = (name: string, edge: 'start' | 'end') => `<!-- bench:${name}:${edge} -->`;

/**
 * Writes (or replaces) the section `name` of docs/BENCHMARKS.md: a `## title` heading, the date
 * and machine, then `body` (markdown). Other sections are left as they are.
 */
export function writeSection(name: string, title: string, body: string): void {
  replaceSection(
    name,
    [
      `## ${title}`,
      '',
      `Run ${new Date().toISOString().slice(0, 10)} on: ${machine()}.`,
      '',
      body.trim(),
    ].join('\n'),
  );
}

/**
 * Puts `markdown` (a whole section, heading included) between the `bench:<name>` markers of
 * docs/BENCHMARKS.md, replacing what was there; other sections are left as they are.
 */
export function replaceSection(name: string, markdown: string): void {
  const section = [marker(name, 'start'), markdown.trim(), marker(name, 'end')].join('\n');
  let text = existsSync(BENCHMARKS_FILE)
    ? readFileSync(BENCHMARKS_FILE, 'utf8')
    : '# Benchmarks\n\nWritten by `npm run bench`; each benchmark replaces its own section.\n';
  const start = text.indexOf(marker(name, 'start'));
  const end = text.indexOf(marker(name, 'end'));
  if (start >= 0 && end > start) {
    text = text.slice(0, start) + section + text.slice(end + marker(name, 'end').length);
  } else {
    text = `${text.trimEnd()}\n\n${section}\n`;
  }
  mkdirSync(dirname(BENCHMARKS_FILE), { recursive: true });
  writeFileSync(BENCHMARKS_FILE, text);
}

/** A markdown table. */
export function table(header: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}
