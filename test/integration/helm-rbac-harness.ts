/**
 * Harness of the RBAC tests (helm-rbac*.test.ts): the chart's RBAC proven with the real API
 * server's authorizer.
 *
 * The chart is installed; the operator then runs out of cluster with the command line of the
 * chart's Deployment and a TokenRequest token of the chart's ServiceAccount, through one cycle:
 * leader election, informers ready, an AgentCard signed with a key Secret, published, its
 * interfaces probed (a real @a2a-js/sdk agent on loopback), events, the serving summary of a
 * Pod that asks for the card, catalogs (an AgentCatalog, and in cluster-wide mode a
 * ClusterAgentCatalog published in the operator's namespace), a CatalogImport, and the admission webhook: its
 * certificate Secret, the caBundle, an AdmissionReview answered over HTTPS, and a certificate
 * replaced; then a second operator stands by (watching the Lease) until a silent holder's Lease
 * expires, and takes it over (see `cycle`).
 *
 * Sufficient: the cycle completes and the operator never got a 403.
 * Minimal: for every verb of every rule bound to the ServiceAccount, the same cycle with only
 * that verb removed fails (each cycle is bounded, and a 403 in the log ends it at once).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AdmissionregistrationV1Api,
  AppsV1Api,
  AuthorizationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  V1MicroTime,
  DiscoveryV1Api,
  EventsV1Api,
  RbacAuthorizationV1Api,
  type V1ClusterRole,
  type V1PolicyRule,
  type V1ResourceAttributes,
  type V1Role,
} from '@kubernetes/client-node';
import {
  createTestNamespace,
  kubeConfig,
  kubeConfigWithToken,
  kubeconfigPath,
  serviceAccountToken,
  type TestNamespace,
} from '../support/cluster.ts';
import { runTool } from '../support/tools.ts';
import { agentcardBin } from '../support/test-package.ts';
import { chartDir } from '../unit/helm/chart.ts';
import { installCatalogCrds, installImportCrd } from '../support/operator.ts';
import { startDemoAgent, type DemoAgent } from '../../operator/demo/echo-agent.ts';
import { generateSigningJwk } from '../../operator/card/keygen.ts';
import { freePort } from '../support/ports.ts';

const kc = kubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const apps = kc.makeApiClient(AppsV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
const authz = kc.makeApiClient(AuthorizationV1Api);
const coordination = kc.makeApiClient(CoordinationV1Api);
const eventsApi = kc.makeApiClient(EventsV1Api);
const admission = kc.makeApiClient(AdmissionregistrationV1Api);
const discovery = kc.makeApiClient(DiscoveryV1Api);

/** One successful cycle takes several seconds; a failing one is cut off here. */
const CYCLE_TIMEOUT_MS = 30_000;

let opNs: TestNamespace;
let appNs: TestNamespace;
let release: string;
let fullname: string;
let work: string;
let tokenKubeconfig: string;
let operatorArgs: string[];
let agent: DemoAgent;
let cycleNo = 0;
let namespacedMode = false;
/** The chart's ServiceAccount, as the authorizer names it. */
let serviceAccount: { user: string; groups: string[] };

function helm(args: string[]) {
  return runTool('helm', args, { kubeconfig: kubeconfigPath(), timeoutMs: 120_000 });
}

/**
 * Installs the chart (cluster-wide, or `namespaced`: watching only the app namespace with Roles),
 * and gets a token of its ServiceAccount. One harness per test file (vitest isolates modules).
 */
export async function setUp(opts: { namespaced?: boolean } = {}): Promise<{ release: string }> {
  namespacedMode = opts.namespaced === true;
  opNs = await createTestNamespace('rbac-operator');
  appNs = await createTestNamespace('rbac-app');
  release = `rb-${opNs.name.slice(-8)}`;
  fullname = `${release}-agentcard-operator`;
  // The CRDs are shared by every test file on the control plane: applied here, not owned by a
  // release (helm-crds.test.ts covers the chart's own CRD lifecycle).
  await installCatalogCrds(kc);
  await installImportCrd(kc);
  const values = ['--set', 'crds.enabled=false'];
  if (opts.namespaced) values.push('--set', `watchNamespaces={${appNs.name}}`);
  const installed = await helm(['install', release, chartDir, '--namespace', opNs.name, ...values]);
  if (installed.code !== 0) throw new Error(`helm install failed: ${installed.stderr}`);

  // The operator's command line exactly as the chart's Deployment has it.
  const deployment = await apps.readNamespacedDeployment({ name: fullname, namespace: opNs.name });
  const container = deployment.spec!.template.spec!.containers.find((c) => c.name === 'operator')!;
  operatorArgs = container.args ?? [];
  const saName = deployment.spec!.template.spec!.serviceAccountName!;
  serviceAccount = {
    user: `system:serviceaccount:${opNs.name}:${saName}`,
    groups: ['system:serviceaccounts', `system:serviceaccounts:${opNs.name}`, 'system:authenticated'],
  };

  work = mkdtempSync(join(tmpdir(), 'agentcard-rbac-'));
  const token = await serviceAccountToken(opNs.name, saName, { expirationSeconds: 3600 });
  tokenKubeconfig = join(work, 'kubeconfig');
  writeFileSync(tokenKubeconfig, kubeConfigWithToken(token).exportConfig(), { mode: 0o600 });
  agent = await startDemoAgent();
  return { release };
}

export async function tearDown(): Promise<void> {
  await agent?.close();
  for (let n = 1; n <= cycleNo; n++) {
    await deleteIfExists(() =>
      custom.deleteClusterCustomObject({
        ...CATALOGS,
        plural: 'clusteragentcatalogs',
        name: clusterCatalog(n),
      }),
    );
  }
  if (release) await helm(['uninstall', release, '--namespace', opNs.name]);
  await appNs?.cleanup();
  await opNs?.cleanup();
  if (work) rmSync(work, { recursive: true, force: true });
}

export type CycleResult = { ok: true } | { ok: false; reason: string };

const CATALOGS = { group: 'agentcard.dev', version: 'v1alpha1' };
const clusterCatalog = (n: number) => `rbac-${release}-${n}`;
const catalogReady = (obj: unknown) =>
  (
    obj as { status?: { conditions?: { type: string; status: string }[]; entries?: number } }
  ).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

/** Replaces `--name=value` flags of the chart's command line; appends the rest. */
function withFlags(args: string[], flags: Record<string, string | null>): string[] {
  const out = args.filter((a) => !Object.keys(flags).some((f) => a === `--${f}` || a.startsWith(`--${f}=`)));
  for (const [f, v] of Object.entries(flags)) if (v !== null) out.push(v === '' ? `--${f}` : `--${f}=${v}`);
  return out;
}

/** An operator process on the ServiceAccount's token, with the chart's command line. */
type OperatorRun = {
  webhookPort: number;
  /** Polls `check` until true; fails on a 403 in the log, an exit, or the cycle's deadline. */
  until(what: string, check: () => Promise<boolean>): Promise<void>;
  stop(): Promise<void>;
};

async function startOperator(identity: string, deadline: number): Promise<OperatorRun> {
  const [metricsPort, webhookPort] = [await freePort(), await freePort()];
  const args = withFlags(operatorArgs.slice(1), {
    kubeconfig: tokenKubeconfig,
    'metrics-port': String(metricsPort),
    'bind-address': '127.0.0.1',
    'webhook-port': String(webhookPort),
    namespace: appNs.name,
    'probe-allow-cidr': '127.0.0.1/32',
    // The cycles test RBAC, not the webhook's drain: stop at once rather than 5 s after SIGTERM
    // per cycle (stop() sends SIGKILL after 10 s).
    'webhook-shutdown-delay': '0',
  });
  let log = '';
  const child: ChildProcess = spawn(process.execPath, [agentcardBin(), 'operator', ...args], {
    env: { ...process.env, POD_NAMESPACE: opNs.name, POD_NAME: identity, KUBECONFIG: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (b: Buffer) => (log += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (log += b.toString()));
  const run: OperatorRun = {
    webhookPort,
    until: async (what, check) => {
      for (;;) {
        const forbidden = log.split('\n').find((l) => /\b403\b|forbidden/i.test(l));
        if (forbidden) throw new Error(`403 while waiting for ${what}: ${forbidden.slice(0, 300)}`);
        if (child.exitCode !== null)
          throw new Error(`operator exited (${child.exitCode}) before ${what}: ${log.slice(-500)}`);
        if (await check().catch(() => false)) return;
        if (Date.now() > deadline)
          throw new Error(`timed out waiting for ${what}; operator log: ${log.slice(-400)}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    },
    stop: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null) return done();
        child.once('exit', () => done());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
      }),
  };
  try {
    await run.until('/readyz', async () => (await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).ok);
  } catch (err) {
    // Never leave an operator behind: it would hold the Lease in the next cycle.
    await run.stop();
    throw err;
  }
  return run;
}

const LEASE = 'agentcard-operator';
const readLease = () => coordination.readNamespacedLease({ name: LEASE, namespace: opNs.name });

/** How long the silent replica's Lease lasts: long enough for a standby to open its watch. */
const SILENT_LEASE_SECONDS = 2;

/** Writes the Lease as renewed just now by `holder`, which will not renew it again. */
async function holdLeaseAsSilentReplica(holder: string, seconds: number): Promise<void> {
  const lease = await readLease();
  const now = new V1MicroTime();
  await coordination.replaceNamespacedLease({
    name: LEASE,
    namespace: opNs.name,
    body: {
      ...lease,
      spec: {
        ...lease.spec,
        holderIdentity: holder,
        leaseDurationSeconds: seconds,
        acquireTime: now,
        renewTime: now,
      },
    },
  });
}
const webhookSecret = () => `${fullname}-webhook-tls`;
const readWebhookSecret = () => core.readNamespacedSecret({ name: webhookSecret(), namespace: opNs.name });

/** The webhook's CA from its Secret is the caBundle of the chart's MutatingWebhookConfiguration. */
async function caBundleInstalled(): Promise<boolean> {
  const bundle = (await readWebhookSecret()).data?.['ca-bundle.crt'];
  const mwc = await admission.readMutatingWebhookConfiguration({ name: fullname });
  return Boolean(bundle) && mwc.webhooks?.every((w) => w.clientConfig.caBundle === bundle) === true;
}

/**
 * One reconcile + probe + webhook cycle with the ServiceAccount's token, from a clean slate for
 * everything the operator creates once (Lease, webhook Secret), so every verb is exercised:
 *
 * 1. An operator starts: it creates and renews the Lease, creates the webhook's CA and serving
 *    certificate Secret and patches the caBundle, answers an AdmissionReview over HTTPS the way
 *    the API server sends it (trusting that caBundle, for the Service's name), reconciles a
 *    signed AgentCard to Ready (its interfaces probed) with an event, and reports the Pod that
 *    asks for the card in status.serving; and judges a second card's interface, the cluster IP
 *    of a selector Service of the namespace, by the probes' namespace rule (Pods by IP,
 *    Services by cluster IP, the Service's EndpointSlices and selected Pods): a hand-made
 *    EndpointSlice makes it refuse the address, so no packet leaves the machine.
 * 2. The webhook Secret is spoiled and a second operator starts: it takes the released Lease
 *    over, and replaces the Secret with a good certificate (what renewal does).
 */
export async function cycle(): Promise<CycleResult> {
  const n = ++cycleNo;
  const card = `card-${n}`;
  await deleteIfExists(() => coordination.deleteNamespacedLease({ name: LEASE, namespace: opNs.name }));
  await deleteIfExists(() => core.deleteNamespacedSecret({ name: webhookSecret(), namespace: opNs.name }));
  const deadline = Date.now() + CYCLE_TIMEOUT_MS;
  let op: OperatorRun | undefined;
  try {
    op = await startOperator(`rbac-${n}-a`, deadline);
    let acquired = 0;
    await op.until('the leader Lease', async () => {
      const lease = await readLease();
      acquired = new Date(lease.spec?.acquireTime ?? 0).getTime();
      return Boolean(lease.spec?.holderIdentity?.startsWith(`rbac-${n}-a`));
    });
    await op.until('the webhook certificate and caBundle', caBundleInstalled);
    await admissionReview(op.webhookPort, card);

    // Not labelled agentcard.dev/signing-key, so the controller reads it by name (GET) besides
    // running its informer for labelled ones (LIST, WATCH).
    const jwk = await generateSigningJwk('ES256', `rbac-${n}`);
    await core.createNamespacedSecret({
      namespace: appNs.name,
      body: { metadata: { name: `${card}-key` }, stringData: { 'key.jwk': JSON.stringify(jwk) } },
    });
    await custom.createNamespacedCustomObject({
      group: 'agentcard.dev',
      version: 'v1alpha1',
      plural: 'agentcards',
      namespace: appNs.name,
      body: agentCardManifest(card),
    });
    // A Pod that asks for the card (the API server cannot reach an out-of-cluster webhook here,
    // so it is created without the sidecar): the controller must count it.
    await core.createNamespacedPod({
      namespace: appNs.name,
      body: {
        metadata: { name: `${card}-pod`, annotations: { 'agentcard.dev/inject': card } },
        spec: { containers: [{ name: 'agent', image: 'registry.example.com/agent:1' }] },
      },
    });
    await op.until('Ready=True and the Pod in status.serving', async () => {
      const obj = (await custom.getNamespacedCustomObject({
        group: 'agentcard.dev',
        version: 'v1alpha1',
        plural: 'agentcards',
        namespace: appNs.name,
        name: card,
      })) as {
        status?: { conditions?: { type: string; status: string }[]; serving?: { podsRequesting?: number } };
      };
      const ready = obj.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
      return ready && (obj.status?.serving?.podsRequesting ?? 0) >= 1;
    });
    // The namespace rule's lookups, on the same token.
    const service = await core.createNamespacedService({
      namespace: appNs.name,
      body: {
        metadata: { name: `${card}-svc` },
        spec: { selector: { app: `${card}-agent` }, ports: [{ port: 80 }] },
      },
    });
    await discovery.createNamespacedEndpointSlice({
      namespace: appNs.name,
      body: {
        metadata: { name: `${card}-svc-by-hand`, labels: { 'kubernetes.io/service-name': `${card}-svc` } },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['192.0.2.10'] }],
        ports: [{ port: 80 }],
      },
    });
    const inCluster = agentCardManifest(`${card}-in-ns`);
    inCluster.spec.card.supportedInterfaces = [
      { url: `http://${service.spec!.clusterIP}/`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
    ];
    inCluster.spec.signing.keys[0]!.secretRef.name = `${card}-key`;
    await custom.createNamespacedCustomObject({
      group: 'agentcard.dev',
      version: 'v1alpha1',
      plural: 'agentcards',
      namespace: appNs.name,
      body: inCluster,
    });
    await op.until("the namespace rule's verdict on a Service's cluster IP", async () => {
      const obj = (await custom.getNamespacedCustomObject({
        group: 'agentcard.dev',
        version: 'v1alpha1',
        plural: 'agentcards',
        namespace: appNs.name,
        name: `${card}-in-ns`,
      })) as { status?: { interfaces?: { reason: string; message: string }[] } };
      const probed = obj.status?.interfaces?.[0];
      return (
        probed?.reason === 'Blocked' &&
        probed.message.includes(`EndpointSlice ${appNs.name}/${card}-svc-by-hand`)
      );
    });
    // A card that is not Ready would keep the catalog below from being Ready.
    await custom.deleteNamespacedCustomObject({
      group: 'agentcard.dev',
      version: 'v1alpha1',
      plural: 'agentcards',
      namespace: appNs.name,
      name: `${card}-in-ns`,
    });
    await op.until('the published ConfigMap', async () => {
      const cm = await core.readNamespacedConfigMap({ name: `${card}-agent-card`, namespace: appNs.name });
      return Boolean(cm.data?.['agent-card.json']);
    });
    // Catalogs: an AgentCatalog of the app namespace and, in cluster-wide mode, a
    // ClusterAgentCatalog, which publishes in the operator's namespace (read by a LIST there).
    await custom.createNamespacedCustomObject({
      ...CATALOGS,
      plural: 'agentcatalogs',
      namespace: appNs.name,
      body: {
        apiVersion: 'agentcard.dev/v1alpha1',
        kind: 'AgentCatalog',
        metadata: { name: `catalog-${n}` },
        spec: {},
      },
    });
    await op.until('the AgentCatalog Ready and published', async () => {
      const obj = await custom.getNamespacedCustomObject({
        ...CATALOGS,
        plural: 'agentcatalogs',
        namespace: appNs.name,
        name: `catalog-${n}`,
      });
      const cm = await core.readNamespacedConfigMap({
        name: `catalog-${n}-ai-catalog`,
        namespace: appNs.name,
      });
      return catalogReady(obj) && Boolean(cm.data?.['ai-catalog.json']?.includes(`:${card}"`));
    });
    if (!namespacedMode) {
      await custom.createClusterCustomObject({
        ...CATALOGS,
        plural: 'clusteragentcatalogs',
        body: {
          apiVersion: 'agentcard.dev/v1alpha1',
          kind: 'ClusterAgentCatalog',
          metadata: { name: clusterCatalog(n) },
          spec: {},
        },
      });
      await op.until('the ClusterAgentCatalog Ready and published', async () => {
        const obj = await custom.getClusterCustomObject({
          ...CATALOGS,
          plural: 'clusteragentcatalogs',
          name: clusterCatalog(n),
        });
        const cm = await core.readNamespacedConfigMap({
          name: `${clusterCatalog(n)}-cluster-ai-catalog`,
          namespace: opNs.name,
        });
        return catalogReady(obj) && Boolean(cm.data?.['ai-catalog.json']?.includes(`:${card}"`));
      });
    }
    // A CatalogImport: watched, its status written, its store ConfigMap published (its trust
    // ConfigMap is missing, so nothing is fetched: the status says why).
    await custom.createNamespacedCustomObject({
      group: 'agentcard.dev',
      version: 'v1alpha1',
      plural: 'catalogimports',
      namespace: appNs.name,
      body: {
        apiVersion: 'agentcard.dev/v1alpha1',
        kind: 'CatalogImport',
        metadata: { name: `import-${n}` },
        spec: {
          url: 'https://remote.example/.well-known/ai-catalog.json',
          trust: {
            trustBundle: { configMap: { name: `import-${n}-ca`, key: 'ca.crt' } },
            identities: ['spiffe://remote.example/*'],
          },
        },
      },
    });
    await op.until('the CatalogImport status and store', async () => {
      const obj = (await custom.getNamespacedCustomObject({
        group: 'agentcard.dev',
        version: 'v1alpha1',
        plural: 'catalogimports',
        namespace: appNs.name,
        name: `import-${n}`,
      })) as { status?: { conditions?: { type: string; reason: string }[] } };
      const accepted = obj.status?.conditions?.find((c) => c.type === 'Accepted');
      const store = await core.readNamespacedConfigMap({
        name: `import-${n}-imported-0`,
        namespace: appNs.name,
      });
      return accepted?.reason === 'TrustPolicyUnavailable' && store !== undefined;
    });
    await op.until('an event about the AgentCard', async () => {
      const list = await eventsApi.listNamespacedEvent({ namespace: appNs.name });
      return list.items.some((e) => e.regarding?.name === card && e.regarding.kind === 'AgentCard');
    });
    // The leader renews its Lease every retry period (2 s): wait for one renewal.
    await op.until('a renewal of the Lease', async () => {
      const lease = await readLease();
      return new Date(lease.spec?.renewTime ?? 0).getTime() > acquired + 500;
    });
    await op.stop();

    const spoiled = await readWebhookSecret();
    await core.replaceNamespacedSecret({
      name: webhookSecret(),
      namespace: opNs.name,
      body: { ...spoiled, data: { ...spoiled.data, 'tls.crt': Buffer.from('spoiled').toString('base64') } },
    });
    // The next operator finds the Lease held by a replica that has stopped renewing, so it stands
    // by first, watching the Lease (list and watch on it), and takes it over at its expiry.
    await holdLeaseAsSilentReplica(`rbac-${n}-silent`, SILENT_LEASE_SECONDS);
    op = await startOperator(`rbac-${n}-b`, deadline);
    await op.until('the Lease taken over', async () =>
      Boolean((await readLease()).spec?.holderIdentity?.startsWith(`rbac-${n}-b`)),
    );
    await op.until('the webhook Secret replaced with a good certificate', async () => {
      const crt = (await readWebhookSecret()).data?.['tls.crt'];
      return Boolean(crt) && Buffer.from(crt!, 'base64').toString().includes('BEGIN CERTIFICATE');
    });
    await op.until('the caBundle matching it', caBundleInstalled);
    return { ok: true };
  } catch (err) {
    return { ok: false, reason: err instanceof Error ? err.message : String(err) };
  } finally {
    await op?.stop();
  }
}

/** Sends the webhook an AdmissionReview as the API server does, and checks the sidecar patch. */
async function admissionReview(port: number, card: string): Promise<void> {
  const ca = Buffer.from((await readWebhookSecret()).data!['ca-bundle.crt']!, 'base64').toString();
  const body = JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: randomUUID(),
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      namespace: appNs.name,
      operation: 'CREATE',
      userInfo: { username: 'system:serviceaccount:kube-system:replicaset-controller' },
      object: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          generateName: `${card}-`,
          namespace: appNs.name,
          annotations: { 'agentcard.dev/inject': card },
        },
        spec: { containers: [{ name: 'agent', image: 'registry.example.com/agent:1' }] },
      },
    },
  });
  const answer = await new Promise<string>((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path: '/mutate-pods',
        method: 'POST',
        ca,
        servername: `${fullname}-webhook.${opNs.name}.svc`,
        headers: { 'Content-Type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.on('data', (b: Buffer) => (text += b.toString()));
        res.on('end', () =>
          res.statusCode === 200 ? resolve(text) : reject(new Error(`webhook ${res.statusCode}: ${text}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
  const response = (JSON.parse(answer) as { response: { allowed: boolean; patch?: string } }).response;
  const patch = Buffer.from(response.patch ?? '', 'base64').toString();
  if (!response.allowed || !patch.includes('agentcard-sidecar'))
    throw new Error(`no sidecar in the webhook's answer: ${answer}`);
}

function agentCardManifest(name: string) {
  const iface = (url: string, protocolBinding: string) => ({ url, protocolBinding, protocolVersion: '1.0' });
  return {
    apiVersion: 'agentcard.dev/v1alpha1',
    kind: 'AgentCard',
    metadata: { name },
    spec: {
      card: {
        name: 'RBAC test agent',
        description: 'An echo agent that the RBAC test probes on all three bindings',
        version: '1.0.0',
        supportedInterfaces: [
          iface(agent.jsonrpc, 'JSONRPC'),
          iface(agent.rest, 'HTTP+JSON'),
          iface(agent.grpc, 'GRPC'),
        ],
        capabilities: {},
        defaultInputModes: ['text/plain'],
        defaultOutputModes: ['text/plain'],
        skills: [{ id: 'echo', name: 'Echo', description: 'Echoes the message', tags: ['echo'] }],
      },
      signing: { keys: [{ secretRef: { name: `${name}-key`, key: 'key.jwk' } }] },
    },
  };
}

async function deleteIfExists(fn: () => Promise<unknown>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    if ((err as { code?: number }).code !== 404) throw err;
  }
}

export type BoundRole =
  | { kind: 'ClusterRole'; name: string; read: () => Promise<V1ClusterRole> }
  | { kind: 'Role'; name: string; namespace: string; read: () => Promise<V1Role> };

/** The (Cluster)Roles the chart binds to its ServiceAccount. */
export async function boundRoles(): Promise<BoundRole[]> {
  const out: BoundRole[] = [];
  for (const b of (await rbac.listClusterRoleBinding()).items) {
    if (b.roleRef.name.startsWith(fullname) && b.subjects?.some((s) => s.namespace === opNs.name)) {
      const name = b.roleRef.name;
      out.push({ kind: 'ClusterRole', name, read: () => rbac.readClusterRole({ name }) });
    }
  }
  for (const namespace of [opNs.name, appNs.name]) {
    for (const b of (await rbac.listNamespacedRoleBinding({ namespace })).items) {
      if (!b.subjects?.some((x) => x.kind === 'ServiceAccount' && x.namespace === opNs.name)) continue;
      const name = b.roleRef.name;
      out.push({ kind: 'Role', name, namespace, read: () => rbac.readNamespacedRole({ name, namespace }) });
    }
  }
  return out;
}

export async function writeRules(role: BoundRole, rules: V1PolicyRule[]): Promise<void> {
  const current = await role.read();
  if (role.kind === 'ClusterRole') {
    await rbac.replaceClusterRole({ name: role.name, body: { ...current, rules } });
  } else {
    await rbac.replaceNamespacedRole({
      name: role.name,
      namespace: role.namespace,
      body: { ...current, rules },
    });
  }
  await authorizerSees(role, current.rules ?? [], rules);
}

/** What rules grant, one SubjectAccessReview's attributes per verb, resource and group. */
function grants(rules: V1PolicyRule[], namespace: string | undefined): Map<string, V1ResourceAttributes> {
  const out = new Map<string, V1ResourceAttributes>();
  for (const rule of rules) {
    for (const group of rule.apiGroups ?? []) {
      for (const path of rule.resources ?? []) {
        const [resource, subresource] = path.split('/');
        for (const verb of rule.verbs) {
          const attrs = { group, resource, subresource, verb, namespace, name: rule.resourceNames?.[0] };
          out.set(JSON.stringify(attrs), attrs);
        }
      }
    }
  }
  return out;
}

/**
 * Waits until the API server's authorizer, which reads RBAC from its own watch cache, answers
 * with the role's new rules: what they add is allowed, and what they take away is no longer
 * allowed by this role (a SubjectAccessReview's reason names the role that allowed it; another
 * role may still grant it).
 */
async function authorizerSees(role: BoundRole, before: V1PolicyRule[], after: V1PolicyRule[]): Promise<void> {
  const namespace = role.kind === 'Role' ? role.namespace : undefined;
  const [was, is] = [grants(before, namespace), grants(after, namespace)];
  const added = [...is].filter(([key]) => !was.has(key)).map(([, attrs]) => attrs);
  const removed = [...was].filter(([key]) => !is.has(key)).map(([, attrs]) => attrs);
  const byThisRole = `${role.kind} "${role.name}"`;
  const review = async (attrs: V1ResourceAttributes) =>
    (
      await authz.createSubjectAccessReview({
        body: { spec: { ...serviceAccount, resourceAttributes: attrs } },
      })
    ).status!;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const stale: string[] = [];
    for (const attrs of added)
      if (!(await review(attrs)).allowed) stale.push(`not yet: ${JSON.stringify(attrs)}`);
    for (const attrs of removed) {
      const status = await review(attrs);
      if (status.allowed && status.reason?.includes(byThisRole))
        stale.push(`still: ${JSON.stringify(attrs)}`);
    }
    if (stale.length === 0) return;
    if (Date.now() > deadline)
      throw new Error(`the authorizer did not take the new rules of ${byThisRole}: ${stale.join('; ')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function describeRule(rule: V1PolicyRule): string {
  const groups = (rule.apiGroups ?? []).map((g) => g || 'core').join(',');
  const names = rule.resourceNames?.length ? ` (${rule.resourceNames.join(',')})` : '';
  return `${rule.verbs.join(',')} ${rule.resources?.join(',')} [${groups}]${names}`;
}

/** Each way to take one thing away from a rule: a verb, a resource, an API group (null: nothing left). */
export function narrowings(rule: V1PolicyRule): { what: string; rule: V1PolicyRule | null }[] {
  const out: { what: string; rule: V1PolicyRule | null }[] = [];
  const without = <T>(list: T[], item: T) => list.filter((x) => x !== item);
  const fields = [
    ['verb', 'verbs'],
    ['resource', 'resources'],
    ['API group', 'apiGroups'],
  ] as const;
  for (const [label, field] of fields) {
    const list = rule[field] ?? [];
    if (field !== 'verbs' && list.length < 2) continue;
    for (const item of list) {
      const rest = without(list, item);
      out.push({
        what: `${label} ${item || 'core'} of rule ${describeRule(rule)}`,
        rule: rest.length ? { ...rule, [field]: rest } : null,
      });
    }
  }
  return out;
}
