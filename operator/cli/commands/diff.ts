/**
 * `agentcard diff OLD NEW [--output text|json] [--fail-on CLASS] [--audience NAME] [--name NAME]
 * [--allow-cidr CIDR]`: every change between two cards, classified breaking, compatible or
 * descriptive by the rules of operator/change/ (docs/changes.md). OLD and NEW are each a card
 * file (JSON as served, A2A 1.0 or 0.3), an AgentCard manifest (the card the operator would
 * publish, of spec.card or of one audience) or the http(s) URL of a live card, fetched as the
 * operator fetches an agent's card: under the address policy, without redirects, bounded.
 *
 * Exit 0 unless `--fail-on` is given and a change of that class or a more severe one is found:
 * then 3 (breaking), 4 (compatible) or 5 (descriptive), the most severe change found. 1 is bad
 * input, 2 a usage error, as for every command.
 */
import { describeError, UserError } from '../../errors.ts';
import { formatProblem, type Problem } from '../../card/problem.ts';
import type { AgentCard } from '../../card/schema.ts';
import { hasSource, validateCard, validateResource } from '../../card/validate.ts';
import { diffCards } from '../../change/diff.ts';
import { exitCode, formatAnnotations, formatText, summary } from '../../change/report.ts';
import { CHANGE_CLASSES, type ChangeClass } from '../../change/rules.ts';
import { redactUrl } from '../../discover/plan.ts';
import { createAddressPolicy } from '../../probe/policy.ts';
import { sourceShape, toV1 } from '../../source/convert.ts';
import { DEFAULT_AUDIENCE } from '../../card/audience.ts';
import { cardLines } from '../card-lines.ts';
import { fetchSourceCard } from '../../source/fetch.ts';
import { SOURCE_PATHS } from '../../card/resource.ts';
import { MAX_INPUT_BYTES, oneCardDocument, parseFlags, pickAudience, readInput } from '../input.ts';

const USAGE = `usage: agentcard diff OLD NEW [--output text|json] [--fail-on breaking|compatible|descriptive]
                      [--audience NAME] [--name NAME] [--allow-cidr CIDR]

Lists every change from the OLD card to the NEW one, each with its JSON path and class:
breaking (a caller of the old card can fail), compatible (something added or loosened) or
descriptive (text only). The rules: docs/changes.md.

OLD and NEW are each a card file (JSON as served; an A2A 0.3 card is converted), an AgentCard
manifest (YAML or JSON: the card the operator would publish), "-" for standard input (one of
them), or the http(s) URL of a live card (an origin means its /.well-known/agent-card.json).

  -o, --output text|json   output format (default text)
  --fail-on CLASS          exit non-zero when a change of CLASS or a more severe one is found:
                           3 breaking, 4 compatible, 5 descriptive (the most severe found)
  --audience NAME          for manifests: compare the card of this audience (default: spec.card)
  --name NAME              the AgentCard (or card) of that name, in files that hold several
  --allow-cidr CIDR        for URLs: allow this private/loopback range (repeatable); link-local
                           and cloud metadata addresses are always refused

Under GitHub Actions (GITHUB_ACTIONS=true) the text output adds an annotation per change: error
when it fails the run, warning for another breaking change, notice otherwise.
`;

const isUrl = (text: string) => /^https?:\/\//i.test(text);

interface Loaded {
  label: string;
  card: AgentCard;
  /** The file to annotate (none for a URL or standard input). */
  file?: string;
  /** The line of a card path in that file, where the file's fields are the card's. */
  line?: (path: string, gone: boolean) => number | undefined;
}

export async function run(argv: string[]): Promise<number> {
  const parsed = parseFlags(
    argv,
    {
      output: { type: 'string', short: 'o', default: 'text' },
      'fail-on': { type: 'string' },
      audience: { type: 'string' },
      name: { type: 'string' },
      'allow-cidr': { type: 'string', multiple: true },
    },
    USAGE,
    true,
  );
  if (!parsed) return 0;
  const { values, positionals } = parsed;
  if (positionals.length !== 2)
    throw new UserError(`give two cards: agentcard diff OLD NEW (got ${positionals.length})`, 2);
  if (values.output !== 'text' && values.output !== 'json')
    throw new UserError(`--output must be text or json, not "${values.output}"`, 2);
  const failOn = values['fail-on'];
  if (failOn !== undefined && !(CHANGE_CLASSES as readonly string[]).includes(failOn))
    throw new UserError(`--fail-on must be one of ${CHANGE_CLASSES.join(', ')}, not "${failOn}"`, 2);
  const [oldInput, newInput] = positionals as [string, string];
  if (oldInput === '-' && newInput === '-') throw new UserError('only one of OLD and NEW can be "-"', 2);
  const allowCidrs = values['allow-cidr'] ?? [];
  if (allowCidrs.length && !isUrl(oldInput) && !isUrl(newInput))
    throw new UserError('--allow-cidr is for a card given by URL', 2);

  const options = { audience: values.audience, name: values.name, allowCidrs };
  const before = await loadCard(oldInput, options);
  const after = await loadCard(newInput, options);
  const diff = diffCards(before.card, after.card);
  const failing = failOn as ChangeClass | undefined;
  const code = exitCode(diff, failing);

  if (values.output === 'json') {
    const report = {
      old: before.label,
      new: after.label,
      ...(failing ? { failOn: failing } : {}),
      failed: code !== 0,
      ...diff,
    };
    process.stdout.write(JSON.stringify(report, null, 2) + '\n');
  } else {
    process.stdout.write(formatText(diff));
    if (process.env.GITHUB_ACTIONS === 'true')
      process.stdout.write(
        formatAnnotations(diff, {
          failOn: failing,
          ...(after.file ? { file: after.file } : {}),
          ...(after.line ? { line: (c) => after.line!(c.path, c.side === 'old') } : {}),
        }),
      );
  }
  if (code !== 0)
    process.stderr.write(`agentcard: ${after.label}: ${summary(diff)} (--fail-on ${failing})\n`);
  return code;
}

/** The card of one input: a URL, or a file holding a card or an AgentCard manifest. */
async function loadCard(
  input: string,
  opts: { audience?: string; name?: string; allowCidrs: string[] },
): Promise<Loaded> {
  if (isUrl(input)) {
    if (opts.audience !== undefined)
      throw new UserError(`--audience is for manifests; ${redactUrl(input)} is a served card`, 2);
    return fetchCard(input, opts.allowCidrs);
  }
  const source = input === '-' ? 'standard input' : input;
  const text = await readInput(input, MAX_INPUT_BYTES);
  const doc = oneCardDocument(text, source, opts.name);
  const file = input === '-' ? undefined : input;
  if (doc.type === 'card') {
    if (opts.audience !== undefined)
      throw new UserError(
        `${doc.label}: --audience needs an AgentCard manifest (a bare card has no audiences)`,
        2,
      );
    const card = validCard(doc.label, convert(doc.card));
    // A 0.3 card's fields are not the 1.0 card's: its lines are not looked up.
    const v1 =
      !!doc.card &&
      typeof doc.card === 'object' &&
      sourceShape(doc.card as Record<string, unknown>) === '1.0';
    return {
      label: doc.label,
      card,
      ...(file ? { file } : {}),
      ...(v1 ? { line: cardLines(text, opts.name) } : {}),
    };
  }
  if (hasSource(doc.resource)) {
    throw new UserError(
      `${doc.label}: the card comes from the agent (spec.source); render it first (agentcard render -f ${source} --fetch > card.json) and compare that file`,
      2,
    );
  }
  const result = validateResource(doc.resource);
  const card = orFail(doc.label, result);
  const picked = pickAudience(
    { label: doc.label, card, ...(result.spec ? { spec: result.spec } : {}) },
    opts.audience,
  );
  // Another audience's card is spec.card with some fields replaced: its lines are not looked up.
  const own = opts.audience === undefined || opts.audience === DEFAULT_AUDIENCE;
  return {
    label: doc.label,
    card: picked,
    ...(file ? { file } : {}),
    ...(own ? { line: cardLines(text, opts.name) } : {}),
  };
}

/** A served card in the 1.0 shape: an A2A 0.3 card is converted as the operator converts it. */
const convert = (value: unknown): unknown =>
  value && typeof value === 'object' && !Array.isArray(value)
    ? toV1(value as Record<string, unknown>).card
    : value;

function validCard(label: string, value: unknown): AgentCard {
  return orFail(label, validateCard(value));
}

/** The card, or its errors on standard error and one line naming the input. */
function orFail(label: string, result: { card?: AgentCard; problems: Problem[] }): AgentCard {
  if (result.card) return result.card;
  const errors = result.problems.filter((p) => p.severity === 'error');
  for (const p of errors) process.stderr.write(`${label}: ${formatProblem(p)}\n`);
  throw new UserError(`${label}: invalid card (${errors.length} error${errors.length === 1 ? '' : 's'})`);
}

async function fetchCard(url: string, allowCidrs: string[]): Promise<Loaded> {
  let policy;
  try {
    policy = createAddressPolicy({ allowCidrs, allowSetting: '--allow-cidr' });
  } catch (err) {
    throw new UserError(`--allow-cidr: ${describeError(err)}`, 2);
  }
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new UserError(`${redactUrl(url)} is not a valid URL`, 2);
  }
  // An origin means its well-known card, then the legacy agent.json (as spec.source.url does).
  const urls =
    target.pathname === '/' && !target.search
      ? SOURCE_PATHS.map((p) => new URL(p, target).href)
      : [target.href];
  const result = await fetchSourceCard(urls, { policy });
  if (!result.ok) {
    const hint =
      result.reason === 'SourceBlocked' && !allowCidrs.length
        ? ' (--allow-cidr allows a private or loopback range)'
        : '';
    throw new UserError(`${redactUrl(result.url)}: cannot fetch the card: ${result.message}${hint}`);
  }
  const label = redactUrl(result.url);
  return { label, card: validCard(label, result.converted.card) };
}
