/**
 * `npm run demo` on the node cluster (test/node/control.ts), where Pods really run: the chart
 * installed with the operator image assembled from the Dockerfile, examples/ applied, the demo
 * agent's Pod with its injected sidecar (nginx mode), the AgentCards probed by the operator Pod through
 * the cluster's DNS and Services, the card fetched through the agent's Service and verified.
 *
 * The node needs root (namespaces, mounts, cgroups) and the node's build (built once per
 * machine, or buildable with Go); nodeDemoUnavailable() says why not, and the demo then runs as
 * local processes (demo.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { nodeBuildDir, NODE_BINARIES } from '../test/node/build.ts';
import {
  execInNode,
  kubectl as nodeKubectl,
  nodeDown,
  nodeKubeconfig,
  nodeUp,
  type NodeClusterState,
} from '../test/node/control.ts';
import { nodeUnavailable } from '../test/node/preflight.ts';
import { buildProductImages, digestReference, importImages } from '../test/node/product-images.ts';
import { ensurePackages, NODE_PACKAGES } from '../test/support/system-packages.ts';
import { runTool } from '../test/support/tools.ts';
import type { DemoAgentUrls } from '../operator/demo/echo-agent.ts';
import { prepareExamples } from './demo-examples.ts';

/** Steps of the node demo (demo.ts numbers them). */
export const NODE_STEPS = 8;
const RELEASE = 'agentcard';
const RELEASE_NAMESPACE = 'agentcard-system';

/** Why this machine cannot run the node demo, or undefined when it can. */
export function nodeDemoUnavailable(): string | undefined {
  const why = nodeUnavailable();
  if (why) return why;
  const bin = join(nodeBuildDir().dir, 'bin');
  const built = NODE_BINARIES.every((b) => existsSync(join(bin, b)));
  if (!built && spawnSync('go', ['version'], { stdio: 'ignore' }).status !== 0)
    return 'the node is not built and there is no Go to build it';
  return undefined;
}

export interface NodeDemoContext {
  namespace: string;
  repoRoot: string;
  say: (line: string) => void;
  step: <T>(title: string, run: () => Promise<T>, done: (value: T) => string) => Promise<T>;
  cleanups: { what: string; run: () => Promise<void> }[];
  newSigningJwk: (kid: string) => Promise<string>;
  /** `agentcard ARGS` of this checkout, with `input` on stdin. */
  agentcard: (
    args: string[],
    input: string,
  ) => Promise<{ code: number | null; stdout: string; stderr: string }>;
  logFile: (name: string) => string;
}

/** Runs the node demo's steps; returns the lines to print at the end. */
export async function runNodeDemo(ctx: NodeDemoContext): Promise<string[]> {
  const { namespace, step } = ctx;
  const log = (line: string) => ctx.say(`      ${line}`);
  let state!: NodeClusterState;
  const kubectl = (args: string[], input?: string) => nodeKubectl(state, args, input);
  const helm = async (args: string[]) => {
    const r = await runTool('helm', args, { kubeconfig: nodeKubeconfig, timeoutMs: 600_000 });
    if (r.code !== 0)
      throw new Error(`helm ${args[0]}: ${(r.stderr || r.stdout).trim().split('\n').slice(-3).join(' / ')}`);
    return r.stdout;
  };

  await step(
    'Start the node cluster (control plane, containerd, kubelet, kube-proxy, CoreDNS)',
    async () => {
      ensurePackages(NODE_PACKAGES);
      const r = await nodeUp(log);
      state = r.state;
      if (r.started) ctx.cleanups.push({ what: 'stop the node cluster', run: () => nodeDown(() => {}) });
      return r;
    },
    (r) =>
      `${r.state.server} (${r.started ? 'started' : 'already running'}), kubeconfig .node-cluster/kubeconfig`,
  );

  const images = await step(
    'Assemble the operator and nginx images from the Dockerfile and Debian packages, import them',
    async () => {
      const built = await buildProductImages(log);
      await importImages(state, built);
      return built;
    },
    (built) => built.map((i) => i.name).join(', '),
  );

  await step(
    `Install the chart (release ${RELEASE} in ${RELEASE_NAMESPACE}, the webhook's self-signed certificate)`,
    async () => {
      await helm([
        'upgrade',
        '--install',
        RELEASE,
        join(ctx.repoRoot, 'helm', 'agentcard-operator'),
        '--namespace',
        RELEASE_NAMESPACE,
        '--create-namespace',
        // One node, one replica; the default image reference is the one assembled here. The
        // sidecar in the chart's default nginx mode, with the nginx image assembled here pinned
        // by digest as the chart requires (imported under that digest: test/node/images.ts).
        '--set',
        'replicas=1',
        '--set',
        `sidecar.nginx.image=${digestReference(images[1]!)}`,
        '--wait',
        '--timeout',
        '5m',
      ]);
      ctx.cleanups.push({
        what: `uninstall the release ${RELEASE}`,
        run: async () =>
          void (await helm(['uninstall', RELEASE, '--namespace', RELEASE_NAMESPACE, '--wait'])),
      });
      // Ready operator Pods are not yet a Service the API server reaches (the EndpointSlice
      // controller and kube-proxy follow on their own); a Pod created before that would start
      // without the sidecar (failurePolicy Ignore). docs/install.md waits the same way.
      await waitForInjection(kubectl);
    },
    () => `deployed with image ${images[0]!.name}, sidecar.server=nginx (${images[1]!.name})`,
  );

  await step(
    `Create namespace ${namespace}, generate signing keys and apply examples/ (the demo agent's Deployment too)`,
    async () => {
      await kubectl(['create', 'namespace', namespace]);
      ctx.cleanups.push({
        what: `delete namespace ${namespace}`,
        run: async () => void (await kubectl(['delete', 'namespace', namespace, '--wait=false'])),
      });
      // The examples' interfaces name demo-agent in `default`; here it runs in the demo's namespace.
      const host = `http://demo-agent.${namespace}.svc.cluster.local`;
      const agent: DemoAgentUrls = {
        jsonrpc: `${host}:8080/a2a/jsonrpc`,
        rest: `${host}:8080/a2a/rest`,
        grpc: `${host}:8081`,
      };
      const prepared = await prepareExamples(join(ctx.repoRoot, 'examples'), {
        agent,
        newSigningJwk: ctx.newSigningJwk,
      });
      await kubectl(['apply', '-n', namespace, '-f', '-'], prepared.manifests);
      return prepared;
    },
    (e) => `${e.cards.length} AgentCard(s) (${e.cards.join(', ')})`,
  );

  const agentPod = await step(
    'Wait for the demo agent Pod (with the sidecar the webhook injected) to be Ready',
    async () => {
      await kubectl(['-n', namespace, 'rollout', 'status', 'deployment/demo-agent', '--timeout=240s']);
      const pods = JSON.parse(
        await kubectl([
          '-n',
          namespace,
          'get',
          'pods',
          '-l',
          'app.kubernetes.io/name=demo-agent',
          '-o',
          'json',
        ]),
      ) as {
        items: {
          metadata: { name: string; annotations?: Record<string, string> };
          spec: { initContainers?: { name: string }[]; containers: { name: string }[] };
        }[];
      };
      const pod = pods.items.find((p) =>
        [...(p.spec.initContainers ?? []), ...p.spec.containers].some((c) => c.name === 'agentcard-sidecar'),
      );
      if (!pod) throw new Error('the demo agent Pod has no agentcard-sidecar (did the webhook run?)');
      return { name: pod.metadata.name, card: pod.metadata.annotations?.['agentcard.dev/inject'] ?? '' };
    },
    (p) => `Pod ${p.name} Ready, the agent and its sidecar (card of ${p.card}) running`,
  );

  await step(
    'Wait until every AgentCard is Ready (probed by the operator Pod through the Services)',
    async () => {
      try {
        await kubectl([
          'wait',
          '--for=condition=Ready',
          'agentcards',
          '--all',
          '-n',
          namespace,
          '--timeout=180s',
        ]);
      } catch (err) {
        const table = await kubectl(['get', 'agentcards', '-n', namespace, '-o', 'wide']).catch(() => '');
        throw new Error(`${err instanceof Error ? err.message : String(err)}\n${table}`, { cause: err });
      }
    },
    () => 'all Ready',
  );

  const clusterIP = (
    await kubectl(['-n', namespace, 'get', 'service', 'demo-agent', '-o', 'jsonpath={.spec.clusterIP}'])
  ).trim();
  const cardUrl = `http://${clusterIP}:8095/.well-known/agent-card.json`;
  const verification = await step(
    `Fetch the card from the sidecar through the Service and verify it (agentcard verify)`,
    async () => {
      const get = (url: string) => execInNode(state, 'curl', ['-sS', '-f', '-m', '10', url]);
      const [card, jwks] = [await get(cardUrl), await get(cardUrl.replace('agent-card.json', 'jwks.json'))];
      const jwksFile = ctx.logFile('jwks.json');
      writeFileSync(jwksFile, jwks);
      const r = await ctx.agentcard(['verify', '-f', '-', '--jwks', jwksFile], card);
      if (r.code !== 0) throw new Error(`agentcard verify: ${(r.stdout + r.stderr).trim()}`);
      return r.stdout.trim();
    },
    (out) => out.split('\n')[0]!,
  );

  const pods = await step(
    'List the Pods the node runs',
    () => kubectl(['get', 'pods', '-A', '-o', 'wide']),
    (out) => `${out.trim().split('\n').length - 1} Pod(s)`,
  );
  const table = await kubectl(['get', 'agentcards', '-n', namespace, '-o', 'wide']);
  return [
    '',
    '$ kubectl get pods -A -o wide',
    pods.trimEnd(),
    '',
    `$ kubectl get agentcards -n ${namespace} -o wide`,
    table.trimEnd(),
    '',
    `Served card:   ${cardUrl} (the Service demo-agent, port agent-card; card of ${agentPod.card}, reachable inside the node)`,
    `Verification:  ${verification}`,
    '',
    `kubectl:       KUBECONFIG=${nodeKubeconfig} kubectl get pods -A`,
  ];
}

/**
 * Waits until a dry-run Pod that asks for the sidecar comes back labelled by the webhook: the
 * API server reaches it through its Service, with the caBundle the operator set.
 */
async function waitForInjection(kubectl: (args: string[]) => Promise<string>): Promise<void> {
  const deadline = Date.now() + 120_000;
  let last: string;
  for (;;) {
    try {
      const labels = await kubectl([
        'run',
        'webhook-check',
        '--image=webhook-check',
        '--restart=Never',
        '--annotations=agentcard.dev/inject=webhook-check',
        '--dry-run=server',
        '-o',
        'jsonpath={.metadata.labels}',
      ]);
      if (labels.includes('agentcard.dev/agent-card')) return;
      last = 'the Pod came back without the sidecar';
    } catch (err) {
      last = (err as Error).message;
    }
    if (Date.now() > deadline) throw new Error(`the webhook did not inject within 120 s: ${last}`);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}
