// What the test run builds before its tests need it (only the first run on a machine builds;
// later runs find everything in the cache at once). The integration projects' global setup calls
// it after the control plane is up: the Go programs the unit and integration tests run
// (cert-manager's controllers, the a2a-go agent and client, the x5c verifier). Built there, before
// any test, because a cold build (cert-manager alone is about 12 CPU-minutes) would not fit the
// hook timeout of the first test that needs one. (The test node builds itself, in the node
// project's global setup, which `npm test` starts at the same time.)
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
