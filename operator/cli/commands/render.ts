/**
 * `agentcard render -f MANIFEST|CARD [--format v1|v0.3] [--audience NAME] [--name NAME] [--strict]
 * [--compact] [--source-card FILE | --fetch]`: the card JSON on standard output (v1: the A2A 1.0
 * card as published, before signing; v0.3: the legacy shape), of spec.card or of one audience.
 * Lint warnings go to standard error. A manifest with spec.source takes the agent's card from
 * --source-card or --fetch (../source-card.ts), never unasked.
 */
import { UserError } from '../../errors.ts';
import {
  SOURCE_CARD_FLAGS,
  SOURCE_CARD_USAGE,
  sourceCardFor,
  sourceCardOptions,
  wantsSourceCard,
} from '../source-card.ts';
import { formatJson, loadOneCard, parseFlags, pickAudience, printProblems } from '../input.ts';
import { renderV03, renderV1 } from '../../card/render.ts';

const USAGE = `usage: agentcard render -f MANIFEST|CARD|- [--format v1|v0.3] [--audience NAME] [--name NAME]
                        [--strict] [--compact] [--source-card FILE | --fetch [--allow-cidr CIDR]]

Prints the rendered card: v1 (default, the A2A 1.0 card without signatures) or v0.3 (the
legacy shape for /.well-known/agent.json). --audience picks the card of one of
spec.audiences ("default", the default, is spec.card). --compact prints the exact published
bytes (RFC 8785 canonical JSON); --name picks one card of a file that holds several.
An AgentCard with spec.source renders the agent's card with spec.remove and spec.card applied,
as the operator publishes it; it needs the agent's card:

${SOURCE_CARD_USAGE}`;

export async function run(argv: string[]): Promise<number> {
  const parsed = parseFlags(
    argv,
    {
      file: { type: 'string', short: 'f' },
      format: { type: 'string', default: 'v1' },
      audience: { type: 'string' },
      name: { type: 'string' },
      strict: { type: 'boolean' },
      compact: { type: 'boolean' },
      ...SOURCE_CARD_FLAGS,
    },
    USAGE,
  );
  if (!parsed) return 0;
  const { values } = parsed;
  if (!values.file) throw new UserError('no input: give -f FILE (or -f - for standard input)', 2);
  if (values.format !== 'v1' && values.format !== 'v0.3') {
    throw new UserError(`--format must be v1 or v0.3, not "${values.format}"`, 2);
  }
  const source = sourceCardOptions(values);
  const loaded = await loadOneCard(values.file, {
    name: values.name,
    strict: values.strict,
    readSource: (label, resource) => sourceCardFor(label, resource, source),
    sourceFlags: wantsSourceCard(source),
  });
  printProblems(loaded.label, loaded.problems);
  const card = pickAudience(loaded, values.audience);
  const rendered = values.format === 'v1' ? renderV1(card) : renderV03(card);
  process.stdout.write(formatJson(rendered, values.compact ?? false));
  return 0;
}
