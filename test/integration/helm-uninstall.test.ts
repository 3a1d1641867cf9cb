/**
 * `helm uninstall` removes what the operator created at run time: the webhook's self-signed
 * certificate Secret and the leader election Lease carry an ownerReference to the chart's
 * Deployment (operator/kube/owner.ts), and the real garbage collector of the control plane deletes
 * them with it. The operator runs as a local process with the Deployment's own command line and
 * the chart ServiceAccount's token (no kubelet here: the chart's Pods stay Pending), so the
 * chart's RBAC and write policy are the ones in force. Also: objects an older operator created
 * without the reference get it at the first start of this one.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { AppsV1Api, CoordinationV1Api, CoreV1Api, type V1OwnerReference } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestNamespace,
  kubeConfig,
  kubeconfigPath,
  saveKubeConfig,
  serviceAccountKubeConfig,
  type TestNamespace,
} from '../support/cluster.ts';
import { installCatalogCrds, waitFor } from '../support/operator.ts';
import { freePort } from '../support/ports.ts';
import { agentcardBin } from '../support/test-package.ts';
import { runTool } from '../support/tools.ts';
import { chartDir } from '../unit/helm/chart.ts';

const kc = kubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const coordination = kc.makeApiClient(CoordinationV1Api);

let ns: TestNamespace;
let release = '';
let fullname: string;
let args: string[];
let tokenKubeconfig: string;

const helm = (a: string[]) => runTool('helm', a, { kubeconfig: kubeconfigPath(), timeoutMs: 120_000 });
const secretName = () => `${fullname}-webhook-tls`;
const LEASE = 'agentcard-operator';

function notFound(err: unknown): boolean {
  return (err as { code?: number }).code === 404;
}
async function optional<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (notFound(err)) return undefined;
    throw err;
  }
}
const readSecret = () =>
  optional(() => core.readNamespacedSecret({ name: secretName(), namespace: ns.name }));
const readLease = () => optional(() => coordination.readNamespacedLease({ name: LEASE, namespace: ns.name }));

/**
 * Runs the operator with the Deployment's command line (ports, bind address and watched
 * namespace replaced; `drop` flags removed) as the chart's ServiceAccount, until the Secret and
 * the Lease exist and it holds the Lease; then stops it (SIGTERM, as a Pod's termination does).
 */
async function runOperatorOnce(drop: string[] = []): Promise<void> {
  const [metricsPort, webhookPort] = [await freePort(), await freePort()];
  const replaced = ['kubeconfig', 'metrics-port', 'webhook-port', 'bind-address', 'namespace', ...drop];
  const flags = [
    ...args.filter((a) => !replaced.some((f) => a === `--${f}` || a.startsWith(`--${f}=`))),
    `--kubeconfig=${tokenKubeconfig}`,
    `--metrics-port=${metricsPort}`,
    `--webhook-port=${webhookPort}`,
    '--bind-address=127.0.0.1',
    `--namespace=${ns.name}`,
  ];
  let log = '';
  const child: ChildProcess = spawn(process.execPath, [agentcardBin(), ...flags], {
    env: { ...process.env, POD_NAMESPACE: ns.name, POD_NAME: 'uninstall-test', KUBECONFIG: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (b: Buffer) => (log += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (log += b.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  try {
    await waitFor(
      'the webhook Secret and the held Lease',
      async () => {
        if (child.exitCode !== null)
          throw new Error(`operator exited (${child.exitCode}): ${log.slice(-800)}`);
        const lease = await readLease();
        return (
          (await readSecret()) !== undefined && lease?.spec?.holderIdentity?.startsWith('uninstall-test')
        );
      },
      30_000,
    );
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
  // The chart's RBAC and write policy let it do all of it: no refusal in its log.
  expect(log.split('\n').filter((l) => /\b403\b|forbidden/i.test(l))).toEqual([]);
}

const owners = (meta: { ownerReferences?: V1OwnerReference[] } | undefined) =>
  (meta?.ownerReferences ?? []).map((r) => ({
    apiVersion: r.apiVersion,
    kind: r.kind,
    name: r.name,
    uid: r.uid,
  }));

beforeAll(async () => {
  // Shared by every test file: applied here, not owned by this release (see helm-crds.test.ts).
  await installCatalogCrds(kc);
  ns = await createTestNamespace('helm-uninstall');
  release = `un-${ns.name.slice(-8)}`;
  fullname = `${release}-agentcard-operator`;
  const installed = await helm([
    'install',
    release,
    chartDir,
    '--namespace',
    ns.name,
    '--set',
    'crds.enabled=false',
    // The chart's nesting policy checks only this release's namespace: other files, running
    // beside this one, store deep AgentCards on purpose.
    '--set-json',
    `nestingPolicy.namespaceSelector={"matchLabels":{"kubernetes.io/metadata.name":"${ns.name}"}}`,
  ]);
  expect(installed.stderr).toBe('');
  expect(installed.code).toBe(0);
  const deployment = await apps.readNamespacedDeployment({ name: fullname, namespace: ns.name });
  const container = deployment.spec!.template.spec!.containers.find((c) => c.name === 'operator')!;
  args = container.args ?? [];
  tokenKubeconfig = saveKubeConfig(
    await serviceAccountKubeConfig(ns.name, deployment.spec!.template.spec!.serviceAccountName!),
  );
}, 180_000);

afterAll(async () => {
  if (release) await helm(['uninstall', release, '--namespace', ns.name, '--wait']);
  await ns?.cleanup();
});

describe('helm uninstall', () => {
  it('the chart names its Deployment as the owner of what the operator creates', () => {
    expect(args).toContain(`--owner-deployment=${fullname}`);
  });

  it('an older operator (no owner) leaves the Secret and the Lease without ownerReferences', async () => {
    await runOperatorOnce(['owner-deployment']);
    expect(owners((await readSecret())?.metadata)).toEqual([]);
    expect(owners((await readLease())?.metadata)).toEqual([]);
  });

  it('this operator adds the Deployment as owner to both, keeping the certificate', async () => {
    const before = await readSecret();
    await runOperatorOnce();
    const deployment = await apps.readNamespacedDeployment({ name: fullname, namespace: ns.name });
    const owner = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: fullname,
      uid: deployment.metadata!.uid,
    };
    const secret = await readSecret();
    expect(owners(secret?.metadata)).toEqual([owner]);
    expect(owners((await readLease())?.metadata)).toEqual([owner]);
    // Adopted, not re-issued: the webhook's caBundle stays valid across the operator upgrade.
    expect(secret?.data?.['tls.crt']).toBe(before?.data?.['tls.crt']);
    expect(secret?.data?.['ca.crt']).toBe(before?.data?.['ca.crt']);
  });

  it('deletes the webhook Secret and the Lease with the release', async () => {
    const result = await helm(['uninstall', release, '--namespace', ns.name, '--wait']);
    expect(result.code).toBe(0);
    release = '';
    // The garbage collector (kube-controller-manager) deletes the dependents of the gone Deployment.
    await waitFor(
      'the Secret and the Lease to be garbage collected',
      async () => (await readSecret()) === undefined && (await readLease()) === undefined,
      60_000,
    );
    const left = await core.listNamespacedSecret({ namespace: ns.name });
    expect(left.items.map((s) => s.metadata?.name)).toEqual([]);
  });
});
