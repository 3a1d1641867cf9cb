/**
 * `helm install` of the chart into the real control plane: the objects the chart renders are
 * accepted by the API server (schemas, RBAC, admission), the operator Pods pass the
 * `restricted` Pod Security Standard (the ReplicaSet controller creates them in a namespace
 * that enforces it), and `helm upgrade` leaves the operator-managed caBundle alone. The CRDs are
 * applied beforehand and the release installed with crds.enabled=false, since every test file on
 * the control plane shares them; helm-crds.test.ts covers the chart's own CRD lifecycle, and
 * helm-uninstall.test.ts what an uninstall removes.
 */
import {
  AdmissionregistrationV1Api,
  ApiextensionsV1Api,
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestNamespace,
  kubeConfig,
  kubeConfigWithToken,
  kubeconfigPath,
  serviceAccountToken,
  type TestNamespace,
} from '../support/cluster.ts';
import { runTool } from '../support/tools.ts';
import { join } from 'node:path';
import { chartDir } from '../unit/helm/chart.ts';
import { repoRoot } from '../support/paths.ts';
import { installCatalogCrds } from '../support/operator.ts';

const kc = kubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const admission = kc.makeApiClient(AdmissionregistrationV1Api);
const crds = kc.makeApiClient(ApiextensionsV1Api);

let ns: TestNamespace;
let release: string;

function helm(args: string[]) {
  return runTool('helm', args, { kubeconfig: kubeconfigPath(), timeoutMs: 120_000 });
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

beforeAll(async () => {
  ns = await createTestNamespace('helm-install');
  release = `ac-${ns.name.slice(-8)}`;
  // Pods that violate the restricted profile are refused by the API server in this namespace.
  await core.patchNamespace(
    {
      name: ns.name,
      body: [
        { op: 'add', path: '/metadata/labels/pod-security.kubernetes.io~1enforce', value: 'restricted' },
      ],
    },
    setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
  );
  await installCatalogCrds(kc);
  const result = await helm([
    'install',
    release,
    chartDir,
    '--namespace',
    ns.name,
    '--set',
    'crds.enabled=false',
    // The nesting policy checks only this namespace: other test files store deep AgentCards on
    // purpose (the controller's own check) on the same control plane.
    '--set-json',
    `nestingPolicy.namespaceSelector={"matchLabels":{"kubernetes.io/metadata.name":"${ns.name}"}}`,
  ]);
  expect(result.stderr).not.toMatch(/Error/);
  expect(result.code).toBe(0);
});

afterAll(async () => {
  if (release) await helm(['uninstall', release, '--namespace', ns.name, '--wait']);
  await ns?.cleanup();
});

describe('helm install into the control plane', () => {
  it('deploys the release', async () => {
    const status = await helm(['status', release, '--namespace', ns.name, '-o', 'json']);
    expect(status.code).toBe(0);
    expect((JSON.parse(status.stdout) as { info: { status: string } }).info.status).toBe('deployed');
  });

  it('creates operator Pods that pass the restricted Pod Security Standard', async () => {
    const deployment = await apps.readNamespacedDeployment({
      name: `${release}-agentcard-operator`,
      namespace: ns.name,
    });
    const selector = Object.entries(deployment.spec!.selector.matchLabels!)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    // No scheduler or kubelet: the Pods stay Pending, but they exist only if admission let them in.
    const pods = await waitFor('2 operator Pods', async () => {
      const list = await core.listNamespacedPod({ namespace: ns.name, labelSelector: selector });
      return list.items.length >= 2 ? list.items : undefined;
    });
    expect(pods).toHaveLength(2);
    const events = await core.listNamespacedEvent({ namespace: ns.name });
    expect(events.items.filter((e) => e.reason === 'FailedCreate').map((e) => e.message)).toEqual([]);
  });

  it('accepts every manifest in examples/ (server-side dry run against the installed CRD)', async () => {
    const result = await runTool(
      'kubectl',
      ['apply', '--dry-run=server', '--namespace', ns.name, '-f', join(repoRoot, 'examples')],
      { kubeconfig: kubeconfigPath() },
    );
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/agentcard\.agentcard\.dev\/\S+ created \(server dry run\)/);
    expect(result.stdout).toMatch(/deployment\.apps\/demo-agent created/);
    expect(result.stdout).toMatch(/ingress\.networking\.k8s\.io\/support-agent created/);
  });

  it('refuses an AgentCard nested past the limit at apply time (the nesting policy), naming the field', async () => {
    let params: unknown = {};
    for (let i = 0; i < 100; i++) params = { a: params };
    const card = (name: string) => ({
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'AgentCard',
      metadata: { name, namespace: ns.name },
      spec: {
        card: {
          name: 'Deep',
          description: 'nested params',
          version: '1.0.0',
          supportedInterfaces: [
            { url: 'https://deep.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
          ],
          capabilities: { extensions: [{ uri: 'https://x.example/e', params }] },
          defaultInputModes: ['text/plain'],
          defaultOutputModes: ['text/plain'],
          skills: [{ id: 's', name: 'S', description: 'a skill', tags: ['t'] }],
        },
      },
    });
    // A new policy takes effect once the API server has loaded it: server-side dry runs until then.
    const result = await waitFor('the nesting policy to refuse', async () => {
      const r = await runTool('kubectl', ['create', '--dry-run=server', '-f', '-'], {
        kubeconfig: kubeconfigPath(),
        input: JSON.stringify(card('deep')),
      });
      return r.code !== 0 ? r : undefined;
    });
    expect(result.stderr).toContain(`ValidatingAdmissionPolicy '${release}-agentcard-operator-nesting'`);
    expect(result.stderr).toContain(
      'spec.card.capabilities.extensions[0].params: nested more than 32 levels deep',
    );
  });

  it("narrows the ServiceAccount's writes below RBAC with the ValidatingAdmissionPolicy", async () => {
    const token = await serviceAccountToken(ns.name, `${release}-agentcard-operator`);
    const asOperator = kubeConfigWithToken(token).makeApiClient(CoreV1Api);
    const coordination = kubeConfigWithToken(token).makeApiClient(CoordinationV1Api);
    // A new policy takes effect once the API server's admission plugin has loaded it; until then
    // try again with a fresh name (each try is a new object).
    const denied = async (what: string, create: (name: string) => Promise<unknown>) => {
      const deadline = Date.now() + 20_000;
      for (let i = 0; ; i++) {
        const err = await create(`not-ours-${i}`).then(
          () => undefined,
          (e: { code?: number; body?: string }) => e,
        );
        if (err || Date.now() > deadline) {
          expect(err, what).toBeDefined();
          expect(err!.code, `${what}: ${String(err!.body).slice(0, 300)}`).toBe(403);
          expect(String(err!.body), what).toMatch(/agentcard-operator may only write/);
          return;
        }
        await new Promise((r) => setTimeout(r, 250));
      }
    };
    // RBAC lets the operator create ConfigMaps anywhere; the policy only its own.
    await denied('a ConfigMap it does not own', (name) =>
      asOperator.createNamespacedConfigMap({ namespace: ns.name, body: { metadata: { name } } }),
    );
    await denied('a Secret other than its webhook certificate', (name) =>
      asOperator.createNamespacedSecret({ namespace: ns.name, body: { metadata: { name } } }),
    );
    await denied('a Lease other than its own', (name) =>
      coordination.createNamespacedLease({
        namespace: ns.name,
        body: { metadata: { name }, spec: {} },
      }),
    );
    // What it does write passes: a published ConfigMap owned by an AgentCard.
    const cm = await asOperator.createNamespacedConfigMap({
      namespace: ns.name,
      body: {
        metadata: {
          name: 'demo-agent-card',
          labels: { 'app.kubernetes.io/managed-by': 'agentcard-operator', 'agentcard.dev/card': 'demo' },
          ownerReferences: [
            {
              apiVersion: 'agentcard.dev/v1alpha1',
              kind: 'AgentCard',
              name: 'demo',
              uid: '00000000-0000-4000-8000-000000000001',
            },
          ],
        },
        data: { 'agent-card.json': '{}' },
      },
    });
    expect(cm.metadata?.name).toBe('demo-agent-card');
  });

  it('keeps the caBundle the operator writes across helm upgrade', async () => {
    const name = `${release}-agentcard-operator`;
    const caBundle = Buffer.from(
      '-----BEGIN CERTIFICATE-----\nnot-a-real-ca\n-----END CERTIFICATE-----\n',
    ).toString('base64');
    // What the operator does in self-signed mode: a server-side apply of the caBundle alone.
    const applied = await runTool(
      'kubectl',
      ['apply', '--server-side', '--field-manager=agentcard-operator', '-f', '-'],
      {
        kubeconfig: kubeconfigPath(),
        input: JSON.stringify({
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'MutatingWebhookConfiguration',
          metadata: { name },
          webhooks: [{ name: 'inject.agentcard.dev', clientConfig: { caBundle } }],
        }),
      },
    );
    expect(applied.stderr).toBe('');
    const upgrade = await helm([
      'upgrade',
      release,
      chartDir,
      '--namespace',
      ns.name,
      '--reuse-values',
      '--set',
      'webhook.timeoutSeconds=7',
    ]);
    expect(upgrade.code).toBe(0);
    const mwc = await admission.readMutatingWebhookConfiguration({ name });
    expect(mwc.webhooks?.[0]?.timeoutSeconds).toBe(7);
    expect(mwc.webhooks?.[0]?.clientConfig.caBundle).toBe(caBundle);
  });

  it('helm uninstall with crds.enabled=false leaves the CRDs alone', async () => {
    const result = await helm(['uninstall', release, '--namespace', ns.name, '--wait']);
    expect(result.code).toBe(0);
    release = '';
    const crd = await crds.readCustomResourceDefinition({ name: 'agentcards.agentcard.dev' });
    expect(crd.metadata?.deletionTimestamp).toBeUndefined();
  });
});
