/**
 * `agentcard validate -f FILE|DIR|- [-f ...] [--strict] [--output text|json]`: checks AgentCard
 * manifests (multi-document YAML too) and bare card JSON, in files or in every *.yaml, *.yml and
 * *.json file below a directory (./files.ts). Exit 0 when every card is valid, 1 otherwise; each
 * problem is printed as `path: message`. A file that cannot be read or parsed is reported (one
 * line on stderr naming it) and the other files are still checked: the exit code covers all.
 * An AgentCard with spec.source is checked without the agent's card unless --source-card or
 * --fetch gives it (../source-card.ts); the output says which.
 */
import { UserError } from '../../errors.ts';
import { expandInputs } from '../files.ts';
import {
  MAX_INPUT_BYTES,
  parseDocuments,
  parseFlags,
  readInput,
  validateAdopted,
  type InputDocument,
  type SourceCardReader,
} from '../input.ts';
import { formatProblem, hasErrors, type Problem } from '../../card/problem.ts';
import { hasSource, validateCard, validateResource, validateSourceResource } from '../../card/validate.ts';
import type { AgentCard } from '../../card/schema.ts';
import {
  SOURCE_CARD_FLAGS,
  SOURCE_CARD_USAGE,
  sourceCardFor,
  sourceCardOptions,
  wantsSourceCard,
} from '../source-card.ts';

const USAGE = `usage: agentcard validate -f FILE|DIR|- [-f ...] [--strict] [--output text|json]
                          [--source-card FILE | --fetch [--allow-cidr CIDR]]

Validates AgentCard manifests (YAML, several documents per file allowed) and bare A2A 1.0 card
JSON. A directory means every *.yaml, *.yml and *.json file below it (hidden ones skipped).
Lint warnings become errors with --strict. Exit 0: all valid; 1: a problem was found.

An AgentCard with spec.source (its card taken from the agent) is checked without the agent's
card: spec.source, the spec.remove pointers, spec.card as an overlay, signing, serving and
audiences; the output says the agent's card was not checked. With --source-card or --fetch,
the card the operator would publish (the agent's card, spec.remove, spec.card on top) is
validated too, for every AgentCard with spec.source in the input:

${SOURCE_CARD_USAGE}`;

type Report = {
  source: string;
  /** For an AgentCard with spec.source: where the agent's card came from (unchecked: none given). */
  sourceCard?: { checked: false } | { checked: true; from: string };
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
      ...SOURCE_CARD_FLAGS,
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
  const sourceOpts = sourceCardOptions(values);
  // One --source-card serves every manifest of the run: read it once.
  let sourceCard: Promise<{ served: Record<string, unknown>; from: string }> | undefined;
  const readSource: SourceCardReader = (label, resource) => {
    if (sourceOpts.fetch) return sourceCardFor(label, resource, sourceOpts);
    sourceCard ??= sourceCardFor(label, resource, sourceOpts);
    return sourceCard;
  };
  let adopting = 0;

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
      let sourceCardReport: Report['sourceCard'];
      let result: { card?: AgentCard; problems: Problem[] };
      if (doc.type === 'manifest' && hasSource(doc.resource)) {
        adopting++;
        if (wantsSourceCard(sourceOpts)) {
          try {
            const adopted = await validateAdopted(doc.label, doc.resource, readSource, { strict });
            result = adopted;
            if (adopted.from !== undefined) sourceCardReport = { checked: true, from: adopted.from };
          } catch (err) {
            // The agent's card could not be read or fetched: this card's problem, the others are
            // still checked. A usage error (exit code 2) stops the run.
            if (!(err instanceof UserError) || err.exitCode === 2) throw err;
            const message = err.message.startsWith(`${doc.label}: `)
              ? err.message.slice(doc.label.length + 2)
              : err.message;
            result = { problems: [{ path: 'spec.source', message, severity: 'error' }] };
          }
        } else {
          result = validateSourceResource(doc.resource, { strict });
          sourceCardReport = { checked: false };
        }
      } else {
        result =
          doc.type === 'manifest'
            ? validateResource(doc.resource, { strict })
            : validateCard(doc.card, { strict });
      }
      const name =
        doc.type === 'manifest'
          ? doc.name
          : ((result.card?.name ?? (doc.card as { name?: unknown })?.name) as string);
      reports.push({
        source: doc.label,
        ...(sourceCardReport ? { sourceCard: sourceCardReport } : {}),
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

  if (wantsSourceCard(sourceOpts) && adopting === 0)
    throw new UserError('--source-card and --fetch are for an AgentCard with spec.source; none was found', 2);
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
      if (r.sourceCard?.checked === false && r.valid)
        process.stdout.write(
          "  note: the card comes from the agent (spec.source); the agent's card was not checked (give --source-card FILE or --fetch)\n",
        );
      else if (r.sourceCard?.checked)
        process.stdout.write(`  note: checked with the agent's card from ${r.sourceCard.from}\n`);
    }
    for (const label of skipped) process.stdout.write(`${label}: skipped (not an AgentCard)\n`);
  }
  return reports.every((r) => r.valid) ? 0 : 1;
}
