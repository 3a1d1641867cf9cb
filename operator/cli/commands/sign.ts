/**
 * `agentcard sign -f MANIFEST|CARD --key FILE [--key FILE ...] [--kid ID ...] [--alg ALG ...]
 * [--jku URL]`: the signed v1 card on standard output. The i-th --kid/--alg applies to the i-th
 * --key; for a manifest, spec.signing.keys[i] supplies the defaults (and spec.signing.jku the jku).
 */
import { UserError } from '../../errors.ts';
import { MAX_KEY_BYTES, formatJson, loadOneCard, parseFlags, printProblems, readInput } from '../input.ts';
import { renderV1 } from '../../card/render.ts';
import { importSigningKey, signCard, type SigningKey } from '../../card/sign.ts';

const USAGE = `usage: agentcard sign -f MANIFEST|CARD|- --key FILE [--key FILE ...] [--kid ID ...] [--alg ALG ...]
                      [--jku URL] [--name NAME] [--strict] [--compact]

Signs the rendered v1 card (RFC 8785 canonical JSON, detached JWS) with each key in order and
prints it. A key file holds a private JWK or a PKCS#8 PEM. alg: ES256, ES384, EdDSA, RS256,
PS256 (default: from the key type). kid default: the JWK's kid, else its RFC 7638 thumbprint.
`;

export async function run(argv: string[]): Promise<number> {
  const parsed = parseFlags(
    argv,
    {
      file: { type: 'string', short: 'f' },
      key: { type: 'string', short: 'k', multiple: true },
      kid: { type: 'string', multiple: true },
      alg: { type: 'string', multiple: true },
      jku: { type: 'string' },
      name: { type: 'string' },
      strict: { type: 'boolean' },
      compact: { type: 'boolean' },
    },
    USAGE,
  );
  if (!parsed) return 0;
  const { values } = parsed;
  if (!values.file) throw new UserError('no input: give -f FILE (or -f - for standard input)', 2);
  const keyFiles = values.key ?? [];
  if (keyFiles.length === 0) throw new UserError('no key: give --key FILE (one per signature)', 2);
  const kids = values.kid ?? [];
  const algs = values.alg ?? [];
  if (kids.length > keyFiles.length)
    throw new UserError(`${kids.length} --kid for ${keyFiles.length} --key`, 2);
  if (algs.length > keyFiles.length)
    throw new UserError(`${algs.length} --alg for ${keyFiles.length} --key`, 2);
  if (keyFiles.includes('-') && values.file === '-')
    throw new UserError('the card and a key cannot both be standard input', 2);

  const { label, card, spec, problems } = await loadOneCard(values.file, {
    name: values.name,
    strict: values.strict,
  });
  printProblems(label, problems);

  const keys: SigningKey[] = [];
  for (const [i, file] of keyFiles.entries()) {
    const fromSpec = spec?.signing?.keys[i];
    const material = await readInput(file, MAX_KEY_BYTES);
    try {
      keys.push(
        await importSigningKey(material, { kid: kids[i] ?? fromSpec?.kid, alg: algs[i] ?? fromSpec?.alg }),
      );
    } catch (err) {
      if (err instanceof UserError) throw new UserError(`key ${file}: ${err.message}`, err.exitCode);
      throw err;
    }
  }
  const signed = await signCard(renderV1(card), keys, { jku: values.jku ?? spec?.signing?.jku });
  process.stdout.write(formatJson(signed, values.compact ?? false));
  return 0;
}
