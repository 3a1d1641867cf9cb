/**
 * `agentcard render -f MANIFEST|CARD [--format v1|v0.3] [--audience NAME] [--name NAME] [--strict]
 * [--compact]`: the card JSON on standard output (v1: the A2A 1.0 card as published, before
 * signing; v0.3: the legacy shape), of spec.card or of one audience. Lint warnings go to
 * standard error.
 */
import { UserError } from '../../errors.ts';
import { formatJson, loadOneCard, parseFlags, pickAudience, printProblems } from '../input.ts';
import { renderV03, renderV1 } from '../../card/render.ts';

const USAGE = `usage: agentcard render -f MANIFEST|CARD|- [--format v1|v0.3] [--audience NAME] [--name NAME]
                        [--strict] [--compact]

Prints the rendered card: v1 (default, the A2A 1.0 card without signatures) or v0.3 (the
legacy shape for /.well-known/agent.json). --audience picks the card of one of
spec.audiences ("default", the default, is spec.card). --compact prints the exact published
bytes (RFC 8785 canonical JSON); --name picks one card of a file that holds several.
`;

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
    },
    USAGE,
  );
  if (!parsed) return 0;
  const { values } = parsed;
  if (!values.file) throw new UserError('no input: give -f FILE (or -f - for standard input)', 2);
  if (values.format !== 'v1' && values.format !== 'v0.3') {
    throw new UserError(`--format must be v1 or v0.3, not "${values.format}"`, 2);
  }
  const loaded = await loadOneCard(values.file, { name: values.name, strict: values.strict });
  printProblems(loaded.label, loaded.problems);
  const card = pickAudience(loaded, values.audience);
  const rendered = values.format === 'v1' ? renderV1(card) : renderV03(card);
  process.stdout.write(formatJson(rendered, values.compact ?? false));
  return 0;
}
