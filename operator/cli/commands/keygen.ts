/**
 * `agentcard keygen --alg ALG [--kid ID] [--out FILE] [--jwks-out FILE]`: a new private signing
 * JWK (on standard output, or in --out FILE created with mode 0600, never overwritten) and,
 * with --jwks-out, the public JWKS to publish or give to `agentcard verify`.
 */
import { writeFile } from 'node:fs/promises';
import { UserError } from '../../errors.ts';
import { parseFlags } from '../input.ts';
import { generateSigningJwk } from '../../card/keygen.ts';
import { SIGNING_ALGS } from '../../card/resource.ts';

const USAGE = `usage: agentcard keygen --alg ${SIGNING_ALGS.join('|')} [--kid ID] [--out FILE] [--jwks-out FILE]

Generates a private signing JWK (kid default: its RFC 7638 thumbprint). It is printed on
standard output unless --out FILE (created with mode 0600; an existing file is never
overwritten). --jwks-out FILE writes the public JWKS {"keys": [...]}.
`;

const PRIVATE_MEMBERS = new Set(['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth']);

async function write(file: string, text: string, opts: { flag: string; mode: number }): Promise<void> {
  try {
    await writeFile(file, text, opts);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason =
      code === 'EEXIST'
        ? 'it already exists'
        : code === 'ENOENT'
          ? 'no such directory'
          : code === 'EACCES'
            ? 'permission denied'
            : code === 'EISDIR'
              ? 'is a directory'
              : (code ?? 'write error');
    throw new UserError(`cannot write ${file}: ${reason}`);
  }
}

export async function run(argv: string[]): Promise<number> {
  const parsed = parseFlags(
    argv,
    {
      alg: { type: 'string' },
      kid: { type: 'string' },
      out: { type: 'string' },
      'jwks-out': { type: 'string' },
    },
    USAGE,
  );
  if (!parsed) return 0;
  const { values } = parsed;
  if (!values.alg) throw new UserError(`no --alg (one of ${SIGNING_ALGS.join(', ')})`, 2);
  if (values.kid !== undefined && values.kid.trim() === '') throw new UserError('--kid must not be empty', 2);
  const jwk = await generateSigningJwk(values.alg, values.kid);
  if (values.out) await write(values.out, JSON.stringify(jwk) + '\n', { flag: 'wx', mode: 0o600 });
  else process.stdout.write(JSON.stringify(jwk) + '\n');
  if (values['jwks-out']) {
    const publicJwk = Object.fromEntries(Object.entries(jwk).filter(([name]) => !PRIVATE_MEMBERS.has(name)));
    await write(values['jwks-out'], JSON.stringify({ keys: [publicJwk] }, null, 2) + '\n', {
      flag: 'w',
      mode: 0o644,
    });
  }
  if (values.out) process.stderr.write(`wrote ${values.out} (kid ${jwk.kid})\n`);
  return 0;
}
