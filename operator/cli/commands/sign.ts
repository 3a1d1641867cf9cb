/**
 * `agentcard sign -f MANIFEST|CARD --key FILE [--key FILE ...] [--kid ID ...] [--alg ALG ...]
 * [--jku URL] [--audience NAME | --out-dir DIR]`: the signed v1 card on standard output (of
 * spec.card, or of one audience), or every audience's files written to a directory in the layout
 * of the published ConfigMap. The i-th --kid/--alg applies to the i-th --key; for a manifest,
 * spec.signing.keys[i] supplies the defaults (and spec.signing.jku the jku). A manifest with
 * spec.source takes the agent's card from --source-card or --fetch (../source-card.ts).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { UserError } from '../../errors.ts';
import {
  SOURCE_CARD_FLAGS,
  SOURCE_CARD_USAGE,
  sourceCardFor,
  sourceCardOptions,
  wantsSourceCard,
} from '../source-card.ts';
import {
  MAX_KEY_BYTES,
  allAudiences,
  formatJson,
  loadOneCard,
  parseFlags,
  pickAudience,
  printProblems,
  readInput,
} from '../input.ts';
import { renderV03, renderV1 } from '../../card/render.ts';
import { serializeCard } from '../../card/serialize.ts';
import { importSigningKey, publicJwks, signCard, type SigningKey } from '../../card/sign.ts';
import { DATA_KEYS } from '../../api/names.ts';
import { variantData } from '../../controllers/agentcard/audiences/publish.ts';

const USAGE = `usage: agentcard sign -f MANIFEST|CARD|- --key FILE [--key FILE ...] [--kid ID ...] [--alg ALG ...]
                      [--jku URL] [--audience NAME | --out-dir DIR] [--name NAME] [--strict] [--compact]
                      [--source-card FILE | --fetch [--allow-cidr CIDR]]

Signs the rendered v1 card (RFC 8785 canonical JSON, detached JWS) with each key in order and
prints it. --audience signs the card of one of spec.audiences instead of spec.card; --out-dir
writes every audience's signed card, its v0.3 shape and jwks.json to DIR, named as the operator
publishes them (agent-card.json for spec.card, host.<host>.agent-card.json per audience host). A key file holds a private JWK or a PKCS#8 PEM. alg: ES256, ES384, EdDSA, RS256,
PS256 (default: from the key type). kid default: the JWK's kid, else its RFC 7638 thumbprint.
An AgentCard with spec.source signs the agent's card with spec.remove and spec.card applied, as
the operator publishes it; it needs the agent's card:

${SOURCE_CARD_USAGE}`;

export async function run(argv: string[]): Promise<number> {
  const parsed = parseFlags(
    argv,
    {
      file: { type: 'string', short: 'f' },
      key: { type: 'string', short: 'k', multiple: true },
      kid: { type: 'string', multiple: true },
      alg: { type: 'string', multiple: true },
      jku: { type: 'string' },
      audience: { type: 'string' },
      'out-dir': { type: 'string' },
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
  const keyFiles = values.key ?? [];
  if (keyFiles.length === 0) throw new UserError('no key: give --key FILE (one per signature)', 2);
  const kids = values.kid ?? [];
  const algs = values.alg ?? [];
  if (kids.length > keyFiles.length)
    throw new UserError(`${kids.length} --kid for ${keyFiles.length} --key`, 2);
  if (algs.length > keyFiles.length)
    throw new UserError(`${algs.length} --alg for ${keyFiles.length} --key`, 2);
  if (values.audience !== undefined && values['out-dir'] !== undefined)
    throw new UserError('--audience and --out-dir exclude each other (--out-dir writes every audience)', 2);
  if (keyFiles.includes('-') && values.file === '-')
    throw new UserError('the card and a key cannot both be standard input', 2);

  const source = sourceCardOptions(values);
  const loaded = await loadOneCard(values.file, {
    name: values.name,
    strict: values.strict,
    readSource: (label, resource) => sourceCardFor(label, resource, source),
    sourceFlags: wantsSourceCard(source),
  });
  const { spec } = loaded;
  printProblems(loaded.label, loaded.problems);
  const card = pickAudience(loaded, values.audience);

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
  const jku = values.jku ?? spec?.signing?.jku;
  const outDir = values['out-dir'];
  if (outDir !== undefined) {
    const [main, ...others] = await Promise.all(
      allAudiences(loaded).map(async (v) => ({
        name: v.name,
        hosts: v.hosts,
        card: serializeCard(await signCard(renderV1(v.card), keys, { jku })),
        legacyCard: serializeCard(renderV03(v.card)),
      })),
    );
    const files: Record<string, string> = {
      [DATA_KEYS.card]: main!.card,
      [DATA_KEYS.legacyCard]: main!.legacyCard,
      [DATA_KEYS.jwks]: serializeCard(publicJwks(keys) as unknown as Record<string, unknown>),
      ...variantData(others),
    };
    try {
      await mkdir(outDir, { recursive: true });
      for (const [name, text] of Object.entries(files)) await writeFile(join(outDir, name), text);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'write error';
      throw new UserError(`cannot write to ${outDir}: ${code}`);
    }
    process.stderr.write(
      `wrote ${Object.keys(files).length} files to ${outDir} (audiences: ${[main!, ...others].map((v) => v.name).join(', ')})\n`,
    );
    return 0;
  }
  const signed = await signCard(renderV1(card), keys, { jku });
  process.stdout.write(formatJson(signed, values.compact ?? false));
  return 0;
}
