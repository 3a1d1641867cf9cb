// `npm run cluster:up` / `npm run cluster:down` (and `status`): the local Kubernetes control
// plane of the test suite, for people and scripts. The test suite's global setup uses the same
// functions. With `--node` (`npm run cluster:up -- --node`), the one-node cluster whose Pods
// really run (test/node/control.ts) instead.
import { relative } from 'node:path';
import { down, isReady, readState, up } from './control.ts';
import { clusterDir, kubeconfigFile } from './paths.ts';
import {
  isNodeClusterReady,
  nodeClusterDir,
  nodeDown,
  nodeKubeconfig,
  nodeUp,
  readNodeState,
} from '../node/control.ts';

const log = (line: string) => process.stderr.write(`${line}\n`);

async function node(command: string | undefined): Promise<number> {
  const rel = (path: string) => relative(process.cwd(), path) || '.';
  switch (command) {
    case 'up': {
      const { started, state } = await nodeUp(log);
      if (!started) log(`node cluster already running: ${state.server}`);
      log(`kubeconfig: ${rel(nodeKubeconfig)}; logs in ${rel(nodeClusterDir)}/`);
      log(`use it with: export KUBECONFIG="$PWD/${rel(nodeKubeconfig)}" PATH="${state.toolsDir}:$PATH"`);
      return 0;
    }
    case 'down':
      await nodeDown(log);
      return 0;
    case 'status': {
      const ready = await isNodeClusterReady();
      log(ready ? `running: ${readNodeState()!.server}` : 'not running');
      return ready ? 0 : 1;
    }
    default:
      log('usage: cluster.ts up|down|status [--node]');
      return 2;
  }
}

async function main(command: string | undefined): Promise<number> {
  if (process.argv.includes('--node')) return node(command);
  switch (command) {
    case 'up': {
      const { started, state } = await up(log);
      if (!started) log(`control plane already running: ${state.server}`);
      const rel = (path: string) => relative(process.cwd(), path) || '.';
      log(`kubeconfig: ${rel(kubeconfigFile)}; logs in ${rel(clusterDir)}/`);
      log(
        `use it with: export KUBECONFIG="$PWD/${rel(kubeconfigFile)}" PATH="$PWD/${rel(clusterDir)}/bin:$PATH"`,
      );
      return 0;
    }
    case 'down':
      await down(log);
      return 0;
    case 'status': {
      const state = readState();
      const ready = await isReady(state);
      log(ready ? `running: ${state!.server}` : 'not running');
      return ready ? 0 : 1;
    }
    default:
      log('usage: cluster.ts up|down|status');
      return 2;
  }
}

main(process.argv[2]).then(
  (code) => process.exit(code),
  (err: unknown) => {
    log(`cluster: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
