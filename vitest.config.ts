import { join } from 'node:path';
import { configDefaults, defineConfig } from 'vitest/config';

// Every Node.js process the tests start (the `agentcard` command, operators, sidecars, card
// servers: hundreds per run) keeps V8's compiled code of the TypeScript sources in this folder and
// reuses it, instead of parsing and compiling the same modules again at each start: about a third
// less CPU for each `agentcard` start (0.66 s to 0.43 s of user time for `validate --help` on the
// 2-core CI machine). Node.js checks every entry against the source it was made from, so an edited
// file is compiled again. It lives in node_modules, which a fresh clone's `npm ci` makes anew.
process.env.NODE_COMPILE_CACHE ??= join(import.meta.dirname, 'node_modules', '.cache', 'node-compile-cache');

// The integration files that must have the shared control plane to themselves: they run one at a
// time, after the others (`integration-serial`). Every other integration file runs beside others
// (`integration`), so it must touch only objects of its own: namespaces from createTestNamespace /
// useTestNamespace, an operator with --namespace for each of them, cluster-scoped objects under
// names of its own, and no counter of the whole API server. docs/development.md ("Tests") has the
// rule for a new file.
const SERIAL_INTEGRATION = [
  // Count writes across the whole API server (apiserver_request_total: controllerWrites(),
  // controllerWriteOutcomes()): any other file's operator would add to the count.
  'adopt-restart',
  'adopt-source',
  'audiences',
  'controller-hostile-input',
  'controller-writes',
  // Compact the shared etcd (compactEtcd()): every watch resumed from before it gets 410 Gone.
  'controller-informer',
  'informer-handlers',
  'controlplane',
  // Change CRDs every file uses or asserts absent: helm takes over and edits the AgentCard CRD;
  // policy-admission deletes the policy CRDs it applied; example-httproute installs the HTTPRoute
  // CRD that examples.test.ts expects missing.
  'helm-crds',
  'policy-admission',
  'example-httproute',
  // Run an operator that watches every namespace (it would reconcile the other files' cards).
  'helm-rbac',
  'operator-local-run',
].map((name) => `test/integration/${name}.test.ts`);

// Files that could run beside others but run in the second vitest run instead, one at a time among
// the serial files: `npm test` runs that second run beside the node project, which takes longer
// than the serial files alone (533 to 565 s against 456 to 494 s in the fresh-clone runs of
// 2026-12-06), so files that fit that gap leave the first run, where the cores are saturated, and
// cost the whole run nothing there. Chosen for the CPU they take against their time (bundling the
// package, packing and installing it twice): about 40 s of file time together.
const LATE_INTEGRATION = ['prod-build', 'cli-package'].map((name) => `test/integration/${name}.test.ts`);

// Two families run in `integration`, beside any other file but one at a time within the family
// (useClusterLock(), test/support/cluster-lock.ts): they create cluster-scoped ClusterAgentCatalogs
// or ClusterAgentPolicies, which every operator started with --cluster-catalogs or
// --cluster-policies reconciles, whatever its --namespace.
// - 'cluster-catalogs': catalogs, catalog-server, catalog-trust-certificates, namespace-cache, demo;
// - 'cluster-policies': policy-controller, policy-enforce, policy-identity, helm-rbac-policies.

/**
 * `unit` turns off vitest's isolation (a fresh worker process per test file, the default): a
 * worker runs file after file, so the modules every unit file imports (zod, jose, the operator's
 * own) load once per worker rather than once per file. The unit files took 0.64x the CPU (239 s
 * instead of 372) and 0.65x the time, one run after the other. It asks of every unit file what the
 * suite already keeps: no state left behind in a module or in `process` (a server closed, fake
 * timers restored, no environment variable set), since the next file of the worker sees it.
 * https://vitest.dev/guide/improving-performance.html#test-isolation
 * The integration projects keep a process per file: without it, a fresh-clone run failed on an
 * uncaught "socket idle timeout" of an HTTP/2 connection that an earlier file of the same worker
 * had left open (undici's idle timer on a session nothing used any more).
 */
const UNIT_ISOLATE = false;

/** Integration files in flight at once on the shared control plane (the serial ones run after them, alone). */
const INTEGRATION_WORKERS = 3;

// Three kinds of test: `unit` (pure logic, no network beyond loopback peers the test starts
// itself), `integration` (talks to the real kube-apiserver that the global setup starts once per
// run; two vitest projects, below) and `node` (a one-node cluster whose Pods really run, in
// namespaces of its own: test/node/).
// `npm test` (test/run-suite.ts) runs `unit` and `integration` in one vitest run, then
// `integration-serial` in another while `npm run test:node` (test/node/run.ts) runs `node` alone
// beside it: its global setup and timeouts are its own, and it needs Linux, root, namespaces and
// cgroup v1. Where the machine has not those, test/node/run.ts says why and skips it (fails with
// AGENTCARD_NODE_TESTS=required); `vitest run --project node` there fails in the global setup with
// the same reason.
//
// Within one run of several projects (`npx vitest run --project 'integration*'`), the groups go
// one after the other (sequence.groupOrder): `unit` and `integration` together
// (INTEGRATION_WORKERS files at once), then `integration-serial` (one at a time).
// Both integration projects name the same global setup: in one run the first starts the control
// plane, the second finds it running and reuses it, and the one that started it stops it at the
// end of the run.
const integration = {
  // Builds (first run on a machine only) and starts the local control plane once per run; stages
  // the `agentcard` package the tests run (test/support/test-package.ts).
  globalSetup: [
    'test/support/system-packages.ts',
    'test/support/test-package.ts',
    'test/support/global-setup.ts',
  ],
  testTimeout: 120_000,
  hookTimeout: 300_000,
};

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          // Installs the Debian packages the tests use as real components when missing, and stages
          // the `agentcard` package the tests run (test/support/test-package.ts).
          globalSetup: ['test/support/system-packages.ts', 'test/support/test-package.ts'],
          testTimeout: 30_000,
          isolate: UNIT_ISOLATE,
          // In the same group as `integration`, sharing its workers (vitest gives a group one
          // worker count): the integration files mostly wait on the control plane, while the unit
          // files keep the cores busy. The serial integration files run after both, alone.
          maxWorkers: INTEGRATION_WORKERS,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          ...integration,
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...SERIAL_INTEGRATION, ...LATE_INTEGRATION],
          maxWorkers: INTEGRATION_WORKERS,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          ...integration,
          name: 'integration-serial',
          include: [...SERIAL_INTEGRATION, ...LATE_INTEGRATION],
          fileParallelism: false,
          sequence: { groupOrder: 2 },
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
