/**
 * `agentcard validate -f FILE|DIR|- [-f ...] [--strict] [--output text|json]`: checks AgentCard
 * manifests (multi-document YAML too) and bare card JSON, in files or in every *.yaml, *.yml and
 * *.json file below a directory (./files.ts). Exit 0 when every card is valid, 1 otherwise; each
 * problem is printed as `path: message`. A file that cannot be read or parsed is reported (one
 * line on stderr naming it) and the other files are still checked: the exit code covers all.
 */
import { UserError } from '../../errors.ts';
import { expandInputs } from '../files.ts';
import { MAX_INPUT_BYTES, parseDocuments, parseFlags, readInput, type InputDocument } from '../input.ts';
import { formatProblem, hasErrors, type Problem } from '../../card/problem.ts';
import { validateCard, validateResource } from '../../card/validate.ts';

const USAGE = `usage: agentcard validate -f FILE|DIR|- [-f ...] [--strict] [--output text|json]

Validates AgentCard manifests (YAML, several documents per file allowed) and bare A2A 1.0 card
JSON. A directory means every *.yaml, *.yml and *.json file below it (hidden ones skipped).
Lint warnings become errors with --strict. Exit 0: all valid; 1: a problem was found.
`;

type Report = {
  source: string;
  /** `file`: the file itself could not be read or parsed (its one problem says why). */
  kind: 'AgentCard' | 'card' | 'file';
  name?: string;
  valid: boolean;
  problems: Problem[];
};

export async function run(argv: string[]): Promise<number> {
  const parsed = parseFlags(
    argv,
    {
      file: { type: 'string', short: 'f', multiple: true },
      strict: { type: 'boolean' },
      output: { type: 'string', short: 'o', default: 'text' },
    },
    USAGE,
    true,
  );
  if (!parsed) return 0;
  const { values, positionals } = parsed;
  const files = [...(values.file ?? []), ...positionals];
  if (files.length === 0)
    throw new UserError('no input: give -f FILE or -f DIR (or -f - for standard input)', 2);
  if (values.output !== 'text' && values.output !== 'json') {
    throw new UserError(`--output must be text or json, not "${values.output}"`, 2);
  }
  const strict = values.strict ?? false;

  const reports: Report[] = [];
  const skipped: string[] = [];
  for (const input of await expandInputs(files)) {
    const file = input.path;
    const source = file === '-' ? 'standard input' : file;
    let docs: InputDocument[];
    try {
      if (input.type === 'error') throw input.error;
      docs = parseDocuments(await readInput(file, MAX_INPUT_BYTES), source);
    } catch (err) {
      if (!(err instanceof UserError)) throw err;
      // One line on stderr, as any failure of the CLI, and on with the next file.
      process.stderr.write(`agentcard: ${err.message}\n`);
      reports.push({
        source,
        kind: 'file',
        valid: false,
        problems: [{ path: '(file)', message: err.message, severity: 'error' }],
      });
      continue;
    }
    let cards = 0;
    for (const doc of docs) {
      if (doc.type === 'other') {
        skipped.push(doc.label);
        continue;
      }
      cards++;
      const result =
        doc.type === 'manifest'
          ? validateResource(doc.resource, { strict })
          : validateCard(doc.card, { strict });
      const name =
        doc.type === 'manifest'
          ? doc.name
          : ((result.card?.name ?? (doc.card as { name?: unknown })?.name) as string);
      reports.push({
        source: doc.label,
        kind: doc.type === 'manifest' ? 'AgentCard' : 'card',
        ...(typeof name === 'string' ? { name } : {}),
        valid: !hasErrors(result.problems),
        problems: result.problems,
      });
    }
    if (cards === 0 && input.fromDirectory) {
      // A directory also holds Deployments, Secrets, kustomization.yaml: not an error.
      if (docs.length === 0) skipped.push(source);
    } else if (cards === 0) {
      reports.push({
        source,
        kind: 'card',
        valid: false,
        problems: [{ path: '(file)', message: 'no AgentCard manifest or card found', severity: 'error' }],
      });
    }
  }

  if (values.output === 'json') {
    process.stdout.write(JSON.stringify(reports, null, 2) + '\n');
  } else {
    for (const r of reports) {
      if (r.kind === 'file') continue; // already on stderr
      const what =
        r.kind === 'AgentCard'
          ? `AgentCard ${r.name ?? '(unnamed)'}`
          : r.name
            ? `card ${JSON.stringify(r.name)}`
            : 'card (unnamed)';
      const warnings = r.problems.filter((p) => p.severity === 'warning').length;
      const errors = r.problems.length - warnings;
      const summary = r.valid
        ? `valid${warnings ? ` (${warnings} warning${warnings === 1 ? '' : 's'})` : ''}`
        : `invalid (${errors} error${errors === 1 ? '' : 's'}${warnings ? `, ${warnings} warning${warnings === 1 ? '' : 's'}` : ''})`;
      process.stdout.write(`${r.source}: ${what}: ${summary}\n`);
      for (const p of r.problems) process.stdout.write(`  ${formatProblem(p)}\n`);
    }
    for (const label of skipped) process.stdout.write(`${label}: skipped (not an AgentCard)\n`);
  }
  return reports.every((r) => r.valid) ? 0 : 1;
}
