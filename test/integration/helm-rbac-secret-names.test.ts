/**
 * The chart's named-Secrets mode (`rbac.secretNames`) against the real API server's authorizer:
 * the operator's ServiceAccount may read the named Secrets (get, and list/watch with the field
 * selector metadata.name) and no other; and the operator, run on that ServiceAccount's token with
 * the chart's `--secret-name`, signs a card with an unlabelled named key created after the card,
 * within seconds (its watch by name), with no 403, while a card that references any other Secret
 * reports it not found.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
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
  Api,
  condition,
  installCrd,
  privateJwk,
  sampleCard,
  spawnOperator,
  waitFor,
  type ChildOperator,
} from '../support/operator.ts';
import { runTool } from '../support/tools.ts';
import { chartDir } from '../unit/helm/chart.ts';

const KEY = 'agent-signing-key';
const kc = kubeConfig();
const admin = new Api(kc);
let opNs: TestNamespace;
let appNs: TestNamespace;
let release: string;
let saKc: KubeConfig;
let saCore: CoreV1Api;
let work: string;
let operator: ChildOperator | undefined;

const helm = (args: string[]) => runTool('helm', args, { kubeconfig: kubeconfigPath(), timeoutMs: 120_000 });
const statusOf = (p: Promise<unknown>) =>
  p.then(
    () => 200,
    (err: unknown) => (err as { code?: number }).code ?? -1,
  );

beforeAll(async () => {
  await installCrd(kc);
  opNs = await createTestNamespace('rbac-names-op');
  appNs = await createTestNamespace('rbac-names-app');
  release = `rn-${opNs.name.slice(-8)}`;
  const installed = await helm([
    'install',
    release,
    chartDir,
    '--namespace',
    opNs.name,
    // The CRDs are applied by installCrd and shared by every test file: the chart leaves them alone.
    '--set',
    'crds.enabled=false',
    // The chart's nesting policy checks only this release's namespace: other files, running
    // beside this one, store deep AgentCards on purpose.
    '--set-json',
    `nestingPolicy.namespaceSelector={"matchLabels":{"kubernetes.io/metadata.name":"${opNs.name}"}}`,
    '--set',
    `rbac.secretNames={${KEY}}`,
    '--set',
    'webhook.enabled=false',
    '--set',
    'catalogs.enabled=false',
  ]);
  if (installed.code !== 0) throw new Error(`helm install failed: ${installed.stderr}`);
  const deployment = await kc
    .makeApiClient(AppsV1Api)
    .readNamespacedDeployment({ name: `${release}-agentcard-operator`, namespace: opNs.name });
  const token = await serviceAccountToken(opNs.name, deployment.spec!.template.spec!.serviceAccountName!);
  saKc = kubeConfigWithToken(token);
  saCore = saKc.makeApiClient(CoreV1Api);
  work = mkdtempSync(join(tmpdir(), 'agentcard-rbac-names-'));
  writeFileSync(join(work, 'kubeconfig'), saKc.exportConfig(), { mode: 0o600 });
  for (const name of [KEY, 'other-secret']) {
    await admin.core.createNamespacedSecret({
      namespace: opNs.name,
      body: { metadata: { name }, stringData: { jwk: await privateJwk('unused') } },
    });
  }
}, 300_000);

afterAll(async () => {
  if (operator?.child.exitCode === null) operator.child.kill('SIGKILL');
  if (release) await helm(['uninstall', release, '--namespace', opNs.name]);
  await Promise.all([appNs?.cleanup(), opNs?.cleanup()]);
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the chart's named-Secrets mode (real RBAC)", () => {
  it('lets the ServiceAccount read the named Secret only: get, and list/watch by name', async () => {
    const ns = opNs.name;
    expect(await statusOf(saCore.readNamespacedSecret({ namespace: ns, name: KEY }))).toBe(200);
    expect(await statusOf(saCore.readNamespacedSecret({ namespace: ns, name: 'other-secret' }))).toBe(403);
    // RBAC authorizes a list or watch under resourceNames only with a metadata.name field selector.
    expect(await statusOf(saCore.listNamespacedSecret({ namespace: ns }))).toBe(403);
    expect(
      await statusOf(
        saCore.listNamespacedSecret({ namespace: ns, labelSelector: 'agentcard.dev/signing-key=true' }),
      ),
    ).toBe(403);
    expect(
      await statusOf(saCore.listNamespacedSecret({ namespace: ns, fieldSelector: `metadata.name=${KEY}` })),
    ).toBe(200);
    expect(await statusOf(saCore.listSecretForAllNamespaces({ fieldSelector: `metadata.name=${KEY}` }))).toBe(
      200,
    );
    expect(
      await statusOf(saCore.listSecretForAllNamespaces({ fieldSelector: 'metadata.name=other-secret' })),
    ).toBe(403);
    const watch = await statusOf(
      saCore.listNamespacedSecret({
        namespace: ns,
        fieldSelector: `metadata.name=${KEY}`,
        watch: true,
        timeoutSeconds: 1,
      }),
    );
    expect(watch).toBe(200);
  });

  it('runs the operator on that token: a named key created after its card signs it, others are not found', async () => {
    operator = spawnOperator(
      appNs.name,
      ['--no-leader-elect', '--no-probes', '--no-catalogs', '--resync', '10m', `--secret-name=${KEY}`],
      {
        kubeconfig: join(work, 'kubeconfig'),
      },
    );
    await operator.waitForLog('operator starting');
    await admin.createCard(appNs.name, 'named', {
      card: sampleCard('1.0.0'),
      signing: { keys: [{ secretRef: { name: KEY, key: 'jwk' } }] },
    });
    await admin.createCard(appNs.name, 'unnamed', {
      card: sampleCard('1.0.0'),
      signing: { keys: [{ secretRef: { name: 'other-secret', key: 'jwk' } }] },
    });
    await waitFor('named: SigningKeyNotFound before its Secret exists', async () =>
      condition(await admin.getCard(appNs.name, 'named'), 'Signed')?.reason === 'SigningKeyNotFound'
        ? true
        : undefined,
    );
    // Unlabelled, as a GitOps tool would create it; no resync for 10 minutes.
    const created = Date.now();
    await admin.core.createNamespacedSecret({
      namespace: appNs.name,
      body: { metadata: { name: KEY }, stringData: { jwk: await privateJwk('n1') } },
    });
    await admin.core.createNamespacedSecret({
      namespace: appNs.name,
      body: { metadata: { name: 'other-secret' }, stringData: { jwk: await privateJwk('o1') } },
    });
    const signed = await waitFor('named: Signed=True', async () => {
      const card = await admin.getCard(appNs.name, 'named');
      return condition(card, 'Signed')?.status === 'True' ? card : undefined;
    });
    expect(Date.now() - created).toBeLessThan(30_000);
    expect(signed.status?.signatures).toEqual([{ kid: 'n1', alg: 'ES256' }]);
    // The other Secret exists but is not one the operator may read: not found, from where it stands.
    const unnamed = await admin.getCard(appNs.name, 'unnamed');
    expect(condition(unnamed, 'Signed')?.reason).toBe('SigningKeyNotFound');
    expect(operator.lines.filter((l) => /forbidden|\b403\b/i.test(l))).toEqual([]);
  });
});
