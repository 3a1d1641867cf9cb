/**
 * A callers rule enforced by the network, on the real node of test/node/: kube-router's network
 * policy controller (iptables and ipset) runs next to kube-proxy and enforces NetworkPolicies
 * on the Pods of the CNI bridge. The chart is installed with policies and their NetworkPolicies
 * on (`policies.networkPolicies.enabled`), and three Pods run the
 * demo agent (a real @a2a-js/sdk server, `agentcard demo-agent`) from the operator image:
 * payments and billing, each with the injected sidecar serving its AgentCard, and a third Pod
 * that is no agent at all. A ClusterAgentPolicy in Enforce mode says that only billing may call
 * payments; the operator generates the payments agent's NetworkPolicy from it. Checked from
 * inside the Pods, where the traffic is filtered:
 * - before the policy, every Pod reaches the payments agent's JSON-RPC port (so a later refusal
 *   is the policy's, not the network's);
 * - with it, billing's A2A call (SendMessage) is answered, the other Pod's connection is refused
 *   (kube-router rejects what no policy admits);
 * - both still fetch the payments card from the sidecar's port, discovery being public;
 * - the operator's probes still reach the agent: the AgentCard stays Ready.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { toolPath } from '../controlplane/tools.ts';
import { kubectl, nodeKubeconfig } from '../node/control.ts';
import { waitForService } from '../node/services.ts';
import { AGENT_LABEL } from '../../operator/api/names.ts';
import { repoRoot } from '../support/paths.ts';
import { productImages, type ProductImages } from '../support/product-images.ts';
import { CHART_CRD_NAMES } from '../../build/chart-crds.ts';

const state = inject('nodeCluster');
const k = (...args: string[]) => kubectl(state, args);
const apply = (doc: object) => kubectl(state, ['apply', '-f', '-'], JSON.stringify(doc));

const RELEASE = 'agentcard-np';
const opNs = `agentcard-np-${process.pid}`;
const ns = `payments-${process.pid}`;
const POLICY = `payments-callers-${process.pid}`;
const A2A_PORT = 8080;
const CARD_PORT = 8095;

let images: ProductImages;

const figure = (line: string) => process.stderr.write(`[network policy] ${line}\n`);

function helm(args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(
      toolPath('helm'),
      [`--kubeconfig=${nodeKubeconfig}`, ...args],
      { timeout: 300_000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) =>
        err ? reject(new Error(`helm ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
    ),
  );
}

async function waitFor<T>(what: string, timeoutMs: number, get: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await get();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    await sleep(500);
  }
  throw new Error(
    `timed out after ${timeoutMs / 1000} s waiting for ${what}${last ? `: ${String(last)}` : ''}`,
  );
}

type Condition = { type: string; status: string; reason?: string; lastTransitionTime?: string };
async function readyCondition(card: string): Promise<Condition | undefined> {
  const out = await k('-n', ns, 'get', 'agentcard', card, '-o', 'jsonpath={.status.conditions}');
  return out.trim() ? (JSON.parse(out) as Condition[]).find((c) => c.type === 'Ready') : undefined;
}

/** An AgentCard for the demo agent of the Deployment `name`, its JSON-RPC interface behind the Service `name`. */
function agentCard(name: string): object {
  return {
    apiVersion: 'agentcard.dev/v1alpha1',
    kind: 'AgentCard',
    metadata: { name, namespace: ns },
    spec: {
      card: {
        name: `${name} agent`,
        description: `The ${name} agent of the network policy test.`,
        version: '1.0.0',
        supportedInterfaces: [
          {
            url: `http://${name}.${ns}.svc.cluster.local:${A2A_PORT}/a2a/jsonrpc`,
            protocolBinding: 'JSONRPC',
            protocolVersion: '1.0',
          },
        ],
        capabilities: { streaming: false },
        defaultInputModes: ['text/plain'],
        defaultOutputModes: ['text/plain'],
        skills: [{ id: 'echo', name: 'Echo', description: 'Echoes the message.', tags: ['echo'] }],
      },
      // Probes every 10 s, so a probe the network blocked would show within the test.
      probe: { interval: '10s' },
    },
  };
}

/**
 * The demo agent from the operator image as a Deployment `name`, with a Service for its A2A port
 * and the sidecar's card port. `inject` names the AgentCard the webhook's sidecar serves; without
 * it the Pod is no agent of the operator's (no sidecar, no label).
 */
function demoAgent(name: string, inject?: string): object[] {
  const labels = { app: name };
  return [
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: ns, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: {
            labels,
            annotations: inject ? { 'agentcard.dev/inject': inject } : {},
          },
          spec: {
            automountServiceAccountToken: false,
            containers: [
              {
                name: 'agent',
                image: images.operator,
                imagePullPolicy: 'Never',
                args: ['demo-agent', `--port=${A2A_PORT}`, '--grpc-port=8081'],
                ports: [{ name: 'a2a', containerPort: A2A_PORT }],
                readinessProbe: { httpGet: { path: '/healthz', port: 'a2a' }, periodSeconds: 5 },
              },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: ns, labels },
      spec: {
        selector: labels,
        ports: [
          { name: 'a2a', port: A2A_PORT, targetPort: 'a2a' },
          ...(inject ? [{ name: 'agent-card', port: CARD_PORT, targetPort: 'agent-card' }] : []),
        ],
      },
    },
  ];
}

/** A Pod of a Deployment's template, for a server-side dry run through the admission chain. */
function podOf(deployment: object): object {
  const template = (deployment as { spec: { template: { metadata: object; spec: object } } }).spec.template;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { ...template.metadata, generateName: 'admission-check-' },
    spec: template.spec,
  };
}

async function podName(app: string): Promise<string> {
  const out = await k('-n', ns, 'get', 'pods', '-l', `app=${app}`, '-o', 'json');
  const pods = (
    JSON.parse(out) as { items: { metadata: { name: string; deletionTimestamp?: string } }[] }
  ).items.filter((p) => !p.metadata.deletionTimestamp);
  if (pods.length !== 1) throw new Error(`expected one Pod of ${app}, found ${pods.length}`);
  return pods[0]!.metadata.name;
}

type CallResult = { status?: number; body?: string; error?: string };
/**
 * One HTTP request made by Node.js inside the Pod of `app` (the operator image has no shell or
 * curl), with a 4 s limit: the status and body, or the error's code (ECONNREFUSED when
 * kube-router rejects the connection, TimeoutError when a packet is dropped).
 */
const CALL = `
const [url, body] = process.argv.slice(1);
const init = body
  ? { method: 'POST', body, headers: { 'content-type': 'application/json', 'a2a-version': '1.0' } }
  : {};
fetch(url, { ...init, signal: AbortSignal.timeout(4000) }).then(
  async (r) => console.log(JSON.stringify({ status: r.status, body: await r.text() })),
  (e) => console.log(JSON.stringify({ error: e.cause?.code ?? e.name })),
);`;
async function callFrom(app: string, url: string, body?: string): Promise<CallResult> {
  const pod = await podName(app);
  const args = ['-n', ns, 'exec', pod, '-c', 'agent', '--', '/nodejs/bin/node', '-e', CALL, url];
  return JSON.parse(await k(...args, ...(body ? [body] : []))) as CallResult;
}

const sendMessage = (text: string) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: text,
    method: 'SendMessage',
    params: { message: { messageId: `m-${Date.now()}`, role: 'ROLE_USER', parts: [{ text }] } },
  });

/** The payments agent's JSON-RPC endpoint by its Service's DNS name, as the card names it. */
const paymentsRpc = `http://payments.${ns}.svc.cluster.local:${A2A_PORT}/a2a/jsonrpc`;
const paymentsCard = `http://payments.${ns}.svc.cluster.local:${CARD_PORT}/.well-known/agent-card.json`;

function answered(result: CallResult, text: string): boolean {
  if (result.status !== 200 || !result.body) return false;
  const reply = JSON.parse(result.body) as { result?: { message?: { parts?: { text?: string }[] } } };
  return reply.result?.message?.parts?.[0]?.text === `echo: ${text}`;
}

type NetworkPolicy = {
  metadata: { ownerReferences?: { kind: string; name: string }[] };
  spec: {
    podSelector: { matchLabels?: Record<string, string> };
  };
};

describe('a callers rule enforced on the node (kube-router)', () => {
  beforeAll(async () => {
    images = productImages(inject('productImages'));
    await k('create', 'namespace', opNs);
    await helm([
      'install',
      RELEASE,
      join(repoRoot, 'helm', 'agentcard-operator'),
      '--namespace',
      opNs,
      '--set',
      `image.repository=${images.operatorRepository}`,
      '--set',
      `image.tag=${images.operatorTag}`,
      '--set',
      'image.pullPolicy=Never',
      '--set',
      'replicas=1',
      '--set',
      'sidecar.server=nginx',
      '--set',
      `sidecar.nginx.image=${images.nginx}`,
      '--set',
      'policies.enabled=true',
      '--set',
      'policies.networkPolicies.enabled=true',
      '--wait',
      '--timeout=5m',
    ]);
    await k('create', 'namespace', ns);
    await apply(agentCard('payments'));
    await apply(agentCard('billing'));
    await waitFor('the webhook to inject (a dry-run Pod comes back with the sidecar)', 120_000, async () => {
      const out = await kubectl(
        state,
        ['-n', ns, 'create', '--dry-run=server', '-o', 'json', '-f', '-'],
        JSON.stringify(podOf(demoAgent('payments', 'payments')[0]!)),
      );
      return out.includes('"agentcard-sidecar"') ? true : undefined;
    });
    const objects = [
      ...demoAgent('payments', 'payments'),
      ...demoAgent('billing', 'billing'),
      ...demoAgent('other'),
    ];
    await kubectl(
      state,
      ['apply', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }),
    );
    for (const app of ['payments', 'billing', 'other'])
      await k('-n', ns, 'rollout', 'status', `deployment/${app}`, '--timeout=240s');
    await waitForService(state, ns, 'payments', A2A_PORT);
    await waitFor('the payments AgentCard to be Ready', 180_000, async () =>
      (await readyCondition('payments'))?.status === 'True' ? true : undefined,
    );
  });

  afterAll(async () => {
    await k('delete', 'clusteragentpolicy', POLICY, '--ignore-not-found', '--wait=false').catch(
      () => undefined,
    );
    await k('delete', 'namespace', ns, '--wait=false').catch(() => undefined);
    await helm(['uninstall', RELEASE, '--namespace', opNs, '--wait', '--timeout=120s']).catch(
      () => undefined,
    );
    await k('delete', 'namespace', opNs, '--wait=false').catch(() => undefined);
    // The chart keeps its CRDs; the next install is another release (see product.test.ts).
    await k('delete', 'crd', ...CHART_CRD_NAMES, '--ignore-not-found').catch(() => undefined);
  });

  it('the webhook labels the injected Pods with their AgentCard, and no other', async () => {
    const labels = async (app: string) =>
      JSON.parse(
        await k('-n', ns, 'get', 'pod', await podName(app), '-o', 'jsonpath={.metadata.labels}'),
      ) as Record<string, string>;
    expect(await labels('payments')).toMatchObject({ [AGENT_LABEL]: 'payments' });
    expect(await labels('billing')).toMatchObject({ [AGENT_LABEL]: 'billing' });
    expect(await labels('other')).not.toHaveProperty(AGENT_LABEL);
  });

  it('without a policy, any Pod calls the payments agent', async () => {
    for (const app of ['billing', 'other']) {
      expect(answered(await callFrom(app, paymentsRpc, sendMessage(`from ${app}`)), `from ${app}`)).toBe(
        true,
      );
    }
  });

  it('with the callers rule in Enforce, only billing reaches the JSON-RPC port; the card stays public', async () => {
    const readyBefore = await readyCondition('payments');
    expect(readyBefore?.status).toBe('True');
    const started = Date.now();
    await apply({
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'ClusterAgentPolicy',
      metadata: { name: POLICY },
      spec: {
        mode: 'Enforce',
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
        rules: [
          {
            name: 'only-billing-calls-payments',
            message: 'only the billing agent may call the payments agent',
            callers: { agentCards: [{ name: 'billing' }] },
          },
        ],
      },
    });
    // The operator generates the payments agent's NetworkPolicy from the rule.
    const generated = await waitFor('the generated NetworkPolicy', 60_000, async () => {
      const out = await k('-n', ns, 'get', 'networkpolicy', 'agentcard-payments', '-o', 'json').catch(
        () => undefined,
      );
      return out ? (JSON.parse(out) as NetworkPolicy) : undefined;
    });
    figure(`policy applied to the NetworkPolicy generated: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    expect(generated.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'AgentCard', name: 'payments' });
    expect(generated.spec.podSelector.matchLabels).toEqual({ [AGENT_LABEL]: 'payments' });
    const refused = await waitFor('the other Pod to be refused', 60_000, async () => {
      const result = await callFrom('other', paymentsRpc, sendMessage('from other'));
      return result.error ? result : undefined;
    });
    figure(
      `policy applied to the first refused call (${refused.error}): ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    // kube-router rejects (ICMP port unreachable) what no policy admits; a drop would time out.
    expect(['ECONNREFUSED', 'TimeoutError']).toContain(refused.error);
    expect(
      answered(await callFrom('billing', paymentsRpc, sendMessage('from billing')), 'from billing'),
    ).toBe(true);
    expect((await callFrom('other', paymentsRpc, sendMessage('again'))).error).toBeDefined();

    for (const app of ['billing', 'other']) {
      const card = await callFrom(app, paymentsCard);
      expect(card.status, `${app} fetching the card`).toBe(200);
      expect((JSON.parse(card.body!) as { name: string }).name).toBe('payments agent');
    }

    // Two probe intervals and more: a blocked probe would have turned Ready to False.
    await sleep(25_000);
    const readyAfter = await readyCondition('payments');
    expect(readyAfter?.status).toBe('True');
    expect(readyAfter?.lastTransitionTime).toBe(readyBefore?.lastTransitionTime);
  });
});
