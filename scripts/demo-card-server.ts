/**
 * The demo's stand-in for the injected sidecar: with no kubelet, it serves the card volume the
 * way the Pod would. In the nginx mode (the chart's default) it runs the machine's nginx with
 * the configuration the webhook put into the demo Pod's annotation, only the Pod's paths and
 * port replaced; without nginx it says so and serves with the Node mode instead.
 */
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { NGINX_CONF_ANNOTATION } from '../operator/api/names.ts';
import { localNginxConfig } from '../test/support/card-servers.ts';

/** The nginx image the chart pins (so the demo's webhook injects what a default install does). */
export function chartNginxImage(repoRoot: string): string {
  const values = parse(readFileSync(join(repoRoot, 'helm/agentcard-operator/values.yaml'), 'utf8')) as {
    sidecar: { nginx: { image: string } };
  };
  return values.sidecar.nginx.image;
}

/** Whether this machine can run the nginx mode (any nginx: the configuration needs no module). */
export function haveNginx(): boolean {
  return spawnSync('nginx', ['-v'], { stdio: 'ignore' }).status === 0;
}

/** Starts nginx with the Pod's annotations as its configuration, serving `cardDir` on `port`. */
export function startNginx(opts: {
  annotations: Record<string, string>;
  cardDir: string;
  port: number;
  workDir: string;
}): ChildProcess {
  const conf = opts.annotations[NGINX_CONF_ANNOTATION];
  if (!conf) throw new Error('the Pod has no nginx configuration annotation');
  mkdirSync(opts.workDir, { recursive: true });
  // nginx's workers run as an unprivileged user when the demo runs as root: let them read.
  for (const dir of [opts.workDir, opts.cardDir, join(opts.cardDir, '..')]) chmodSync(dir, 0o755);
  const file = join(opts.workDir, 'nginx.conf');
  writeFileSync(file, localNginxConfig(conf, { cardDir: opts.cardDir, port: opts.port, tmp: opts.workDir }));
  const log = openSync(join(opts.workDir, '..', 'nginx.log'), 'a');
  return spawn('nginx', ['-c', file, '-e', 'stderr', '-g', 'daemon off;'], {
    stdio: ['ignore', 'ignore', log],
  });
}
