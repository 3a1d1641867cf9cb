/**
 * The CA bundle that probes trust besides the system roots (--probe-ca-file): a PEM file, in a
 * cluster the key of a ConfigMap mounted into the operator's Pod (for example a trust-manager
 * Bundle's target). Only certificates are kept; anything else in the file is ignored.
 */
import { readFile } from 'node:fs/promises';
import { X509Certificate } from 'node:crypto';
import { UserError } from '../errors.ts';

const PEM_CERT = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** The certificates of a PEM text; throws an Error naming the problem when there is none or one is bad. */
export function parseCaBundle(text: string): string[] {
  const certs = text.match(PEM_CERT) ?? [];
  if (certs.length === 0) throw new Error('no PEM certificate in it');
  certs.forEach((pem, i) => {
    try {
      new X509Certificate(pem);
    } catch {
      throw new Error(`certificate ${i + 1} of ${certs.length} does not parse`);
    }
  });
  return certs;
}

/** Reads and checks the bundle; a usage error (exit 2) naming the file when it cannot be used. */
export async function readCaBundle(path: string): Promise<string[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new UserError(
      `--probe-ca-file ${path}: cannot read (${(err as { code?: string }).code ?? 'error'})`,
      2,
    );
  }
  try {
    return parseCaBundle(text);
  } catch (err) {
    throw new UserError(`--probe-ca-file ${path}: ${(err as Error).message}`, 2);
  }
}
