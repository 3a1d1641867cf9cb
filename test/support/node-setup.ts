// Global setup of the `node` vitest project: installs the Debian packages the node runs, builds
// the node (first run on a machine only) and starts the one-node cluster of test/node/control.ts
// once per run, or reuses one that `npm run cluster:up -- --node` left running. At the end it
// stops a cluster it started and fails the run if anything of it is left on the machine. Set
// AGENTCARD_KEEP_CLUSTER=1 to leave a started cluster running for debugging.
// It also assembles the project's images (test/node/product-images.ts: the operator image, nginx
// with njs; cached by their inputs) and imports them into the node, so a Pod can name them with
// imagePullPolicy IfNotPresent or Never.
import type { TestProject } from 'vitest/node';
import { nodeDown, nodeLeftovers, nodeUp, type NodeClusterState } from '../node/control.ts';
import { nodeUnavailable } from '../node/preflight.ts';
import { buildProductImages, importImages, type BuiltImage } from '../node/product-images.ts';
import { ensurePackages, NODE_PACKAGES } from './system-packages.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The running node cluster (admin kubeconfig, relay, namespaces' init). */
    nodeCluster: NodeClusterState;
    /** The project's images, imported into the node (the operator image first). */
    productImages: BuiltImage[];
  }
}

const log = (line: string) => process.stderr.write(`[node cluster] ${line}\n`);

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // `npm run test:node` skips the project with this reason; vitest run directly fails with it.
  const why = nodeUnavailable();
  if (why)
    throw new Error(`the node project cannot run on this machine: ${why} (docs/development.md, "Tests")`);
  ensurePackages(NODE_PACKAGES);
  const { started, state } = await nodeUp(log);
  if (!started) log(`reusing the running node cluster at ${state.server}`);
  project.provide('nodeCluster', state);
  const teardown = async () => {
    if (!started || process.env.AGENTCARD_KEEP_CLUSTER) return;
    const downAt = Date.now();
    await nodeDown(log);
    const left = nodeLeftovers(state, downAt);
    if (left.length > 0) throw new Error(`the node cluster left behind: ${left.join('; ')}`);
  };
  try {
    const images = await buildProductImages(log);
    await importImages(state, images);
    project.provide('productImages', images);
  } catch (err) {
    await teardown();
    throw err;
  }
  return teardown;
}
