// `npm run test:node`, the last step of `npm test`: runs the `node` vitest project (arguments go
// to vitest) when the machine can run the node cluster (preflight.ts). When it cannot, it says
// why, loudly, and exits 0: the node tests need Linux, root, namespaces and cgroup v1
// (docs/development.md, "Tests"), and a developer's `npm test` without them still runs
// everything else. With AGENTCARD_NODE_TESTS=required the same case fails instead, for a
// machine that must run them.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '../controlplane/paths.ts';
import { nodeUnavailable } from './preflight.ts';

const why = nodeUnavailable();
if (why) {
  const required = process.env.AGENTCARD_NODE_TESTS === 'required';
  process.stderr.write(
    [
      '',
      `node project ${required ? 'FAILED' : 'SKIPPED'}: ${why}.`,
      'The node tests (test/e2e/) run Pods on a real node and need Linux, root, namespaces and cgroup v1;',
      'see "Tests" in docs/development.md. Nothing of them ran.',
      '',
    ].join('\n'),
  );
  process.exit(required ? 1 : 0);
}
const vitest = join(repoRoot, 'node_modules', 'vitest', 'vitest.mjs');
const run = spawnSync(process.execPath, [vitest, 'run', '--project', 'node', ...process.argv.slice(2)], {
  cwd: repoRoot,
  stdio: 'inherit',
});
process.exit(run.status ?? 1);
