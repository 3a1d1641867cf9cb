// Global setup of both vitest projects: the Debian packages that the tests run as real
// components (nginx with njs for the sidecar's nginx mode, HAProxy as a reverse proxy in front of
// the sidecar, headless Chromium for the catalog page, ShellCheck for the workflows' scripts).
// They are installed here when missing, so that `npm ci && npm test` is the whole
// set-up on a fresh Debian or Ubuntu machine, as the Go-built control plane is; elsewhere the
// tests stop with the one command to run.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** What each package provides, checked by a file it installs. */
export const SYSTEM_PACKAGES: ReadonlyArray<{ pkg: string; provides: string }> = [
  { pkg: 'nginx-light', provides: '/usr/sbin/nginx' },
  { pkg: 'libnginx-mod-http-js', provides: '/usr/lib/nginx/modules/ngx_http_js_module.so' },
  { pkg: 'haproxy', provides: '/usr/sbin/haproxy' },
  { pkg: 'chromium', provides: '/usr/bin/chromium' },
  // actionlint runs it on the workflows' shell scripts (test/unit/release/workflow.test.ts).
  { pkg: 'shellcheck', provides: '/usr/bin/shellcheck' },
];

const log = (line: string) => process.stderr.write(`[system packages] ${line}\n`);

/**
 * What the node cluster (test/node/control.ts) runs besides what it builds: runc under
 * containerd, iptables for kube-proxy, socat for the API relay, busybox-static for test images
 * and DNS lookups, curl for requests from inside the node's network namespace, ipset for
 * kube-router's network policy controller (it runs the ipset command).
 */
export const NODE_PACKAGES: ReadonlyArray<{ pkg: string; provides: string }> = [
  { pkg: 'runc', provides: '/usr/sbin/runc' },
  { pkg: 'iptables', provides: '/usr/sbin/iptables' },
  { pkg: 'socat', provides: '/usr/bin/socat' },
  { pkg: 'busybox-static', provides: '/bin/busybox' },
  { pkg: 'iproute2', provides: '/usr/sbin/ip' },
  { pkg: 'curl', provides: '/usr/bin/curl' },
  { pkg: 'ipset', provides: '/usr/sbin/ipset' },
];

export function missingPackages(packages = SYSTEM_PACKAGES): string[] {
  return packages.filter((p) => !existsSync(p.provides)).map((p) => p.pkg);
}

export default function setup(): void {
  ensurePackages(SYSTEM_PACKAGES);
}

/** Installs the packages of `packages` that are missing (as root with apt-get), else fails with the command to run. */
export function ensurePackages(packages: ReadonlyArray<{ pkg: string; provides: string }>): void {
  const missing = missingPackages(packages);
  if (missing.length === 0) return;
  const command = `apt-get install -y --no-install-recommends ${missing.join(' ')}`;
  const root = process.getuid?.() === 0;
  if (!root || !existsSync('/usr/bin/apt-get')) {
    throw new Error(`these Debian packages are needed: run \`sudo ${command}\``);
  }
  log(`installing ${missing.join(', ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'], env });
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', ...missing], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env,
  });
  const still = missingPackages(packages);
  if (still.length > 0) throw new Error(`installing ${still.join(', ')} failed: run \`${command}\``);
}
