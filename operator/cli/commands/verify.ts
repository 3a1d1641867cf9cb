/**
 * `agentcard verify -f CARD|--dir DIR --jwks FILE [--output text|json]`: checks the signatures of
 * a card (of any audience: each is signed on its own) against a trusted JWKS (A2A spec 8.4.3),
 * and/or, with `--trust-bundle FILE --identity PATTERN`, a signature's x5c certificate chain
 * against CA certificates and workload identities (../../card/x5c.ts). Exit 0 when at least one
 * signature verifies (its kid, or the identity of its chain, is printed), 1 otherwise. --dir
 * checks every audience's card of a published layout (`agentcard sign --out-dir`, or a mounted
 * ConfigMap). verify never touches the network: the jku header is never fetched, and keys and
 * bundles are files (`agentcard discover` also takes URLs).
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { UserError } from '../../errors.ts';
import { MAX_INPUT_BYTES, MAX_JWKS_BYTES, parseDocuments, parseFlags, readInput } from '../input.ts';
import { parseJwks } from '../../card/jwks.ts';
import { verifyCard, type JWKS, type VerifyOptions, type VerifyResult } from '../../card/verify.ts';
import { identityPatterns, readTrustBundle, TRUST_FLAGS } from '../trust-flags.ts';

const USAGE = `usage: agentcard verify -f CARD|- --jwks FILE [--output text|json]
       agentcard verify -f CARD|- --trust-bundle FILE --identity PATTERN [--output text|json]
       agentcard verify --dir DIR --jwks FILE [--output text|json]

Verifies a signed card (JSON, as served) against the public keys of a JWKS file
({"keys": [...]}, or a single public JWK), and/or against a trust bundle: a signature whose
x5c certificate chain leads to a CA certificate of the PEM bundle, whose leaf allows digital
signatures, and whose leaf URI SAN (the workload identity, e.g. a SPIFFE ID) matches a
--identity PATTERN (exact, or ending in /* for any identity below that path; repeatable).
Both trust sources can be given together. Exit 0 when a signature verifies, 1 otherwise.
--dir verifies every audience's card in a directory laid out as the operator publishes it
(agent-card.json and host.<host>.agent-card.json / wildcard.<suffix>.agent-card.json); exit 0
only when every one verifies.
`;

/** The v1 card files of a published layout: the default audience's and each host's. */
const CARD_FILE = /^(agent-card\.json|(host|wildcard)\.[a-z0-9.-]+\.agent-card\.json)$/;

async function cardFiles(dir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UserError(
      `cannot read ${dir}: ${code === 'ENOENT' ? 'no such directory' : (code ?? 'read error')}`,
    );
  }
  const files = names.filter((n) => CARD_FILE.test(n)).sort();
  if (files.length === 0)
    throw new UserError(`${dir}: no agent-card.json or host.<host>.agent-card.json found`);
  return files;
}

export async function run(argv: string[]): Promise<number> {
  const parsed = parseFlags(
    argv,
    {
      file: { type: 'string', short: 'f' },
      jwks: { type: 'string' },
      ...TRUST_FLAGS,
      dir: { type: 'string' },
      output: { type: 'string', short: 'o', default: 'text' },
    },
    USAGE,
  );
  if (!parsed) return 0;
  const { values } = parsed;
  if (values.file !== undefined && values.dir !== undefined)
    throw new UserError('give -f CARD or --dir DIR, not both', 2);
  if (!values.file && !values.dir)
    throw new UserError('no input: give -f CARD (or -f - for standard input) or --dir DIR', 2);
  const bundles = values['trust-bundle'] ?? [];
  const identities = identityPatterns(bundles, values.identity ?? []);
  if (!values.jwks && bundles.length === 0)
    throw new UserError(
      'no keys: give --jwks FILE with the trusted public keys, or --trust-bundle FILE and --identity PATTERN',
      2,
    );
  if (values.output !== 'text' && values.output !== 'json') {
    throw new UserError(`--output must be text or json, not "${values.output}"`, 2);
  }
  const jwks = values.jwks
    ? parseJwks(await readInput(values.jwks, MAX_JWKS_BYTES), values.jwks)
    : { keys: [] };
  const options: VerifyOptions = {};
  if (bundles.length > 0) {
    const roots = [];
    for (const file of bundles) roots.push(...(await readTrustBundle(file)));
    options.certificates = { roots, identities };
  }
  if (values.dir !== undefined) return verifyDir(values.dir, jwks, options, values.output);
  const source = values.file === '-' ? 'standard input' : values.file!;
  const docs = parseDocuments(await readInput(values.file!, MAX_INPUT_BYTES), source);
  const doc = docs[0];
  if (docs.length !== 1 || doc?.type !== 'card') {
    throw new UserError(
      `${source}: expected one signed card (JSON as served), not a manifest or several documents`,
    );
  }
  const result = await verifyCard(doc.card, jwks, options);
  if (values.output === 'json') {
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  } else if (result.verified) {
    process.stdout.write(`verified: ${signer(result)}\n`);
  } else {
    result.results.forEach((r, i) => {
      const who = r.identity ? `identity ${r.identity}` : r.kid ? `kid ${r.kid}` : 'unknown kid';
      process.stderr.write(`${source}: signatures[${i}] (${who}): ${r.error ?? 'not verified'}\n`);
    });
    process.stderr.write(`agentcard: ${source}: no signature verified\n`);
  }
  return result.verified ? 0 : 1;
}

/** Who signed: the identity of a certificate chain, else the kid. */
function signer(result: Pick<VerifyResult, 'kid' | 'identity'>): string {
  if (!result.identity) return `kid ${result.kid}`;
  return `identity ${result.identity}${result.kid ? ` (kid ${result.kid})` : ''}`;
}

/** Every audience's card of a published layout; exit 0 only when each one verifies. */
async function verifyDir(
  dir: string,
  jwks: JWKS,
  options: VerifyOptions,
  output: string | undefined,
): Promise<number> {
  const reports: Array<{ file: string; verified: boolean; kid?: string; identity?: string; error?: string }> =
    [];
  for (const file of await cardFiles(dir)) {
    const path = join(dir, file);
    const docs = parseDocuments(await readInput(path, MAX_INPUT_BYTES), path);
    const doc = docs[0];
    if (docs.length !== 1 || doc?.type !== 'card') {
      reports.push({ file, verified: false, error: 'not a signed card' });
      continue;
    }
    const result = await verifyCard(doc.card, jwks, options);
    reports.push(
      result.verified
        ? {
            file,
            verified: true,
            ...(result.kid ? { kid: result.kid } : {}),
            ...(result.identity ? { identity: result.identity } : {}),
          }
        : {
            file,
            verified: false,
            error: result.results.map((r) => r.error ?? 'not verified').join('; ') || 'no signature',
          },
    );
  }
  if (output === 'json') {
    process.stdout.write(JSON.stringify(reports, null, 2) + '\n');
  } else {
    for (const r of reports) {
      if (r.verified) process.stdout.write(`${r.file}: verified: ${signer(r)}\n`);
      else process.stderr.write(`${join(dir, r.file)}: ${r.error}\n`);
    }
    const bad = reports.filter((r) => !r.verified).length;
    if (bad > 0)
      process.stderr.write(`agentcard: ${dir}: ${bad} of ${reports.length} cards did not verify\n`);
  }
  return reports.every((r) => r.verified) ? 0 : 1;
}
