/**
 * The chart grants the rights of the policy controller only with `policies.enabled`, proven with
 * the real API server's authorizer and the chart's ServiceAccount:
 * - off (the default): the ServiceAccount may neither write ValidatingAdmissionPolicies or their
 *   bindings nor read the policy kinds, and a create with its token is refused (403);
 * - on (`helm upgrade`): it may; the operator, run on the ServiceAccount's token with --policies,
 *   generates a ClusterAgentPolicy's admission policy and deletes it with the policy, with no 403.
 * And the rights of the network controller only with `policies.networkPolicies.enabled` too:
 * denied with policies alone; on, allowed, and the operator on the token (--network-policies)
 * generates an agent's NetworkPolicy from an Enforce callers rule and deletes it with the policy,
 * with no 403.
 * (helm-rbac.test.ts proves the default chart's rules sufficient and minimal.)
 */
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AdmissionregistrationV1Api,
  AppsV1Api,
  AuthorizationV1Api,
  NetworkingV1Api,
  type V1ResourceAttributes,
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
import {
  installPolicyCrds,
  sampleCard,
  startOperator,
  waitFor,
  type InProcessOperator,
} from '../support/operator.ts';
import { runTool } from '../support/tools.ts';
import { chartDir } from '../unit/helm/chart.ts';
import { useClusterLock } from '../support/cluster-lock.ts';

// Beside any file but the others of its family: see vitest.config.ts.
useClusterLock('cluster-policies');

const kc = kubeConfig();
const apps = kc.makeApiClient(AppsV1Api);
const authz = kc.makeApiClient(AuthorizationV1Api);
const admission = kc.makeApiClient(AdmissionregistrationV1Api);
const networking = kc.makeApiClient(NetworkingV1Api);

let opNs: TestNamespace;
let appNs: TestNamespace;
let release = '';
let work = '';
let user = '';
let groups: string[] = [];
let tokenKubeconfig = '';
let operator: InProcessOperator | undefined;

const helm = (args: string[]) => runTool('helm', args, { kubeconfig: kubeconfigPath(), timeoutMs: 120_000 });
const kubectl = (args: string[], input?: string) =>
  runTool('kubectl', args, { kubeconfig: kubeconfigPath(), ...(input === undefined ? {} : { input }) });

/** What the policy controller does, as the authorizer is asked about it. */
const RIGHTS: V1ResourceAttributes[] = [
  ...['validatingadmissionpolicies', 'validatingadmissionpolicybindings'].flatMap((resource) =>
    ['list', 'watch', 'create', 'update', 'delete'].map((verb) => ({
      group: 'admissionregistration.k8s.io',
      resource,
      verb,
    })),
  ),
  ...['agentpolicies', 'clusteragentpolicies'].flatMap((resource) => [
    { group: 'agentcard.dev', resource, verb: 'list' },
    { group: 'agentcard.dev', resource, verb: 'watch' },
    { group: 'agentcard.dev', resource, subresource: 'status', verb: 'patch' },
  ]),
];

/** What the network controller does, in a watched namespace (appNs, set in beforeAll). */
const networkRights = (): V1ResourceAttributes[] => [
  ...['list', 'watch', 'create', 'update', 'delete'].map((verb) => ({
    group: 'networking.k8s.io',
    resource: 'networkpolicies',
    verb,
    namespace: appNs.name,
  })),
  { group: '', resource: 'services', verb: 'watch', namespace: appNs.name },
];

/** The authorizer's answer for each right, as "verb resource[/sub]: allowed|denied". */
async function answers(rights: V1ResourceAttributes[] = RIGHTS): Promise<string[]> {
  return Promise.all(
    rights.map(async (attributes) => {
      const review = await authz.createSubjectAccessReview({
        body: {
          apiVersion: 'authorization.k8s.io/v1',
          kind: 'SubjectAccessReview',
          spec: { user, groups, resourceAttributes: attributes },
        },
      });
      const what = `${attributes.verb} ${attributes.resource}${attributes.subresource ? `/${attributes.subresource}` : ''}`;
      return `${what}: ${review.status?.allowed ? 'allowed' : 'denied'}`;
    }),
  );
}

const vapName = () => `clusteragentpolicy.rbac-${release}.agentcard.dev`;

beforeAll(async () => {
  await installPolicyCrds(kc);
  opNs = await createTestNamespace('rbac-pol-op');
  appNs = await createTestNamespace('rbac-pol-app');
  release = `rp-${opNs.name.slice(-8)}`;
  const installed = await helm([
    'install',
    release,
    chartDir,
    '--namespace',
    opNs.name,
    '--set',
    'crds.enabled=false',
    // The chart's nesting policy checks only this release's namespace: other files, running
    // beside this one, store deep AgentCards on purpose.
    '--set-json',
    `nestingPolicy.namespaceSelector={"matchLabels":{"kubernetes.io/metadata.name":"${opNs.name}"}}`,
  ]);
  if (installed.code !== 0) throw new Error(`helm install failed: ${installed.stderr}`);
  const fullname = `${release}-agentcard-operator`;
  const deployment = await apps.readNamespacedDeployment({ name: fullname, namespace: opNs.name });
  const sa = deployment.spec!.template.spec!.serviceAccountName!;
  user = `system:serviceaccount:${opNs.name}:${sa}`;
  groups = ['system:serviceaccounts', `system:serviceaccounts:${opNs.name}`, 'system:authenticated'];
  work = mkdtempSync(join(tmpdir(), 'agentcard-rbac-policies-'));
  tokenKubeconfig = join(work, 'kubeconfig');
  const token = await serviceAccountToken(opNs.name, sa, { expirationSeconds: 3600 });
  writeFileSync(tokenKubeconfig, kubeConfigWithToken(token).exportConfig(), { mode: 0o600 });
}, 300_000);

afterAll(async () => {
  await operator?.stop();
  await kubectl(['delete', 'clusteragentpolicy', `rbac-${release}`, '--ignore-not-found']);
  await kubectl([
    'delete',
    'validatingadmissionpolicybinding,validatingadmissionpolicy',
    vapName(),
    '--ignore-not-found',
  ]);
  if (release) await helm(['uninstall', release, '--namespace', opNs.name]);
  await appNs?.cleanup();
  await opNs?.cleanup();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the policy controller's rights in the chart", () => {
  it('off (the default): none, and a write with the token is refused', async () => {
    for (const answer of await answers([...RIGHTS, ...networkRights()])) expect(answer).toMatch(/: denied$/);
    const created = await runTool('kubectl', ['create', '-f', '-'], {
      kubeconfig: tokenKubeconfig,
      input: JSON.stringify({
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingAdmissionPolicy',
        metadata: { name: vapName() },
        spec: { matchConstraints: { resourceRules: [] }, validations: [{ expression: 'true' }] },
      }),
    });
    expect(created.code).not.toBe(0);
    expect(created.stderr).toMatch(/forbidden/i);
  });

  it('on: every right, and the operator on the token generates and deletes an admission policy with no 403', async () => {
    const upgraded = await helm([
      'upgrade',
      release,
      chartDir,
      '--namespace',
      opNs.name,
      '--reuse-values',
      '--set',
      'policies.enabled=true',
    ]);
    expect(upgraded.stderr).toBe('');
    expect(upgraded.code).toBe(0);
    for (const answer of await answers()) expect(answer).toMatch(/: allowed$/);
    // Policies alone grant nothing on the network.
    for (const answer of await answers(networkRights())) expect(answer).toMatch(/: denied$/);

    operator = await startOperator(appNs.name, ['--policies', '--cluster-policies'], {
      kubeconfig: tokenKubeconfig,
    });
    const policy = {
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'ClusterAgentPolicy',
      metadata: { name: `rbac-${release}` },
      spec: {
        mode: 'Audit',
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': appNs.name } },
        rules: [{ name: 'https-only', message: 'Use https', content: { allowedSchemes: ['https'] } }],
      },
    };
    expect((await kubectl(['create', '-f', '-'], JSON.stringify(policy))).code).toBe(0);
    const exists = () =>
      admission.readValidatingAdmissionPolicy({ name: vapName() }).then(
        () => true,
        () => false,
      );
    await waitFor('the generated admission policy', exists, 30_000);
    expect((await kubectl(['delete', 'clusteragentpolicy', `rbac-${release}`])).code).toBe(0);
    await waitFor('the generated admission policy to go', async () => !(await exists()), 30_000);
    const forbidden = operator.logs.filter((l) => /\b403\b|forbidden/i.test(l));
    expect(forbidden).toEqual([]);
  }, 90_000);

  it('policies.networkPolicies.enabled: the NetworkPolicy rights, and the operator on the token generates and deletes one with no 403', async () => {
    await operator?.stop();
    operator = undefined;
    const upgraded = await helm([
      'upgrade',
      release,
      chartDir,
      '--namespace',
      opNs.name,
      '--reuse-values',
      '--set',
      'policies.networkPolicies.enabled=true',
    ]);
    expect(upgraded.stderr).toBe('');
    expect(upgraded.code).toBe(0);
    for (const answer of await answers([...RIGHTS, ...networkRights()])) expect(answer).toMatch(/: allowed$/);

    operator = await startOperator(
      appNs.name,
      ['--policies', '--network-policies', `--operator-namespace=${opNs.name}`],
      { kubeconfig: tokenKubeconfig },
    );
    const card = {
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'AgentCard',
      metadata: { name: 'payments', namespace: appNs.name },
      spec: { card: sampleCard() },
    };
    const policy = {
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'AgentPolicy',
      metadata: { name: 'callers', namespace: appNs.name },
      spec: {
        mode: 'Enforce',
        rules: [
          { name: 'billing-only', message: 'Only billing', callers: { agentCards: [{ name: 'billing' }] } },
        ],
      },
    };
    expect((await kubectl(['create', '-f', '-'], JSON.stringify(card))).code).toBe(0);
    expect((await kubectl(['create', '-f', '-'], JSON.stringify(policy))).code).toBe(0);
    const exists = () =>
      networking.readNamespacedNetworkPolicy({ name: 'agentcard-payments', namespace: appNs.name }).then(
        () => true,
        () => false,
      );
    await waitFor('the generated NetworkPolicy', exists, 30_000);
    expect((await kubectl(['delete', 'agentpolicy', 'callers', '-n', appNs.name])).code).toBe(0);
    await waitFor('the generated NetworkPolicy to go', async () => !(await exists()), 30_000);
    const forbidden = operator.logs.filter((l) => /\b403\b|forbidden/i.test(l));
    expect(forbidden).toEqual([]);
  }, 90_000);
});
