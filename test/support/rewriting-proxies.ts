/**
 * Real nginx reverse proxies in front of a card server, each on its own loopback address (so
 * that each is a host of its own), for the served-card check: one passes the card through, one
 * rewrites it with `sub_filter`, one strips its signatures by renaming the member.
 */
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { accepts, stopProcess } from './card-servers.ts';

export interface Proxy {
  address: string;
  port: number;
  close(): Promise<void>;
}

/**
 * `filters`: pairs of (text, replacement) applied to every JSON body (nginx's sub_filter, with
 * the upstream asked for an uncompressed body, which sub_filter needs). `extra`: more server
 * blocks for the same process.
 */
export async function startNginxProxy(opts: {
  address: string;
  port: number;
  upstream: number;
  filters?: Array<[string, string]>;
  extra?: string;
  /** Serve HTTPS with this certificate and key (PEM). */
  tls?: { cert: string; key: string };
  /** Drop the client's If-None-Match: every answer is a 200 with a body (that the filters rewrite). */
  noRevalidation?: boolean;
}): Promise<Proxy> {
  const tmp = await mkdtemp(join(tmpdir(), 'agentcard-served-proxy-'));
  await chmod(tmp, 0o755);
  if (opts.tls) {
    await writeFile(join(tmp, 'tls.crt'), opts.tls.cert);
    await writeFile(join(tmp, 'tls.key'), opts.tls.key, { mode: 0o600 });
  }
  const tls = opts.tls
    ? ` ssl;\n    ssl_certificate ${tmp}/tls.crt;\n    ssl_certificate_key ${tmp}/tls.key`
    : '';
  const filters = (opts.filters ?? []).map(([from, to]) => `      sub_filter '${from}' '${to}';`).join('\n');
  const conf = `worker_processes 1;
pid ${tmp}/nginx.pid;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${tmp}/b; proxy_temp_path ${tmp}/p; fastcgi_temp_path ${tmp}/f;
  uwsgi_temp_path ${tmp}/u; scgi_temp_path ${tmp}/s;
  server {
    listen ${opts.address}:${opts.port}${tls};
    location / {
      proxy_pass http://127.0.0.1:${opts.upstream};
      proxy_http_version 1.1;
      proxy_set_header Host $host;
      proxy_set_header Accept-Encoding "";
${opts.noRevalidation ? '      proxy_set_header If-None-Match "";\n' : ''}${filters}
      sub_filter_once off;
      sub_filter_types application/json application/ai-catalog+json;
    }
  }
${opts.extra ?? ''}
}
`;
  const file = join(tmp, 'nginx.conf');
  await writeFile(file, conf);
  const child = spawn('nginx', ['-c', file, '-e', 'stderr', '-g', 'daemon off;'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const deadline = Date.now() + 10_000;
  while (!(await accepts(opts.port, opts.address))) {
    if (child.exitCode !== null) throw new Error(`nginx exited with ${child.exitCode}: ${stderr}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`nginx did not listen on ${opts.address}:${opts.port} within 10 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    address: opts.address,
    port: opts.port,
    async close() {
      await stopProcess(child);
      await rm(tmp, { recursive: true, force: true });
    },
  };
}
