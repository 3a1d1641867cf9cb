// Helpers for integration tests against the local control plane that the `integration`
// project's global setup starts: an admin KubeConfig, a namespace per test, and credentials of
// a ServiceAccount (from the TokenRequest API) to test what RBAC allows it.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, inject } from 'vitest';
import { kubeconfigFile } from '../controlplane/paths.ts';

/**
 * The admin kubeconfig file of the control plane (group system:masters): the one the global
 * setup provides, else this checkout's `.cluster/kubeconfig` (left by `npm run cluster:up`).
 */
export function kubeconfigPath(): string {
  return inject('kubeconfig') ?? kubeconfigFile;
}

/** A KubeConfig acting as the control plane's admin. */
export function kubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath());
  return kc;
}

/** A namespace for one test, with a random suffix, and a cleanup that deletes it (the namespace controller empties it). */
export interface TestNamespace {
  name: string;
  cleanup: () => Promise<void>;
}

export async function createTestNamespace(prefix: string, kc = kubeConfig()): Promise<TestNamespace> {
  const ns = testNamespace(prefix, kc);
  await ns.create();
  return ns;
}

/** A namespace for the whole file, created in its beforeAll and deleted in its afterAll. */
export function useTestNamespace(prefix: string): TestNamespace {
  const ns = testNamespace(prefix);
  beforeAll(() => ns.create());
  afterAll(() => ns.cleanup());
  return { name: ns.name, cleanup: ns.cleanup };
}

/**
 * A test namespace whose name (prefix and random suffix) is fixed now and which is created later:
 * a file-level fixture can hand out its name before its beforeAll runs.
 */
export function testNamespace(
  prefix: string,
  kc = kubeConfig(),
): TestNamespace & { create(): Promise<void> } {
  const base = prefix
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 50);
  const name = `${base || 'test'}-${randomBytes(4).toString('hex')}`;
  const core = kc.makeApiClient(CoreV1Api);
  return {
    name,
    create: async () => {
      await core.createNamespace({
        body: { metadata: { name, labels: { 'agentcard.dev/test-namespace': 'true' } } },
      });
    },
    cleanup: async () => {
      await core.deleteNamespace({ name }).catch((err: unknown) => {
        if ((err as { code?: number }).code !== 404) throw err;
      });
    },
  };
}

/**
 * A bound token of a ServiceAccount from the TokenRequest API (the account is created first if
 * it does not exist). `audiences` defaults to the apiserver's own.
 */
export async function serviceAccountToken(
  namespace: string,
  name: string,
  opts: { audiences?: string[]; expirationSeconds?: number; kc?: KubeConfig } = {},
): Promise<string> {
  const core = (opts.kc ?? kubeConfig()).makeApiClient(CoreV1Api);
  await core
    .createNamespacedServiceAccount({ namespace, body: { metadata: { name } } })
    .catch((err: unknown) => {
      if ((err as { code?: number }).code !== 409) throw err;
    });
  const res = await core.createNamespacedServiceAccountToken({
    namespace,
    name,
    body: {
      spec: {
        audiences: opts.audiences ?? [],
        expirationSeconds: opts.expirationSeconds ?? 3600,
      },
    },
  });
  const token = res.status?.token;
  if (!token) throw new Error(`TokenRequest for ${namespace}/${name} returned no token`);
  return token;
}

/** A KubeConfig for the same cluster that authenticates with a bearer token instead of the admin certificate. */
export function kubeConfigWithToken(token: string, base = kubeConfig()): KubeConfig {
  const cluster = base.getCurrentCluster();
  if (!cluster) throw new Error('the admin kubeconfig has no current cluster');
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'token-user', token }],
    contexts: [{ name: 'token', cluster: cluster.name, user: 'token-user' }],
    currentContext: 'token',
  });
  return kc;
}

/** A KubeConfig acting as ServiceAccount `namespace/name` (created if missing), through a TokenRequest token. */
export async function serviceAccountKubeConfig(namespace: string, name: string): Promise<KubeConfig> {
  return kubeConfigWithToken(await serviceAccountToken(namespace, name));
}

/**
 * Writes a KubeConfig to a new private file and returns its path, for a local process that takes
 * `--kubeconfig` (for example the operator acting as the Helm chart's ServiceAccount).
 */
export function saveKubeConfig(kc: KubeConfig): string {
  const file = join(mkdtempSync(join(tmpdir(), 'agentcard-kubeconfig-')), 'kubeconfig');
  writeFileSync(file, kc.exportConfig(), { mode: 0o600 });
  return file;
}
