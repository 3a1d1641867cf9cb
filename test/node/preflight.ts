// Whether this machine can run the node cluster at all (test/node/control.ts), before anything is
// built or started: Linux, root, the namespaces the node lives in, and cgroup v1 (the only
// hierarchy the node's kubelet and runc are set up for; a cgroup v2 host is not supported yet).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Why this machine cannot run the node cluster, or undefined when it can. */
export function nodeUnavailable(): string | undefined {
  if (process.platform !== 'linux') return `not Linux (${process.platform})`;
  if (process.getuid?.() !== 0) {
    return `not root (uid ${process.getuid?.()}): the node makes namespaces, mounts and cgroups`;
  }
  for (const tool of ['unshare', 'nsenter']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status !== 0)
      return `no ${tool} on PATH (util-linux)`;
  }
  // What the node's init does first: new network, mount and PID namespaces (a container without
  // CAP_SYS_ADMIN, e.g. not --privileged, cannot).
  const ns = spawnSync('unshare', ['--net', '--mount', '--pid', '--fork', 'true'], { encoding: 'utf8' });
  if (ns.status !== 0) {
    return `cannot create network, mount and PID namespaces: unshare: ${(ns.stderr || ns.error?.message || '').trim()}`;
  }
  if (!existsSync('/sys/fs/cgroup/memory')) {
    return 'no cgroup v1 memory hierarchy at /sys/fs/cgroup/memory (the node supports cgroup v1 hosts only)';
  }
  return undefined;
}
