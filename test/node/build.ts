// Builds the programs of the test node from the Go module proxy into the machine cache, as
// test/controlplane/build.ts does for the control plane: the kubelet, kube-proxy and
// kube-scheduler of the same Kubernetes release (this folder's go.mod), containerd and the CNI
// plugins at pinned releases, each with its own upstream go.mod and go.sum (`go install
// module@version` builds exactly what the project released; the checksum database verifies every
// module), and CoreDNS v1.15.0 with only the plugins the node's Corefile uses (`coredns/`, its own
// small module). runc is Debian's (see system-packages.ts).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildKey, kubernetesVersion, versionLdflags } from '../controlplane/build.ts';
import { withLock } from '../controlplane/lock.ts';
import { cacheRoot } from '../controlplane/paths.ts';

/** This Go module's folder (`test/node`). */
export const nodeModuleDir = dirname(fileURLToPath(import.meta.url));

/** Built from this folder's module: Kubernetes' node components and two small helpers. */
const LOCAL_PACKAGES = [
  './cmd/node-pki',
  './cmd/pause',
  'k8s.io/kubernetes/cmd/kubelet',
  'k8s.io/kubernetes/cmd/kube-proxy',
  'k8s.io/kubernetes/cmd/kube-scheduler',
];

/**
 * Upstream releases built with their own go.mod. containerd leaves out the snapshotters that
 * need cgo or a kernel feature the node does not use (it uses overlayfs).
 */
export const UPSTREAM: ReadonlyArray<{ packages: string[]; version: string; tags?: string }> = [
  {
    packages: [
      'github.com/containerd/containerd/v2/cmd/containerd',
      'github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2',
      'github.com/containerd/containerd/v2/cmd/ctr',
    ],
    version: 'v2.4.2',
    tags: 'no_btrfs no_devmapper no_zfs',
  },
  {
    packages: [
      'github.com/containernetworking/plugins/plugins/main/bridge',
      'github.com/containernetworking/plugins/plugins/main/loopback',
      'github.com/containernetworking/plugins/plugins/ipam/host-local',
      'github.com/containernetworking/plugins/plugins/meta/portmap',
    ],
    version: 'v1.10.0',
  },
  // Its network policy controller only (iptables and ipset), the node's NetworkPolicy
  // implementation; why this release is acceptable here: docs/development.md, "NetworkPolicies".
  {
    packages: ['github.com/cloudnativelabs/kube-router/v2/cmd/kube-router'],
    version: 'v2.1.0',
  },
];

/**
 * CoreDNS with only the plugins of the node's Corefile (see coredns/main.go): the release's every
 * plugin (cloud DNS SDKs, etcd, tracing...) was the largest part of a cold node build. Its own
 * module, since CoreDNS pins other client-go and gRPC versions than this folder's Kubernetes.
 */
export const coreDnsModuleDir = join(nodeModuleDir, 'coredns');
const COREDNS_SOURCES = ['go.mod', 'go.sum', 'main.go'];

export const NODE_BINARIES = [
  'node-pki',
  'pause',
  'kubelet',
  'kube-proxy',
  'kube-scheduler',
  'containerd',
  'containerd-shim-runc-v2',
  'ctr',
  'bridge',
  'loopback',
  'host-local',
  'portmap',
  'coredns',
  'kube-router',
] as const;

function moduleInputs(): { name: string; content: Buffer }[] {
  const files = ['go.mod', 'go.sum'];
  for (const entry of readdirSync(join(nodeModuleDir, 'cmd'), { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) files.push(relative(nodeModuleDir, join(entry.parentPath, entry.name)));
  }
  files.push(...COREDNS_SOURCES.map((f) => relative(nodeModuleDir, join(coreDnsModuleDir, f))));
  return files.map((name) => ({ name, content: readFileSync(join(nodeModuleDir, name)) }));
}

/** The cache folder of this exact build: `<cache>/node-<k8s version>-<key>`. */
export function nodeBuildDir(): { dir: string; version: string; ldflags: string } {
  const version = kubernetesVersion(readFileSync(join(nodeModuleDir, 'go.mod'), 'utf8'));
  const ldflags = `-s -w ${versionLdflags(version)}`;
  const upstream = UPSTREAM.map((u) => `${u.packages.join(' ')}@${u.version} tags=${u.tags ?? ''}`);
  const key = buildKey(moduleInputs(), `${LOCAL_PACKAGES.join(' ')} ${ldflags} ${upstream.join(' ')}`);
  return { dir: join(cacheRoot(), `node-${version}-${key}`), version, ldflags };
}

/**
 * Returns the folder holding the node's binaries, building them first if this version is not in
 * the cache yet (about 18 CPU-minutes, 9 minutes of 2 idle cores, after the control plane's build,
 * kube-router's 6 CPU-minutes included; later calls return at once). Concurrent callers wait for
 * one build.
 */
export async function ensureNodeBinaries(log: (line: string) => void): Promise<string> {
  const { dir, version, ldflags } = nodeBuildDir();
  const bin = join(dir, 'bin');
  if (complete(bin)) return bin;
  await withLock(
    `${dir}.lock`,
    async () => {
      if (complete(bin)) return;
      log(
        `building the node (kubelet ${version}, containerd, CNI plugins, CoreDNS, kube-router) into ${bin}`,
      );
      log('(only the first run on a machine builds: about 9 minutes on 2 idle cores)');
      const started = Date.now();
      const tmp = join(dir, `bin.tmp-${process.pid}`);
      rmSync(tmp, { recursive: true, force: true });
      mkdirSync(tmp, { recursive: true });
      // The same settings as the control plane's build, so Go's build cache shares their packages.
      await run('go', ['build', '-ldflags', ldflags, '-o', `${tmp}/`, ...LOCAL_PACKAGES], nodeModuleDir, {
        GOFLAGS: '-mod=readonly -buildvcs=false',
      });
      for (const u of UPSTREAM) {
        const args = ['install', '-ldflags', '-s -w'];
        if (u.tags) args.push('-tags', u.tags);
        args.push(...u.packages.map((p) => `${p}@${u.version}`));
        await run('go', args, nodeModuleDir, { GOFLAGS: '-buildvcs=false', GOBIN: tmp, CGO_ENABLED: '0' });
      }
      // Static: CoreDNS runs inside a container whose image holds nothing else.
      await run('go', ['build', '-ldflags', '-s -w', '-o', join(tmp, 'coredns'), '.'], coreDnsModuleDir, {
        GOFLAGS: '-mod=readonly -buildvcs=false',
        CGO_ENABLED: '0',
      });
      rmSync(bin, { recursive: true, force: true });
      renameSync(tmp, bin);
      const seconds = Math.round((Date.now() - started) / 1000);
      writeFileSync(
        join(dir, 'build.json'),
        JSON.stringify({ version, seconds, builtAt: new Date() }) + '\n',
      );
      log(`built in ${seconds} s`);
    },
    () => log(`waiting for another process that is building ${bin}`),
  );
  return bin;
}

/** Whether this exact build of the node is in the cache already. */
export function nodeBinariesCached(): boolean {
  return complete(join(nodeBuildDir().dir, 'bin'));
}

function complete(bin: string): boolean {
  return NODE_BINARIES.every((name) => existsSync(join(bin, name)));
}

function run(cmd: string, args: string[], cwd: string, env: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`${cmd} ${args.slice(0, 2).join(' ')} failed with exit code ${code}`)),
    );
  });
}
