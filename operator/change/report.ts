/**
 * What `agentcard diff` makes of a CardDiff (pure): the exit code for `--fail-on`, the text
 * lines, and GitHub Actions workflow commands (annotations).
 */
import type { CardDiff, CardChange } from './diff.ts';
import { CLASS_RANK, type ChangeClass } from './rules.ts';

/**
 * Exit codes of `agentcard diff --fail-on CLASS`, one per class of the most severe change found.
 * 1 and 2 keep their meaning of every command (bad input, usage error).
 */
export const EXIT_CODES: Record<ChangeClass, number> = { breaking: 3, compatible: 4, descriptive: 5 };

/** Whether a change of class `c` fails a run with `--fail-on failOn` (that class or worse). */
export const fails = (c: ChangeClass, failOn: ChangeClass | undefined): boolean =>
  failOn !== undefined && CLASS_RANK[c] >= CLASS_RANK[failOn];

/** 0, or the exit code of the most severe change when it fails the run. */
export function exitCode(diff: CardDiff, failOn: ChangeClass | undefined): number {
  return diff.highest && fails(diff.highest, failOn) ? EXIT_CODES[diff.highest] : 0;
}

export function summary(diff: CardDiff): string {
  const total = diff.changes.length;
  if (total === 0) return 'no changes';
  const { breaking, compatible, descriptive } = diff.counts;
  return `${total} change${total === 1 ? '' : 's'}: ${breaking} breaking, ${compatible} compatible, ${descriptive} descriptive`;
}

/** One line per change, the most severe first, then the summary. */
export function formatText(diff: CardDiff): string {
  const lines = diff.changes.map((c) => `${c.class.padEnd(11)} ${c.path}: ${c.message} [${c.rule}]`);
  return [...lines, summary(diff)].join('\n') + '\n';
}

// GitHub Actions workflow commands ("Workflow commands for GitHub Actions": error, warning and
// notice take file, line and title properties). Values are escaped as the Actions toolkit does.
const escapeData = (s: string) => s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
const escapeProperty = (s: string) => escapeData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');

/**
 * One annotation per change: `error` for a change that fails the run, `warning` for another
 * breaking change, `notice` for the rest. `file` is the new card's file (none for a URL), and
 * `line` where the change is in it, when known.
 */
export function formatAnnotations(
  diff: CardDiff,
  opts: { failOn?: ChangeClass; file?: string; line?: (change: CardChange) => number | undefined },
): string {
  const level = (c: CardChange) =>
    fails(c.class, opts.failOn) ? 'error' : c.class === 'breaking' ? 'warning' : 'notice';
  return diff.changes
    .map((c) => {
      const props = [
        ...(opts.file ? [`file=${escapeProperty(opts.file)}`] : []),
        ...(opts.file && opts.line?.(c) !== undefined ? [`line=${opts.line(c)}`] : []),
        `title=${escapeProperty(`${c.class} card change (${c.rule})`)}`,
      ];
      return `::${level(c)} ${props.join(',')}::${escapeData(`${c.path}: ${c.message}`)}\n`;
    })
    .join('');
}
