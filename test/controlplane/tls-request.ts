import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';

/** Client TLS material read from the control plane's pki folder. */
export interface ClientTls {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

/** Loads the CA and one client certificate (`admin`, `etcd-client`, ...) written by the `pki` command. */
export function clientTls(pkiDir: string, client: string): ClientTls {
  return {
    ca: readFileSync(join(pkiDir, 'ca.crt')),
    cert: readFileSync(join(pkiDir, `${client}.crt`)),
    key: readFileSync(join(pkiDir, `${client}.key`)),
  };
}

/** One HTTPS request to a loopback server of the control plane, authenticated by a client certificate. */
export function tlsRequest(
  url: string,
  tls: ClientTls,
  opts: { method?: string; body?: unknown; timeoutMs?: number } = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const req = request(
      url,
      {
        method: opts.method ?? (payload ? 'POST' : 'GET'),
        ...tls,
        timeout: opts.timeoutMs ?? 5000,
        headers: payload ? { 'content-type': 'application/json' } : {},
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`request to ${url} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}
