// `node test/node/build-node.ts`: builds the test node's binaries into the machine cache
// (build.ts), and nothing else. `npm test` runs it in the background while the unit and
// integration tests run (test/support/prebuild.ts); the node project then finds them built.
import { ensureNodeBinaries } from './build.ts';

try {
  await ensureNodeBinaries((line) => process.stderr.write(`[node build] ${line}\n`));
} catch (err) {
  process.stderr.write(`[node build] ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
