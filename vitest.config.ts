import { defineConfig } from 'vitest/config';

// Three projects: `unit` (pure logic, no network beyond loopback peers the test starts itself),
// `integration` (talks to the real kube-apiserver that the global setup starts once per run) and
// `node` (a one-node cluster whose Pods really run, in namespaces of its own: test/node/).
// `npm test` runs `unit` and `integration` in one vitest run, then `npm run test:node`
// (test/node/run.ts), a run of `node` alone: its global setup and timeouts are its own, and it
// needs Linux, root, namespaces and cgroup v1. Where the machine has not those, test/node/run.ts
// says why and skips it (fails with AGENTCARD_NODE_TESTS=required); `vitest run --project node`
// there fails in the global setup with the same reason.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          // Installs the Debian packages the tests use as real components when missing.
          globalSetup: ['test/support/system-packages.ts'],
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          // Builds (first run on a machine only) and starts the local control plane once per run.
          globalSetup: ['test/support/system-packages.ts', 'test/support/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
      {
        test: {
          name: 'node',
          include: ['test/e2e/**/*.test.ts'],
          // Installs runc, iptables, socat and busybox-static, builds the node (first run on a
          // machine only) and starts the node cluster once per run.
          globalSetup: ['test/support/node-setup.ts'],
          testTimeout: 300_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
