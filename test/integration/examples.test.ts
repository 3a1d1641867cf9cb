/**
 * Every file of examples/ as a user runs it: the commands of its first line (see
 * test/support/example-promises.ts), then `kubectl apply -f` of the file, in the namespace
 * `default` of a kubeconfig without a namespace, as the README does. The operator runs in this
 * process with its default probe policy and its webhook registered for that namespace.
 *
 * What is checked is what the first line promises, as far as this control plane can show it. It
 * has no node: Pods stay Pending, and there is no cluster DNS, so no probe can reach the demo
 * agent. For "Reaches Ready=True" the test checks every prerequisite of Ready but
 * InterfacesReachable (Accepted, Signed, Published) and that Ready waits on the interfaces only;
 * for "Reaches Available=True", that the Deployment's Pod passed admission (the restricted Pod
 * Security Standard, with the injected sidecar). On a cluster whose nodes run Pods, it waits for
 * the promised condition itself (`runsPods`). `npm run demo` (test/integration/demo.test.ts)
 * proves the same AgentCards Ready against the demo agent run as a local process, and
 * test/e2e/product.test.ts (the `node` project) applies every file the same way on the real node,
 * with the chart installed, and waits for each promised condition.
 *
 * Its own operator rather than the shared set-up (useOperatorInNamespace): it watches `default`
 * (where the README's commands apply) and a restricted namespace, with the default probe policy
 * and the webhook registered by URL, which one test namespace per file cannot express.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCA, issueServingCert } from '../../operator/webhook/certs.ts';
import { readPromises, type ExamplePromise } from '../support/example-promises.ts';
import { kubeConfig, kubeconfigPath, testNamespace } from '../support/cluster.ts';
import {
  Api,
  condition,
  installCrd,
  startOperator,
  waitFor,
  type AgentCardLive,
  type InProcessOperator,
} from '../support/operator.ts';
import { repoRoot } from '../support/paths.ts';
import { agentcardBin } from '../support/test-package.ts';
import { freePort } from '../support/ports.ts';
import { kubectlPath, runTool } from '../support/tools.ts';
import { registerPodWebhook } from '../support/webhook-config.ts';

/** The examples' interface URLs name the namespace `default`; the README applies them there. */
const NAMESPACE = 'default';
const kc = kubeConfig();
const api = new Api(kc);
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const promises = readPromises(repoRoot);
/** The Secrets the first lines make (keygen --secret NAME). */
const SIGNING_SECRETS = promises.flatMap((p) =>
  p.kind === 'reaches' ? [...p.after.join('; ').matchAll(/--secret (\S+)/g)].map((m) => m[1]!) : [],
);
/** A namespace that enforces the restricted Pod Security Standard, for demo-agent.yaml. */
const restricted = testNamespace('examples-restricted', kc);
/** The operator's own namespace, whose Pods its webhook never touches (it defaults to `default`). */
const operatorNs = testNamespace('examples-operator', kc);

let op: InProcessOperator;
let unregister: (() => Promise<void>) | undefined;
let work: string;
let userKubeconfig: string;
let runsPods = false;

/**
 * The test's kubeconfig without a namespace in its context (kubectl then uses `default`), and a
 * PATH where `kubectl` is the control plane's.
 */
function userEnv(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    KUBECONFIG: userKubeconfig,
    PATH: `${dirname(kubectlPath())}:${process.env.PATH ?? ''}`,
  };
}

/**
 * Runs one command of a first line with sh, from the repository root. `npx agentcard` becomes
 * the package's bin/agentcard.js (staged as it ships: test-package.ts) on the Node.js running the
 * tests: npx would run the same command after a lookup that adds nothing here.
 */
function sh(command: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const line = command.replaceAll('npx agentcard ', `"${process.execPath}" "${agentcardBin()}" `);
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', line], {
      cwd: repoRoot,
      env: userEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function run(command: string): Promise<string> {
  const r = await sh(command);
  if (r.code !== 0) throw new Error(`${command}: exit ${r.code}: ${(r.stderr || r.stdout).trim()}`);
  // A warning here (deprecated API, a Pod Security violation) is a defect of the example.
  expect(r.stderr, command).toBe('');
  return r.stdout;
}

type Doc = { kind?: string; metadata?: { name?: string } };
const docsOf = (file: string): Doc[] =>
  parseAllDocuments(readFileSync(join(repoRoot, file), 'utf8'))
    .map((d) => d.toJS() as Doc | null)
    .filter((d): d is Doc => !!d?.kind);

/** Whether some node of this cluster is Ready (and so runs the Pods of the examples). */
async function clusterRunsPods(): Promise<boolean> {
  const nodes = await core.listNode();
  return nodes.items.some((n) =>
    n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  );
}

beforeAll(async () => {
  await installCrd(kc);
  await removeExamples();
  runsPods = await clusterRunsPods();
  work = mkdtempSync(join(tmpdir(), 'agentcard-examples-'));
  // The admin kubeconfig as a user has it: the same cluster and credentials, no namespace.
  userKubeconfig = join(work, 'kubeconfig');
  writeFileSync(userKubeconfig, readFileSync(kubeconfigPath(), 'utf8').replace(/^\s+namespace: .*$/gm, ''));

  await restricted.create();
  await operatorNs.create();
  await core.patchNamespace({
    name: restricted.name,
    body: [
      {
        op: 'add',
        path: '/metadata/labels/pod-security.kubernetes.io~1enforce',
        value: 'restricted',
      },
    ],
  });

  // The webhook as the chart registers it, by URL on loopback with a certificate made here (the
  // part cert-manager plays); the sidecar image is the chart's default.
  const port = await freePort();
  const certDir = join(work, 'webhook-tls');
  const ca = await createCA(new Date(), 'examples test CA');
  const serving = await issueServingCert(ca, ['127.0.0.1'], new Date());
  mkdirSync(certDir);
  writeFileSync(join(certDir, 'tls.crt'), serving.cert);
  writeFileSync(join(certDir, 'tls.key'), serving.key, { mode: 0o600 });
  op = await startOperator(
    NAMESPACE,
    [
      `--namespace=${restricted.name}`,
      `--operator-namespace=${operatorNs.name}`,
      `--webhook-port=${port}`,
      '--webhook-cert-mode=cert-manager',
      `--webhook-cert-dir=${certDir}`,
      '--sidecar-image=ghcr.io/agentcard-dev/agentcard-operator:0.1.0',
    ],
    // The probes run with the default address policy (no --probe-allow-cidr), as installed.
    { probes: 'default' },
  ).catch(async (err: unknown) => {
    await restricted.cleanup();
    await operatorNs.cleanup();
    throw err;
  });
  unregister = await registerPodWebhook(kc, {
    name: `examples-test-${restricted.name}`,
    port,
    namespaces: [NAMESPACE, restricted.name],
    caPem: ca.cert,
  });
  // The API server picks a new webhook configuration up within moments; an installed chart's has
  // been there since the install. Wait until a dry-run Pod comes back mutated.
  await waitFor('the webhook to mutate Pods in default', async () => {
    const pod = await core.createNamespacedPod({
      namespace: NAMESPACE,
      dryRun: 'All',
      body: {
        metadata: { name: 'webhook-ready', annotations: { 'agentcard.dev/inject': 'webhook-ready' } },
        spec: { containers: [{ name: 'c', image: 'registry.example/c:1' }] },
      },
    });
    return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].some(
      (c) => c.name === 'agentcard-sidecar',
    );
  });
}, 120_000);

/** Deletes what the examples and their first lines make in `default` (before, in case a run broke off). */
async function removeExamples(): Promise<void> {
  for (const p of [...promises].reverse()) {
    await runTool(
      'kubectl',
      ['delete', '-n', NAMESPACE, '--ignore-not-found', '--wait=false', '-f', p.file],
      {
        kubeconfig: kubeconfigPath(),
      },
    ).catch(() => undefined);
  }
  for (const secret of SIGNING_SECRETS)
    await core.deleteNamespacedSecret({ namespace: NAMESPACE, name: secret }).catch(() => undefined);
}

afterAll(async () => {
  await removeExamples();
  await unregister?.();
  await op?.stop();
  await restricted.cleanup();
  await operatorNs.cleanup();
  if (work) rmSync(work, { recursive: true, force: true });
}, 120_000);

/** The commands already run, so a prerequisite two examples share is applied once. */
const done = new Set<string>();

async function applyAsWritten(p: ExamplePromise & { kind: 'reaches' }): Promise<void> {
  for (const command of p.after) {
    if (done.has(command)) continue;
    // Waiting for the demo agent's Pod to run needs a node; without one, the rest still applies.
    if (!runsPods && /^kubectl rollout status /.test(command)) continue;
    await run(command);
    done.add(command);
  }
  await run(`kubectl apply -f ${p.file}`);
}

async function checkAgentCard(name: string, signed: boolean): Promise<AgentCardLive> {
  const card = await waitFor(
    `AgentCard ${name} accepted, signed or unsigned as asked, published, and probed once`,
    async () => {
      const live = await api.getCard(NAMESPACE, name);
      const reach = condition(live, 'InterfacesReachable');
      return condition(live, 'Published')?.status === 'True' &&
        reach &&
        !['ProbesPending'].includes(reach.reason)
        ? live
        : undefined;
    },
    90_000,
  );
  expect(condition(card, 'Accepted')).toMatchObject({ status: 'True' });
  if (signed) expect(condition(card, 'Signed')).toMatchObject({ status: 'True' });
  else expect(condition(card, 'Signed')).toMatchObject({ status: 'False', reason: 'SigningNotConfigured' });
  expect(condition(card, 'Published')).toMatchObject({ status: 'True' });
  const cm = await api.getConfigMap(NAMESPACE, `${name}-agent-card`);
  expect(cm?.data?.['agent-card.json']).toBeTruthy();
  if (runsPods) {
    await waitFor(
      `AgentCard ${name} Ready`,
      async () => condition(await api.getCard(NAMESPACE, name), 'Ready')?.status === 'True',
      120_000,
    );
  } else {
    // No node: the demo agent never runs, so the interfaces are what Ready waits on, and only them.
    expect(condition(card, 'InterfacesReachable')?.status).not.toBe('True');
    expect(condition(card, 'Ready')).toMatchObject({ status: 'False' });
    expect(condition(card, 'Ready')?.reason).toBe(condition(card, 'InterfacesReachable')?.reason);
  }
  return card;
}

async function checkDeployment(name: string, namespace: string): Promise<void> {
  if (runsPods) {
    await waitFor(
      `Deployment ${name} Available`,
      async () => {
        const d = await apps.readNamespacedDeployment({ namespace, name });
        return d.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True');
      },
      180_000,
    );
    return;
  }
  // No node: the Pod exists (Pending) only if admission let it in, sidecar injected.
  const pod = await waitFor(
    `a Pod of Deployment ${name} in ${namespace}`,
    async () => {
      const pods = await core.listNamespacedPod({
        namespace,
        labelSelector: `app.kubernetes.io/name=${name}`,
      });
      return pods.items[0];
    },
    60_000,
  );
  const containers = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].map(
    (c) => c.name,
  );
  expect(containers).toContain('agent');
  expect(containers).toContain('agentcard-sidecar');
  const events = await core.listNamespacedEvent({ namespace });
  expect(events.items.filter((e) => e.reason === 'FailedCreate').map((e) => e.message)).toEqual([]);
}

describe('examples/, applied as their first line says', () => {
  const reaches = promises.filter((p): p is ExamplePromise & { kind: 'reaches' } => p.kind === 'reaches');
  // demo-agent.yaml first: the others apply it as their prerequisite anyway.
  reaches.sort(
    (a, b) => Number(b.file.endsWith('demo-agent.yaml')) - Number(a.file.endsWith('demo-agent.yaml')),
  );

  for (const p of reaches) {
    it(`${p.file} reaches ${p.condition}=True${runsPods ? '' : ' (all this control plane can show)'}`, async () => {
      await applyAsWritten(p);
      done.add(`kubectl apply -f ${p.file}`);
      for (const doc of docsOf(p.file)) {
        const name = doc.metadata!.name!;
        if (doc.kind === 'AgentCard') {
          const signed = /^\s+signing:/m.test(readFileSync(join(repoRoot, p.file), 'utf8'));
          await checkAgentCard(name, signed);
        }
        if (doc.kind === 'Deployment') await checkDeployment(name, NAMESPACE);
        if (doc.kind === 'Service') {
          const svc = await core.readNamespacedService({ namespace: NAMESPACE, name });
          expect(svc.spec?.clusterIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
          // Each named targetPort is a port the Pod has (agent-card: the injected sidecar's).
          expect(svc.spec?.ports?.map((port) => port.targetPort)).toEqual(['a2a', 'grpc', 'agent-card']);
        }
      }
    }, 240_000);
  }

  it('examples/demo-agent.yaml passes the restricted Pod Security Standard, sidecar included', async () => {
    const out = await run(`kubectl apply -n ${restricted.name} -f examples/demo-agent.yaml`);
    expect(out).toMatch(/deployment\.apps\/demo-agent created/);
    await checkDeployment('demo-agent', restricted.name);
  }, 120_000);

  for (const p of promises.filter((x): x is ExamplePromise & { kind: 'needs' } => x.kind === 'needs')) {
    it(`${p.file} needs ${p.needs.split(',')[0]}: the API server takes it, or refuses it for that need`, async () => {
      const r = await sh(`kubectl apply --dry-run=server -f ${p.file}`);
      const kinds = docsOf(p.file).map((d) => d.kind);
      if (kinds.includes('HTTPRoute')) {
        // The Gateway API CRDs are not on a plain cluster: exactly the first line's need.
        expect(p.needs).toMatch(/Gateway API CRDs/);
        expect(r.code).not.toBe(0);
        expect(r.stderr).toMatch(/no matches for kind "HTTPRoute"/);
      } else {
        expect(r.stderr).toBe('');
        expect(r.code).toBe(0);
        expect(r.stdout).toMatch(/created \(server dry run\)/);
      }
    });
  }
});
