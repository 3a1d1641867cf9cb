// Global setup of the `integration` vitest project: starts the local control plane once per run
// (or reuses one that `npm run cluster:up` left running) and stops it at the end only if it
// started it. Set AGENTCARD_KEEP_CLUSTER=1 to leave a started control plane running for debugging.
// It also builds, on a machine's first run, what the tests need later (prebuild.ts).
import type { TestProject } from 'vitest/node';
import { down, up } from '../controlplane/control.ts';
import { kubeconfigFile } from '../controlplane/paths.ts';
import { buildGoPrograms, buildNodeInBackground, shouldBuildNodeEarly } from './prebuild.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Path of the admin kubeconfig of the control plane the integration tests run against. */
    kubeconfig: string;
  }
}

const log = (line: string) => process.stderr.write(`[control plane] ${line}\n`);

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const { started, state } = await up(log);
  if (!started) log(`reusing the running control plane at ${state.server}`);
  project.provide('kubeconfig', kubeconfigFile);
  // First run on a machine only: see prebuild.ts. The node's build shares Go's build cache with
  // the control plane's, so it starts after the control plane is built.
  const nodeBuild = shouldBuildNodeEarly() ? buildNodeInBackground(log) : undefined;
  const teardown = async () => {
    if (started && !process.env.AGENTCARD_KEEP_CLUSTER) await down(log);
    await nodeBuild; // `npm test` runs the node project next: it needs the build, finished
  };
  try {
    await buildGoPrograms(log);
  } catch (err) {
    await teardown();
    throw err;
  }
  return teardown;
}
