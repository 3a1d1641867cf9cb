/**
 * cert-manager for the tests, as a real component: its CRDs (from the release's module, its hash
 * checked) and its controllers (`test/support/cert-manager/main.go`, which runs the controllers of
 * `github.com/cert-manager/cert-manager/pkg/controller` at a pinned version) against the test
 * control plane. The binary is built once per machine into the cache shared with the control plane.
 *
 * Each test file starts its own controller confined to its namespace, so files running side by
 * side never act on each other's Certificates; `caIssuer` bootstraps a CA Issuer the way
 * cert-manager's documentation does (a SelfSigned Issuer signs a CA Certificate, whose Secret backs
 * a CA Issuer), so every certificate the tests use is issued by cert-manager itself.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import { kubeConfig, kubeconfigPath } from './cluster.ts';
import { goModuleDir, goProgram } from './go-tools.ts';
import { runTool } from './tools.ts';

const SOURCE_DIR = join(import.meta.dirname, 'cert-manager');
const SOURCES = ['go.mod', 'go.sum', 'main.go'];

/** The cert-manager release whose controllers and CRDs the tests run (go.mod pins the same). */
export const CERT_MANAGER = {
  module: 'github.com/cert-manager/cert-manager',
  version: 'v1.21.2',
  h1: 'h1:UWgoYM+KLNtRlqmoWOKjKBOBUPVHeepQ6/ac3ERJW68=',
};

const GROUP = 'cert-manager.io';
const VERSION = 'v1';

/** The controller binary, built on first use under a key made of its sources. */
export function certManagerBinary(): Promise<string> {
  return goProgram({
    sourceDir: SOURCE_DIR,
    sources: SOURCES,
    cacheName: `cert-manager-${CERT_MANAGER.version}`,
    binName: 'cert-manager-controller',
    goflags: '-mod=mod',
    timeoutMs: 1_800_000, // cold, on 2 cores: several minutes
  });
}

/** Installs (server-side apply, idempotent) the release's CRDs and waits until they are Established. */
export async function installCertManagerCrds(kubeconfig = kubeconfigPath()): Promise<void> {
  const dir = join(
    await goModuleDir(CERT_MANAGER.module, CERT_MANAGER.version, CERT_MANAGER.h1),
    'deploy',
    'crds',
  );
  const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort();
  const kubectl = (args: string[]) => runTool('kubectl', args, { kubeconfig, timeoutMs: 120_000 });
  const args = ['apply', '--server-side', '--force-conflicts', '--field-manager=cert-manager-tests'];
  for (const file of files) args.push('-f', join(dir, file));
  const applied = await kubectl(args);
  if (applied.code !== 0) throw new Error(`installing cert-manager CRDs: ${applied.stderr}`);
  const names = ['certificates', 'certificaterequests', 'issuers', 'clusterissuers'].map(
    (p) => `crd/${p}.${GROUP}`,
  );
  const established = await kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...names]);
  if (established.code !== 0) throw new Error(`cert-manager CRDs not Established: ${established.stderr}`);
}

export interface CertManager {
  /** Where the controller's output goes. */
  logFile: string;
  stop(): Promise<void>;
}

/**
 * Installs the CRDs and starts cert-manager's controllers confined to `namespace`.
 * Resolves once the controllers said they started; rejects if the process exits first.
 */
export async function startCertManager(opts: { namespace: string; logFile: string }): Promise<CertManager> {
  const [bin] = await Promise.all([certManagerBinary(), installCertManagerCrds()]);
  const log = createWriteStream(opts.logFile, { flags: 'a' });
  const child: ChildProcess = spawn(
    bin,
    [`-kubeconfig=${kubeconfigPath()}`, `-namespace=${opts.namespace}`],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stderr!.pipe(log, { end: false });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      log.write(chunk);
      out += chunk.toString();
      if (out.includes('cert-manager controllers started')) {
        child.stdout!.off('data', onData);
        child.stdout!.pipe(log, { end: false });
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) =>
      reject(new Error(`cert-manager exited with ${code} before starting; see ${opts.logFile}`)),
    );
    child.once('error', reject);
  });
  return {
    logFile: opts.logFile,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
      log.end();
    },
  };
}

export interface CaIssuer {
  /** The name of the CA Issuer in the namespace. */
  name: string;
  /** The CA certificate (PEM) that signs what the Issuer issues: the trust bundle of the tests. */
  caPem: string;
}

/**
 * A CA Issuer in `namespace`, bootstrapped by cert-manager: a SelfSigned Issuer issues the CA
 * Certificate (`isCA`, ECDSA P-256), and a CA Issuer signs with its Secret.
 */
export async function caIssuer(
  namespace: string,
  opts: { name?: string; commonName?: string; kc?: KubeConfig; timeoutMs?: number } = {},
): Promise<CaIssuer> {
  const kc = opts.kc ?? kubeConfig();
  const name = opts.name ?? 'test-ca';
  const custom = kc.makeApiClient(CustomObjectsApi);
  const create = (plural: string, body: object) =>
    custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural, body });
  await create('issuers', {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'Issuer',
    metadata: { name: `${name}-selfsigned` },
    spec: { selfSigned: {} },
  });
  await create('certificates', {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'Certificate',
    metadata: { name: `${name}-root` },
    spec: {
      isCA: true,
      commonName: opts.commonName ?? `${name} root`,
      secretName: `${name}-root`,
      privateKey: { algorithm: 'ECDSA', size: 256 },
      issuerRef: { name: `${name}-selfsigned`, kind: 'Issuer', group: GROUP },
    },
  });
  await waitForCertificateReady(namespace, `${name}-root`, { kc, timeoutMs: opts.timeoutMs });
  await create('issuers', {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'Issuer',
    metadata: { name },
    spec: { ca: { secretName: `${name}-root` } },
  });
  await waitFor(
    async () => {
      const issuer = (await custom.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: 'issuers',
        name,
      })) as { status?: { conditions?: { type: string; status: string }[] } };
      return issuer.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    },
    opts.timeoutMs ?? 60_000,
    `Issuer ${namespace}/${name} Ready`,
  );
  const secret = await kc.makeApiClient(CoreV1Api).readNamespacedSecret({ name: `${name}-root`, namespace });
  return { name, caPem: Buffer.from(secret.data!['tls.crt']!, 'base64').toString() };
}

/** Waits until a Certificate is Ready=True; resolves with its status. */
export async function waitForCertificateReady(
  namespace: string,
  name: string,
  opts: { kc?: KubeConfig; timeoutMs?: number; revision?: number } = {},
): Promise<{ revision?: number; notAfter?: string }> {
  const custom = (opts.kc ?? kubeConfig()).makeApiClient(CustomObjectsApi);
  let status: { revision?: number; notAfter?: string; conditions?: { type: string; status: string }[] } = {};
  await waitFor(
    async () => {
      try {
        const cert = (await custom.getNamespacedCustomObject({
          group: GROUP,
          version: VERSION,
          namespace,
          plural: 'certificates',
          name,
        })) as { status?: typeof status };
        status = cert.status ?? {};
      } catch {
        return false; // not created yet
      }
      const ready = status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
      return ready && (opts.revision === undefined || (status.revision ?? 0) >= opts.revision);
    },
    opts.timeoutMs ?? 60_000,
    `Certificate ${namespace}/${name} Ready`,
  );
  return { revision: status.revision, notAfter: status.notAfter };
}

/**
 * Asks cert-manager to re-issue a Certificate now, as `cmctl renew` does: it sets the Issuing
 * condition, which the trigger controller honours as a manual renewal.
 */
export async function renewCertificate(namespace: string, name: string, kc = kubeConfig()): Promise<void> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const cert = (await custom.getNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace,
    plural: 'certificates',
    name,
  })) as { metadata: { generation?: number }; status?: { conditions?: object[] } };
  const conditions = (cert.status?.conditions ?? []).filter(
    (c) => (c as { type: string }).type !== 'Issuing',
  );
  conditions.push({
    type: 'Issuing',
    status: 'True',
    reason: 'ManuallyTriggered',
    message: 'Certificate re-issuance manually triggered',
    lastTransitionTime: new Date().toISOString(),
    observedGeneration: cert.metadata.generation,
  });
  await custom.patchNamespacedCustomObjectStatus(
    {
      group: GROUP,
      version: VERSION,
      namespace,
      plural: 'certificates',
      name,
      body: { status: { conditions } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
