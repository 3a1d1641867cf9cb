/**
 * The chart's catalog server on the real control plane: `helm install` with catalogServer enabled
 * into a namespace that enforces the `restricted` Pod Security Standard. Its Pods are admitted
 * (two replicas, no ServiceAccount token, read-only root), with a PodDisruptionBudget and a
 * Service; and the container's command line, exactly as the chart renders it, serves a
 * ClusterAgentCatalog the operator published, laid out as the kubelet projects the ConfigMaps.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rm } from 'node:fs/promises';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  PolicyV1Api,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { kubeletWrite, tempDir } from '../support/card-files.ts';
import { kubeconfigPath } from '../support/cluster.ts';
import { sampleCard, useOperatorInNamespace, waitFor } from '../support/operator.ts';
import { freePort } from '../support/ports.ts';
import { agentcardBin } from '../support/test-package.ts';
import { runTool } from '../support/tools.ts';
import { chartDir } from '../unit/helm/chart.ts';
import { useClusterLock } from '../support/cluster-lock.ts';

// Beside any file but the others of its family: see vitest.config.ts.
useClusterLock('cluster-catalogs');

let release: string;
let server: ChildProcess | undefined;
let dir: string | undefined;
const catalogName = () => `served-${ns.name.slice(-8)}`;
const helm = (args: string[]) => runTool('helm', args, { kubeconfig: kubeconfigPath(), timeoutMs: 120_000 });

// The operator publishes ClusterAgentCatalogs into the test namespace, which the chart's catalog
// server (installed there, in `before`) reads.
const { kc, api, ns } = useOperatorInNamespace('catalog-server', {
  catalogs: true,
  flags: (namespace) => ['--cluster-catalogs', '--operator-namespace', namespace],
  before: async () => {
    release = `cs-${ns.name.slice(-8)}`;
    await core.patchNamespace(
      {
        name: ns.name,
        body: [
          { op: 'add', path: '/metadata/labels/pod-security.kubernetes.io~1enforce', value: 'restricted' },
        ],
      },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    const installed = await helm([
      'install',
      release,
      chartDir,
      '--namespace',
      ns.name,
      // The CRDs were applied by the set-up (shared by every test file; not owned by this release).
      '--set',
      'crds.enabled=false',
      // The chart's nesting policy checks only this release's namespace: other files, running
      // beside this one, store deep AgentCards on purpose.
      '--set-json',
      `nestingPolicy.namespaceSelector={"matchLabels":{"kubernetes.io/metadata.name":"${ns.name}"}}`,
      '--set',
      'catalogServer.enabled=true',
      '--set',
      `catalogServer.catalog=${catalogName()}`,
      '--set',
      'catalogServer.partitions=4',
    ]);
    expect(installed.stderr).not.toMatch(/Error/);
    expect(installed.code).toBe(0);
  },
  after: async () => {
    server?.kill('SIGTERM');
    await custom
      .deleteClusterCustomObject({
        group: 'agentcard.dev',
        version: 'v1alpha1',
        plural: 'clusteragentcatalogs',
        name: catalogName(),
      })
      .catch(() => {});
    if (release) await helm(['uninstall', release, '--namespace', ns.name, '--wait']);
    if (dir) await rm(dir, { recursive: true, force: true });
  },
});
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const policy = kc.makeApiClient(PolicyV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);

describe('the chart catalog server', () => {
  it('runs 2 replicas that pass the restricted Pod Security Standard, without a ServiceAccount token, behind a PDB and a Service', async () => {
    const name = `${release}-agentcard-operator-catalog`;
    const deployment = await apps.readNamespacedDeployment({ name, namespace: ns.name });
    expect(deployment.spec?.replicas).toBe(2);
    const selector = Object.entries(deployment.spec!.selector.matchLabels!)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    // No scheduler or kubelet: the Pods stay Pending, but they exist only if admission let them in.
    const pods = await waitFor('2 catalog server Pods', async () => {
      const list = await core.listNamespacedPod({ namespace: ns.name, labelSelector: selector });
      return list.items.length >= 2 ? list.items : undefined;
    });
    const events = await core.listNamespacedEvent({ namespace: ns.name });
    expect(events.items.filter((e) => e.reason === 'FailedCreate').map((e) => e.message)).toEqual([]);
    for (const pod of pods) {
      expect(pod.spec?.automountServiceAccountToken).toBe(false);
      // The ServiceAccount admission plugin adds no token volume and no token mount.
      expect(pod.spec?.volumes?.map((v) => v.name)).toEqual(['catalog']);
      const container = pod.spec!.containers[0]!;
      expect(container.volumeMounts?.map((m) => m.mountPath)).toEqual(['/catalog']);
      expect(container.securityContext).toMatchObject({
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        runAsNonRoot: true,
      });
    }
    const pdb = await policy.readNamespacedPodDisruptionBudget({ name, namespace: ns.name });
    expect(pdb.spec?.minAvailable).toBe(1);
    const service = await core.readNamespacedService({ name, namespace: ns.name });
    expect(service.spec?.ports?.[0]).toMatchObject({ port: 80, targetPort: 'http' });
  });

  it("serves the operator's published catalog with the chart's command line", async () => {
    await api.createCard(ns.name, 'served', { card: sampleCard('3.1.0') });
    await custom.createClusterCustomObject({
      group: 'agentcard.dev',
      version: 'v1alpha1',
      plural: 'clusteragentcatalogs',
      body: {
        apiVersion: 'agentcard.dev/v1alpha1',
        kind: 'ClusterAgentCatalog',
        metadata: { name: catalogName() },
        spec: { publisher: 'example.com', host: { displayName: 'Served by the chart' } },
      },
    });
    const cm = await waitFor('the catalog ConfigMap with the card', async () => {
      const got = await api.getConfigMap(ns.name, `${catalogName()}-cluster-ai-catalog`);
      return got?.data?.['ai-catalog.json']?.includes(':served"') ? got : undefined;
    });
    // The projected volume, as the kubelet lays it out (partitions are optional and absent).
    dir = await tempDir('agentcard-catalog-server-');
    await kubeletWrite(dir, cm.data!);

    const deployment = await apps.readNamespacedDeployment({
      name: `${release}-agentcard-operator-catalog`,
      namespace: ns.name,
    });
    const args = deployment.spec!.template.spec!.containers[0]!.args!;
    expect(args).toEqual(['sidecar', '--dir=/catalog', '--port=8095', '--metrics-port=8096']);
    const [port, metricsPort] = [await freePort(), await freePort()];
    const local = args.map((a) =>
      a === '--dir=/catalog'
        ? `--dir=${dir}`
        : a.startsWith('--port=')
          ? `--port=${port}`
          : a.startsWith('--metrics-port=')
            ? `--metrics-port=${metricsPort}`
            : a,
    );
    server = spawn(process.execPath, [agentcardBin(), ...local, '--address=127.0.0.1'], {
      stdio: 'ignore',
      env: { ...process.env, KUBECONFIG: '' },
    });
    await waitFor(
      'the catalog server to be ready',
      async () => (await fetch(`http://127.0.0.1:${metricsPort}/readyz`).catch(() => undefined))?.ok,
    );
    const res = await fetch(`http://127.0.0.1:${port}/.well-known/ai-catalog.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/ai-catalog+json');
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(await res.text()).toBe(cm.data!['ai-catalog.json']);
    const page = await fetch(`http://127.0.0.1:${port}/`);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await page.text()).toContain('Served by the chart');
  });
});
