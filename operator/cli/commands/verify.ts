/**
 * `agentcard verify -f CARD --jwks FILE [--output text|json]`: checks the signatures of a card
 * against a trusted JWKS (A2A spec 8.4.3). Exit 0 when at least one signature verifies (its kid
 * is printed), 1 otherwise. The jku header is never fetched.
 */
import { UserError } from '../../errors.ts';
import { MAX_INPUT_BYTES, MAX_JWKS_BYTES, parseDocuments, parseFlags, readInput } from '../input.ts';
import { parseJwks } from '../../card/jwks.ts';
import { verifyCard } from '../../card/verify.ts';

const USAGE = `usage: agentcard verify -f CARD|- --jwks FILE [--output text|json]

Verifies a signed card (JSON, as served) against the public keys of a JWKS file
({"keys": [...]}, or a single public JWK). Exit 0 when a signature verifies, 1 otherwise.
`;

export async function run(argv: string[]): Promise<number> {
  const parsed = parseFlags(
    argv,
    {
      file: { type: 'string', short: 'f' },
      jwks: { type: 'string' },
      output: { type: 'string', short: 'o', default: 'text' },
    },
    USAGE,
  );
  if (!parsed) return 0;
  const { values } = parsed;
  if (!values.file) throw new UserError('no input: give -f CARD (or -f - for standard input)', 2);
  if (!values.jwks) throw new UserError('no keys: give --jwks FILE with the trusted public keys', 2);
  if (values.output !== 'text' && values.output !== 'json') {
    throw new UserError(`--output must be text or json, not "${values.output}"`, 2);
  }
  const source = values.file === '-' ? 'standard input' : values.file;
  const jwks = parseJwks(await readInput(values.jwks, MAX_JWKS_BYTES), values.jwks);
  const docs = parseDocuments(await readInput(values.file, MAX_INPUT_BYTES), source);
  const doc = docs[0];
  if (docs.length !== 1 || doc?.type !== 'card') {
    throw new UserError(
      `${source}: expected one signed card (JSON as served), not a manifest or several documents`,
    );
  }
  const result = await verifyCard(doc.card, jwks);
  if (values.output === 'json') {
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  } else if (result.verified) {
    process.stdout.write(`verified: kid ${result.kid}\n`);
  } else {
    result.results.forEach((r, i) => {
      const who = r.kid ? `kid ${r.kid}` : 'unknown kid';
      process.stderr.write(`${source}: signatures[${i}] (${who}): ${r.error ?? 'not verified'}\n`);
    });
    process.stderr.write(`agentcard: ${source}: no signature verified\n`);
  }
  return result.verified ? 0 : 1;
}
