/**
 * `agentcard keygen --alg ALG [--kid ID] [--out FILE] [--jwks-out FILE] [--secret NAME]`: a new
 * private signing JWK (on standard output, or in --out FILE created with mode 0600, never
 * overwritten) and, with --jwks-out, the public JWKS to publish or give to `agentcard verify`.
 * With --secret, standard output is a Secret manifest holding the key, for `| kubectl apply -f -`:
 * the key goes from here into the cluster without a file in between.
 */
import { writeFile } from 'node:fs/promises';
import { UserError } from '../../errors.ts';
import { parseFlags } from '../input.ts';
import { generateSigningJwk } from '../../card/keygen.ts';
import { SIGNING_ALGS } from '../../card/resource.ts';

/** The Secret entry --secret writes by default (the name examples/ use). */
export const DEFAULT_SECRET_KEY = 'signing.jwk';
/** Optional; lets the operator cache the Secret's data (docs/design.md, Secrets). */
const SIGNING_KEY_LABEL = 'agentcard.dev/signing-key';

const USAGE = `usage: agentcard keygen --alg ${SIGNING_ALGS.join('|')} [--kid ID] [--out FILE] [--jwks-out FILE]
                        [--secret NAME [--secret-key KEY]]

Generates a private signing JWK (kid default: its RFC 7638 thumbprint). It is printed on
standard output unless --out FILE (created with mode 0600; an existing file is never
overwritten). --jwks-out FILE writes the public JWKS {"keys": [...]}.

--secret NAME prints a Secret manifest instead, named NAME, with the key under KEY (default
${DEFAULT_SECRET_KEY}) and the label ${SIGNING_KEY_LABEL}=true, for an AgentCard's
spec.signing.keys[].secretRef:
  agentcard keygen --alg ES256 --secret my-agent-signing | kubectl create -n NAMESPACE -f -
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
      secret: { type: 'string' },
      'secret-key': { type: 'string' },
    },
    USAGE,
  );
  if (!parsed) return 0;
  const { values } = parsed;
  if (!values.alg) throw new UserError(`no --alg (one of ${SIGNING_ALGS.join(', ')})`, 2);
  if (values.kid !== undefined && values.kid.trim() === '') throw new UserError('--kid must not be empty', 2);
  if (values['secret-key'] !== undefined && values.secret === undefined)
    throw new UserError('--secret-key needs --secret', 2);
  const secret = values.secret === undefined ? undefined : secretRef(values.secret, values['secret-key']);
  const jwk = await generateSigningJwk(values.alg, values.kid);
  if (values.out) await write(values.out, JSON.stringify(jwk) + '\n', { flag: 'wx', mode: 0o600 });
  if (secret) process.stdout.write(JSON.stringify(secretManifest(secret, JSON.stringify(jwk))) + '\n');
  else if (!values.out) process.stdout.write(JSON.stringify(jwk) + '\n');
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

// RFC 1123 subdomain (a Secret's name) and a Secret data key (ConfigMap/Secret key rules).
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DATA_KEY = /^[-._a-zA-Z0-9]+$/;

function secretRef(name: string, key = DEFAULT_SECRET_KEY): { name: string; key: string } {
  if (name.length > 253 || !SUBDOMAIN.test(name))
    throw new UserError(
      `--secret '${name.slice(0, 60)}' is not a valid Secret name (lowercase letters, digits, '-' and '.', at most 253)`,
      2,
    );
  if (key.length > 253 || !DATA_KEY.test(key) || key === '.' || key === '..')
    throw new UserError(
      `--secret-key '${key.slice(0, 60)}' is not a valid Secret key (letters, digits, '-', '_' and '.')`,
      2,
    );
  return { name, key };
}

/** A Secret of the current namespace (kubectl apply -n chooses it) holding the private key. */
export function secretManifest(ref: { name: string; key: string }, jwk: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: ref.name, labels: { [SIGNING_KEY_LABEL]: 'true' } },
    type: 'Opaque',
    stringData: { [ref.key]: jwk },
  };
}
