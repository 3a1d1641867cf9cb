/**
 * The two serving modes of the sidecar, and reverse proxies in front of them, as local processes
 * for the conformance suite and the benchmark.
 *
 * - Node mode: the real `agentcard sidecar` command.
 * - nginx mode: Debian's nginx with the exact configuration text the webhook injects into a Pod
 *   (taken from its patch), where only the Pod's paths and port are replaced by the test's.
 * - Proxies: Debian's nginx (proxy_pass with upstream keep-alive) and HAProxy (HTTP mode).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decide } from '../../operator/webhook/mutate.ts';
import { NGINX_CONF_ANNOTATION } from '../../operator/api/names.ts';
import { kubeletWrite, publishedData } from './card-files.ts';
import { spawnSidecar } from './sidecar-process.ts';
import { freePort } from './ports.ts';

export type ServingMode = 'node' | 'nginx';
export const SERVING_MODES: readonly ServingMode[] = ['node', 'nginx'];

export interface CardServer {
  port: number;
  /** The server's process (for its RSS). */
  pid: number;
  close(): Promise<void>;
}

export interface ModeOptions {
  trustForwardedHost?: boolean;
  /** Replaces the default keep-alive (both modes), for tests of the idle boundary. */
  keepAliveSeconds?: number;
}

export async function startMode(
  mode: ServingMode,
  cardDir: string,
  opts: ModeOptions = {},
): Promise<CardServer> {
  // nginx's workers run as an unprivileged user when the tests run as root: let them read.
  await chmod(cardDir, 0o755);
  if (mode === 'node') {
    const args = [
      ...(opts.trustForwardedHost ? ['--trust-forwarded-host'] : []),
      ...(opts.keepAliveSeconds ? ['--keep-alive', String(opts.keepAliveSeconds)] : []),
    ];
    const running = await spawnSidecar(cardDir, args);
    return {
      port: running.port,
      pid: running.child.pid!,
      async close() {
        running.child.kill('SIGTERM');
        await running.exited;
      },
    };
  }
  const port = await freePort();
  const tmp = await mkdtemp(join(tmpdir(), 'agentcard-nginx-'));
  await chmod(tmp, 0o755);
  let conf = localNginxConfig(webhookNginxConfig(opts.trustForwardedHost ?? false), { cardDir, port, tmp });
  if (opts.keepAliveSeconds) {
    conf = replaceOnce(
      conf,
      'keepalive_timeout 620s 620;',
      `keepalive_timeout ${opts.keepAliveSeconds}s ${opts.keepAliveSeconds};`,
    );
  }
  const file = join(tmp, 'nginx.conf');
  await writeFile(file, conf);
  const child = await startProcess('nginx', ['-c', file, '-e', 'stderr', '-g', 'daemon off;'], port);
  return {
    port,
    pid: child.pid!,
    async close() {
      await stopProcess(child);
      await rm(tmp, { recursive: true, force: true });
    },
  };
}

/** The configuration the webhook injects (the annotation of its patch for a Pod). */
export function webhookNginxConfig(trustForwardedHost: boolean): string {
  const decision = decide(
    {
      metadata: { name: 'agent', annotations: { 'agentcard.dev/inject': 'card' } },
      spec: { containers: [{ name: 'agent', image: 'agent' }] },
    },
    'team',
    {
      sidecarImage: 'unused',
      mode: 'native',
      server: 'nginx',
      nginxImage: 'nginx',
      trustForwardedHost,
      operatorNamespace: 'agentcard-system',
    },
  );
  if (!decision.inject) throw new Error(decision.reason);
  const path = `/metadata/annotations/${NGINX_CONF_ANNOTATION.replace('/', '~1')}`;
  return decision.patch.find((p) => p.path === path)!.value as string;
}

/**
 * The Pod's card directory, port and emptyDir replaced by local ones, and nothing else.
 */
export function localNginxConfig(
  conf: string,
  local: { cardDir: string; port: number; tmp: string },
): string {
  const tmpUses = conf.split(' /tmp/').length - 1;
  if (tmpUses !== 6) throw new Error(`expected 6 uses of /tmp in the nginx configuration, found ${tmpUses}`);
  let out = conf.replaceAll(' /tmp/', ` ${local.tmp}/`);
  out = replaceOnce(out, '\n    root /etc/agentcard;\n', `\n    root ${local.cardDir};\n`);
  return replaceOnce(out, '\n    listen 8095;\n', `\n    listen 127.0.0.1:${local.port};\n`);
}

function replaceOnce(text: string, from: string, to: string): string {
  const parts = text.split(from);
  if (parts.length !== 2) throw new Error(`expected '${from.trim()}' once in the nginx configuration`);
  return parts.join(to);
}

/** A server under the serving conformance suite (serving-conformance.ts), started over card files. */
export interface TargetServer extends CardServer {
  /** Publishes a new version of the card files (a ConfigMap's data) and returns once written. */
  publish(files: Record<string, string>): Promise<void>;
}

export interface ServingTarget {
  name: string;
  /**
   * Starts a server over `files` (the published ConfigMap's data); `undefined`: nothing is
   * published yet (the sidecar's empty volume, the card server before its first list).
   */
  start(files: Record<string, string> | undefined, opts?: ModeOptions): Promise<TargetServer>;
  /** What a Host no card claims gets: the default card (the sidecar) or 404 (the card server). */
  unclaimedHost: 'default' | 404;
  /** Node's 431 (RFC 6585 section 5), nginx's own 400 for a too long header line. */
  headerTooLargeStatus: 400 | 431;
}

/** A sidecar serving mode over a kubelet-style volume of its own. */
export function sidecarTarget(mode: ServingMode): ServingTarget {
  return {
    name: `${mode} mode`,
    unclaimedHost: 'default',
    headerTooLargeStatus: mode === 'node' ? 431 : 400,
    async start(files, opts) {
      const dir = await mkdtemp(join(tmpdir(), 'agentcard-sidecar-'));
      // The ConfigMap's data as the controller publishes it, for both modes.
      if (files) await kubeletWrite(dir, publishedData(files));
      const server = await startMode(mode, dir, opts);
      return {
        ...server,
        publish: (next) => kubeletWrite(dir, publishedData(next)),
        async close() {
          await server.close();
          await rm(dir, { recursive: true, force: true });
        },
      };
    },
  };
}

export type ProxyKind = 'nginx' | 'haproxy';
export const PROXIES: readonly ProxyKind[] = ['nginx', 'haproxy'];

/** A reverse proxy on a free port in front of 127.0.0.1:upstream, reusing upstream connections. */
export async function startProxy(kind: ProxyKind, upstream: number): Promise<CardServer> {
  const port = await freePort();
  const tmp = await mkdtemp(join(tmpdir(), `agentcard-${kind}-proxy-`));
  await chmod(tmp, 0o755);
  let child: ChildProcess;
  if (kind === 'nginx') {
    const file = join(tmp, 'nginx.conf');
    await writeFile(
      file,
      `worker_processes 1;
pid ${tmp}/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${tmp}/b; proxy_temp_path ${tmp}/p; fastcgi_temp_path ${tmp}/f;
  uwsgi_temp_path ${tmp}/u; scgi_temp_path ${tmp}/s;
  upstream card { server 127.0.0.1:${upstream}; keepalive 16; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://card;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-Host $host;
    }
  }
}
`,
    );
    child = await startProcess('nginx', ['-c', file, '-e', 'stderr', '-g', 'daemon off;'], port);
  } else {
    const file = join(tmp, 'haproxy.cfg');
    await writeFile(
      file,
      `global
  maxconn 2000
defaults
  mode http
  option http-keep-alive
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  timeout http-keep-alive 60s
frontend card
  bind 127.0.0.1:${port}
  default_backend sidecar
backend sidecar
  http-reuse always
  server s1 127.0.0.1:${upstream}
`,
    );
    child = await startProcess('haproxy', ['-db', '-f', file], port);
  }
  return {
    port,
    pid: child.pid!,
    async close() {
      await stopProcess(child);
      await rm(tmp, { recursive: true, force: true });
    },
  };
}

/** Starts a server process and waits until its port accepts connections (or it exits). */
async function startProcess(command: string, args: string[], port: number): Promise<ChildProcess> {
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let missing = false;
  child.once('error', (err: NodeJS.ErrnoException) => (missing = err.code === 'ENOENT'));
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (missing) {
      throw new Error(
        `${command} is not installed (on Debian or Ubuntu: apt-get install nginx-light haproxy)`,
      );
    }
    if (child.exitCode !== null) throw new Error(`${command} exited with ${child.exitCode}: ${stderr}`);
    if (await accepts(port)) return child;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${command} did not listen on ${port} within 10 s: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Whether `address:port` accepts a TCP connection now. */
export function accepts(port: number, address = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, address);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Stops a server process: SIGTERM, then SIGKILL after 5 s. */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  // nginx and HAProxy stop at once on SIGTERM (fast shutdown).
  child.kill('SIGTERM');
  const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(force);
}
