// What the test run builds before its tests need it (only the first run on a machine builds;
// later runs find everything in the cache at once). The integration project's global setup calls
// both, after the control plane is up:
//
// - `buildGoPrograms`: the Go programs the unit and integration tests run (cert-manager's
//   controllers, the a2a-go agent and client, the x5c verifier). Built here, before any test,
//   because a cold build (cert-manager alone is about 12 CPU-minutes) would not fit the hook
//   timeout of the first test that needs one.
// - `buildNodeInBackground`: the test node's binaries (test/node/build.ts), for the `node`
//   project that `npm test` runs after `unit` and `integration`. At the lowest CPU priority, so it
//   takes only the CPU the tests leave idle; the global setup's teardown waits for it. Started
//   only by `npm test` (a run of a few test files should not build a node nobody asked for) and
//   only where the node project can run.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { nodeBinariesCached } from '../node/build.ts';
import { nodeUnavailable } from '../node/preflight.ts';
import { certManagerBinary } from './cert-manager.ts';
import { goAgent } from './go-agent.ts';
import { goClient } from './go-client.ts';
import { goVerifier } from './go-verifier.ts';

type Log = (line: string) => void;

/** Builds (first run only) every Go program the unit and integration tests start, two at a time. */
export async function buildGoPrograms(log: Log): Promise<void> {
  const started = Date.now();
  await Promise.all([certManagerBinary(), goAgent()]);
  await Promise.all([goClient(), goVerifier()]);
  const seconds = (Date.now() - started) / 1000;
  if (seconds > 5) log(`built the Go test programs in ${seconds.toFixed(0)} s`);
}

/** Whether this run should build the node in the background: `npm test`, on a machine that runs the node project. */
export function shouldBuildNodeEarly(env: NodeJS.ProcessEnv = process.env): boolean {
  // npm names the script it runs; `npm test` runs its whole chain under `test`.
  return env.npm_lifecycle_event === 'test' && !nodeUnavailable() && !nodeBinariesCached();
}

/**
 * Starts `test/node/build-node.ts` at the lowest CPU priority and returns a promise of its end
 * (never rejected: a failed build is reported here and again, with its error, by the node
 * project's own build).
 */
export function buildNodeInBackground(log: Log): Promise<void> {
  const script = join(import.meta.dirname, '..', 'node', 'build-node.ts');
  log('building the node in the background, at the lowest CPU priority, while the tests run');
  const started = Date.now();
  const child = spawn('nice', ['-n', '19', process.execPath, script], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return new Promise((resolve) => {
    child.on('error', (err) => {
      log(`could not start the node build: ${err.message}`);
      resolve();
    });
    child.on('close', (code) => {
      const seconds = ((Date.now() - started) / 1000).toFixed(0);
      log(
        code === 0
          ? `node build done after ${seconds} s`
          : `the node build failed (exit code ${code}) after ${seconds} s; the node project builds again`,
      );
      resolve();
    });
  });
}
