/**
 * `npm run demo`: the whole operator on one machine. Where the machine allows it (root, the node
 * cluster's build), on the node cluster with real Pods (demo-node.ts); elsewhere, or with
 * `--local`, as local processes, with no kubelet and no container engine, as follows. Starts the local control plane, installs the CRD and a signing key, runs the
 * operator, a demo A2A agent and the well-known sidecar, applies examples/, and prints the
 * `kubectl get agentcards` table, the served card's URL and its verification. Runs until Ctrl-C
 * (or, with --once, exits after the last step) and stops everything it started.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { request as httpRequest } from 'node:http';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { down, up } from '../test/controlplane/control.ts';
import { kubeconfigFile } from '../test/controlplane/paths.ts';
import { runTool, type ToolResult } from '../test/support/tools.ts';
import { generateSigningJwk } from '../operator/card/keygen.ts';
import type { JWKS } from '../operator/card/verify.ts';
import { verifyCatalog } from '../operator/catalog/signature.ts';
import { createCA, issueServingCert } from '../operator/webhook/certs.ts';
import type { DemoAgentUrls } from '../operator/demo/echo-agent.ts';
import { chartNginxImage, haveNginx, startNginx } from './demo-card-server.ts';
import { ConfigMapVolume } from './demo-volume.ts';
import { prepareExamples } from './demo-examples.ts';
import { freePort } from '../test/support/ports.ts';

const repoRoot = resolve(fileURLToPath(import.meta.url), '..', '..');
const node = process.execPath;
const agentcardBin = join(repoRoot, 'bin', 'agentcard.js');

const USAGE = `usage: npm run demo [-- --once] [--namespace NS] [--node | --local]

  --once           exit after the last step instead of running until Ctrl-C
  --namespace NS   namespace for the examples (default agentcard-demo)
  --node           run on the node cluster (real Pods; needs root), fail if it cannot
  --local          run the operator, agent and sidecar as local processes
                   (default: --node where the machine allows it, else --local;
                   AGENTCARD_DEMO=node|local sets the default)
`;

class StepError extends Error {}
class UsageError extends Error {}

/** Things to undo, newest first, whatever happens. */
const cleanups: { what: string; run: () => Promise<void> }[] = [];
let logDir = '';
let failed = false;

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

let stepNo = 0;
let TOTAL_STEPS = 14;
async function step<T>(title: string, run: () => Promise<T>, done: (value: T) => string): Promise<T> {
  stepNo++;
  const started = Date.now();
  say(`[${stepNo}/${TOTAL_STEPS}] ${title} ...`);
  try {
    const value = await run();
    say(`      ok: ${done(value)} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    return value;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new StepError(`step ${stepNo}/${TOTAL_STEPS} "${title}" failed: ${message}`);
  }
}

async function kubectl(args: string[], input?: string): Promise<ToolResult> {
  const result = await runTool('kubectl', args, { kubeconfig: kubeconfigFile, input, timeoutMs: 180_000 });
  if (result.code !== 0) {
    throw new Error(
      `kubectl ${args.slice(0, 2).join(' ')}: ${(result.stderr || result.stdout).trim().split('\n').slice(-3).join(' / ')}`,
    );
  }
  return result;
}

/** Starts a child process with its output in logDir/<name>.log; registered for cleanup. */
async function startProcess(name: string, args: string[]): Promise<ChildProcess> {
  const { openSync, closeSync } = await import('node:fs');
  const log = openSync(join(logDir, `${name}.log`), 'a');
  const child = spawn(node, args, { cwd: repoRoot, stdio: ['ignore', 'pipe', log] });
  closeSync(log);
  cleanups.push({ what: `stop the ${name}`, run: () => stopProcess(child) });
  return child;
}

function stopProcess(child: ChildProcess): Promise<void> {
  return new Promise((done) => {
    if (child.exitCode !== null || child.signalCode !== null) return done();
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      done();
    });
    child.kill('SIGTERM');
  });
}

function logTail(name: string): string {
  try {
    return readFileSync(join(logDir, `${name}.log`), 'utf8')
      .trim()
      .split('\n')
      .slice(-3)
      .join(' / ');
  } catch {
    return '';
  }
}

/** Polls `url` until it answers 200, failing early if `child` exits. */
async function waitForHttp(
  url: string,
  child: ChildProcess,
  name: string,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`the ${name} exited with code ${child.exitCode}: ${logTail(name)}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await res.body?.cancel();
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`the ${name} did not answer ${url} within ${timeoutMs / 1000} s: ${logTail(name)}`);
}

async function main(argv: string[]): Promise<number> {
  let values: { once?: boolean; namespace?: string; help?: boolean; node?: boolean; local?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        once: { type: 'boolean' },
        namespace: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        node: { type: 'boolean' },
        local: { type: 'boolean' },
      },
    }));
  } catch (err) {
    throw new UsageError(`${err instanceof Error ? err.message : String(err)} (see npm run demo -- --help)`);
  }
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const once = values.once ?? process.env.AGENTCARD_DEMO_ONCE === '1';
  const namespace = values.namespace ?? 'agentcard-demo';
  const wanted = values.node ? 'node' : values.local ? 'local' : process.env.AGENTCARD_DEMO;
  if (values.node && values.local) throw new UsageError('--node and --local exclude each other');
  if (wanted && wanted !== 'node' && wanted !== 'local')
    throw new UsageError(`AGENTCARD_DEMO must be node or local, got '${wanted}'`);
  // Loaded only when the node is wanted: --local starts as fast as before.
  const nodeDemo = wanted === 'local' ? undefined : await import('./demo-node.ts');
  const unavailable = nodeDemo?.nodeDemoUnavailable();
  if (wanted === 'node' && unavailable)
    throw new UsageError(`cannot run on the node cluster: ${unavailable}`);
  logDir = mkdtempSync(join(tmpdir(), 'agentcard-demo-'));
  if (nodeDemo && !unavailable) {
    TOTAL_STEPS = nodeDemo.NODE_STEPS;
    say(`agentcard-operator demo on the node cluster: real Pods (logs in ${logDir})`);
    const lines = await nodeDemo.runNodeDemo({
      namespace,
      repoRoot,
      say,
      step,
      cleanups,
      newSigningJwk: async (kid) => JSON.stringify(await generateSigningJwk('ES256', kid)),
      agentcard: runAgentcard,
      logFile: (name) => join(logDir, name),
    });
    for (const line of lines) say(line);
    return once ? 0 : waitForCtrlC();
  }
  say(
    `agentcard-operator local demo: local processes, no kubelet (${wanted === 'local' ? 'as asked' : `no node cluster here: ${unavailable}`}; logs in ${logDir})`,
  );

  const cluster = await step(
    'Start the local control plane (the first run builds it, about 11 minutes)',
    async () => {
      const result = await up((line) => say(`      ${line}`));
      if (result.started) cleanups.push({ what: 'stop the control plane', run: () => down(() => {}) });
      return result;
    },
    (r) =>
      `${r.state.server} (${r.started ? 'started' : 'already running'}), kubeconfig ${relative(process.cwd(), kubeconfigFile)}`,
  );

  await step(
    'Install the CRDs (AgentCard, AgentCatalog, ClusterAgentCatalog)',
    async () => {
      await kubectl([
        'apply',
        '--server-side',
        '--field-manager=agentcard-demo',
        // The CRD in this checkout wins over whatever applied an older one (a test, helm).
        '--force-conflicts',
        '-f',
        join(repoRoot, 'crds'),
      ]);
      // Right after the create, the CRD may have no conditions yet, which `kubectl wait` treats as
      // an error rather than "not yet": ask again until it is Established.
      const deadline = Date.now() + 60_000;
      for (;;) {
        const r = await runTool(
          'kubectl',
          [
            'wait',
            '--for=condition=Established',
            'crd/agentcards.agentcard.dev',
            'crd/agentcatalogs.agentcard.dev',
            'crd/clusteragentcatalogs.agentcard.dev',
            '--timeout=30s',
          ],
          { kubeconfig: kubeconfigFile },
        );
        if (r.code === 0) break;
        if (Date.now() > deadline) throw new Error(`the CRD is not Established: ${r.stderr.trim()}`);
        await new Promise((done) => setTimeout(done, 250));
      }
    },
    () => 'agentcards, agentcatalogs and clusteragentcatalogs.agentcard.dev established',
  );

  await step(
    `Create namespace ${namespace}`,
    async () => {
      const manifest = JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
      await kubectl(['apply', '-f', '-'], manifest);
      // On a control plane the demo did not start, leave it as it was.
      if (!cluster.started) {
        cleanups.push({
          what: `delete namespace ${namespace}`,
          run: async () => void (await kubectl(['delete', 'namespace', namespace, '--wait=false'])),
        });
      }
    },
    () => namespace,
  );

  const agent = await step(
    'Start the demo A2A agent (@a2a-js/sdk: JSON-RPC, HTTP+JSON, gRPC)',
    async () => {
      // The same agent examples/demo-agent.yaml runs in a cluster, here on loopback.
      const child = await startProcess('agent', [
        agentcardBin,
        'demo-agent',
        '--address=127.0.0.1',
        '--port=0',
        '--grpc-port=0',
      ]);
      const line = await firstLine(child, 'agent', 30_000);
      return JSON.parse(line) as DemoAgentUrls;
    },
    (a) => `${a.jsonrpc} | ${a.rest} | ${a.grpc}`,
  );

  const [metricsPort, webhookPort] = [await freePort(), await freePort()];
  const certDir = join(logDir, 'webhook-tls');
  const ca = await createCA(new Date(), 'agentcard-operator demo CA');
  await step(
    'Start the operator (controller, probes, and the Pod admission webhook on HTTPS)',
    async () => {
      // There is no cluster DNS for a Service, so the API server calls the webhook by URL on
      // 127.0.0.1: its certificate names that address.
      const serving = await issueServingCert(ca, ['127.0.0.1'], new Date());
      mkdirSync(certDir, { recursive: true });
      writeFileSync(join(certDir, 'tls.crt'), serving.cert);
      writeFileSync(join(certDir, 'tls.key'), serving.key, { mode: 0o600 });
      const child = await startProcess('operator', [
        agentcardBin,
        'operator',
        `--kubeconfig=${kubeconfigFile}`,
        `--namespace=${namespace}`,
        // The demo watches one namespace; its ClusterAgentCatalog lists it and publishes there
        // (not --operator-namespace: the webhook never mutates the operator's own namespace).
        '--cluster-catalogs',
        `--catalog-namespace=${namespace}`,
        '--no-leader-elect',
        `--metrics-port=${metricsPort}`,
        '--bind-address=127.0.0.1',
        // The demo agent listens on loopback, which the probes refuse unless allowed.
        '--probe-allow-cidr=127.0.0.1/32',
        // The webhook, with the certificate the demo made (playing cert-manager's part).
        `--webhook-port=${webhookPort}`,
        '--webhook-cert-mode=cert-manager',
        `--webhook-cert-dir=${certDir}`,
        '--sidecar-image=agentcard-operator:demo',
        // The API server calls it by URL, with no Service to drain: stop at once on Ctrl-C.
        '--webhook-shutdown-delay=0',
        // The chart's default serving mode and its pinned image.
        '--sidecar-server=nginx',
        `--sidecar-nginx-image=${chartNginxImage(repoRoot)}`,
      ]);
      await waitForHttp(`http://127.0.0.1:${metricsPort}/readyz`, child, 'operator');
    },
    () => `ready, metrics at http://127.0.0.1:${metricsPort}/metrics`,
  );

  const webhookConfig = `agentcard-demo-${namespace}`;
  await step(
    'Register the webhook (MutatingWebhookConfiguration by URL, for this namespace only)',
    async () => {
      const config = {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'MutatingWebhookConfiguration',
        metadata: { name: webhookConfig },
        webhooks: [
          {
            name: 'inject.agentcard.dev',
            admissionReviewVersions: ['v1'],
            sideEffects: 'None',
            failurePolicy: 'Ignore',
            reinvocationPolicy: 'IfNeeded',
            timeoutSeconds: 5,
            clientConfig: {
              url: `https://127.0.0.1:${webhookPort}/mutate-pods`,
              caBundle: Buffer.from(ca.cert).toString('base64'),
            },
            rules: [
              {
                apiGroups: [''],
                apiVersions: ['v1'],
                operations: ['CREATE'],
                resources: ['pods'],
                scope: 'Namespaced',
              },
            ],
            namespaceSelector: {
              matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [namespace] }],
            },
            matchConditions: [
              {
                name: 'opted-in',
                expression:
                  "has(object.metadata.annotations) && 'agentcard.dev/inject' in object.metadata.annotations",
              },
            ],
          },
        ],
      };
      await kubectl(['apply', '-f', '-'], JSON.stringify(config));
      cleanups.push({
        what: `delete MutatingWebhookConfiguration ${webhookConfig}`,
        run: async () =>
          void (await kubectl([
            'delete',
            'mutatingwebhookconfiguration',
            webhookConfig,
            '--ignore-not-found',
          ])),
      });
    },
    () => webhookConfig,
  );

  const examples = await step(
    'Generate a signing key and apply examples/',
    async () => {
      const prepared = await prepareExamples(join(repoRoot, 'examples'), {
        agent,
        newSigningJwk: async (kid) => JSON.stringify(await generateSigningJwk('ES256', kid)),
      });
      const applied = await kubectl(['apply', '-n', namespace, '-f', '-'], prepared.manifests);
      return { ...prepared, applied: applied.stdout.trim().split('\n') };
    },
    (e) =>
      `${e.cards.length} AgentCard(s) (${e.cards.join(', ')}), ${e.applied.length} object(s)` +
      (e.signingSecrets.length
        ? `; signing key Secret ${e.signingSecrets.join(', ')} (ES256, generated now)`
        : ''),
  );

  await step(
    'Wait until every AgentCard is Ready (validated, signed, published, interfaces probed)',
    async () => {
      try {
        await kubectl([
          'wait',
          '--for=condition=Ready',
          'agentcards',
          '--all',
          '-n',
          namespace,
          '--timeout=120s',
        ]);
      } catch (err) {
        const table = await runTool('kubectl', ['get', 'agentcards', '-n', namespace, '-o', 'wide'], {
          kubeconfig: kubeconfigFile,
        });
        throw new Error(`${err instanceof Error ? err.message : String(err)}\n${table.stdout}`, {
          cause: err,
        });
      }
    },
    () => 'all Ready',
  );

  const injected = await step(
    'Check the sidecar injected into the Pod of examples/demo-agent.yaml',
    async () => {
      // kube-controller-manager turns the Deployment into a ReplicaSet and a Pod (Pending: there
      // is no kubelet); the API server sent that Pod through the webhook on its way in.
      const deadline = Date.now() + 60_000;
      for (;;) {
        const pods = await kubectl([
          'get',
          'pods',
          '-n',
          namespace,
          '-l',
          'app.kubernetes.io/name=demo-agent',
          '-o',
          'json',
        ]);
        const items = (JSON.parse(pods.stdout) as { items: PodView[] }).items;
        const pod = items.find((p) => sidecarOf(p));
        if (pod) {
          return {
            name: pod.metadata.name,
            how: sidecarOf(pod)!,
            annotations: pod.metadata.annotations ?? {},
          };
        }
        if (Date.now() > deadline) {
          throw new Error(
            items.length
              ? `Pod ${items[0]!.metadata.name} has no agentcard-sidecar container (webhook log: ${logTail('operator')})`
              : 'no Pod of the demo-agent Deployment appeared',
          );
        }
        await new Promise((r) => setTimeout(r, 500));
      }
    },
    (r) => `Pod ${r.name} has the agentcard-sidecar ${r.how}`,
  );

  // The card with audiences (examples/agentcard-audiences.yaml), so the last step can show each
  // audience being served its own signed card.
  const served = examples.audiencesCard?.name ?? examples.signedCard ?? examples.cards[0]!;
  const sidecarPort = await freePort();
  const sidecarMetricsPort = await freePort();
  const cardUrl = `http://127.0.0.1:${sidecarPort}/.well-known/agent-card.json`;
  const nginx = haveNginx();
  await step(
    `Serve the card of ${served} as the injected sidecar does (ConfigMap ${served}-agent-card laid out like a kubelet volume)`,
    async () => {
      const volume = new ConfigMapVolume({
        kubeconfig: kubeconfigFile,
        namespace,
        name: `${served}-agent-card`,
        dir: join(logDir, 'volume'),
        onError: (message) => say(`      volume sync: ${message}`),
      });
      await volume.start();
      cleanups.push({ what: 'stop the ConfigMap sync', run: () => volume.stop() });
      if (nginx) {
        // The configuration the webhook wrote into the Pod, as the kubelet would project it.
        const child = startNginx({
          annotations: injected.annotations,
          cardDir: volume.dir,
          port: sidecarPort,
          workDir: join(logDir, 'nginx'),
        });
        cleanups.push({ what: 'stop nginx', run: () => stopProcess(child) });
        await waitForHttp(cardUrl, child, 'nginx');
        return;
      }
      const child = await startProcess('sidecar', [
        agentcardBin,
        'sidecar',
        `--dir=${volume.dir}`,
        `--port=${sidecarPort}`,
        `--metrics-port=${sidecarMetricsPort}`,
      ]);
      await waitForHttp(cardUrl, child, 'sidecar');
    },
    () =>
      nginx
        ? `${cardUrl} (nginx with the Pod's own configuration, the default mode)`
        : `${cardUrl} (no nginx on this machine: served by the Node mode instead; apt-get install nginx-light)`,
  );

  const jwksUrl = cardUrl.replace('agent-card.json', 'jwks.json');
  const verification = await step(
    'Verify the served card against the served JWKS (agentcard verify, as a user would)',
    async () => {
      const [cardRes, jwksRes] = await Promise.all([fetch(cardUrl), fetch(jwksUrl)]);
      if (!cardRes.ok || !jwksRes.ok)
        throw new Error(`the sidecar answered ${cardRes.status} / ${jwksRes.status}`);
      const jwksFile = join(logDir, 'jwks.json');
      writeFileSync(jwksFile, await jwksRes.text());
      const result = await runAgentcard(['verify', '-f', '-', '--jwks', jwksFile], await cardRes.text());
      if (result.code !== 0) throw new Error(`agentcard verify: ${(result.stdout + result.stderr).trim()}`);
      return result.stdout.trim();
    },
    (out) => out.split('\n')[0]!,
  );

  const audiences = examples.audiencesCard?.name === served ? examples.audiencesCard.hosts : [];
  const perAudience = await step(
    `Fetch the card as each audience (by Host) and verify each one`,
    async () => {
      const jwksFile = join(logDir, 'jwks.json');
      const lines: string[] = [];
      for (const { audience, host } of [{ audience: 'default', host: '127.0.0.1' }, ...audiences]) {
        const card = await getWithHost(cardUrl, host);
        const result = await runAgentcard(['verify', '-f', '-', '--jwks', jwksFile], card);
        if (result.code !== 0)
          throw new Error(
            `audience ${audience}: agentcard verify: ${(result.stdout + result.stderr).trim()}`,
          );
        const first = (JSON.parse(card) as { supportedInterfaces: Array<{ url: string }> })
          .supportedInterfaces[0]!.url;
        lines.push(`${audience} (Host: ${host}): ${first}, ${result.stdout.trim()}`);
      }
      return lines;
    },
    (lines) => `${lines.length} audience${lines.length === 1 ? '' : 's'}, each card signed on its own`,
  );

  const catalog = await step(
    "Publish a signed ClusterAgentCatalog of the demo's agents and serve it with its page",
    () => serveCatalog(namespace, examples.cards),
    (c) => `${c.url} lists ${c.entries} agent(s); ${c.verification}`,
  );

  const origin = new URL(cardUrl).origin;
  const discovery = await step(
    `Discover the agent at ${origin} and verify and probe it (agentcard discover, as another team would)`,
    async () => {
      const result = await runAgentcard(
        ['discover', origin, '--jwks', jwksUrl, '--probe', '--allow-cidr', '127.0.0.0/8'],
        '',
      );
      if (result.code !== 0) throw new Error(`agentcard discover: ${(result.stdout + result.stderr).trim()}`);
      return result.stdout.trimEnd();
    },
    (out) => out.split('\n').at(-1)!,
  );

  const table = await kubectl(['get', 'agentcards', '-n', namespace, '-o', 'wide']);
  say('');
  say(`$ kubectl get agentcards -n ${namespace} -o wide`);
  say(table.stdout.trimEnd());
  say('');
  say(`Served card:   ${cardUrl}`);
  say(`Keys:          ${jwksUrl}`);
  say(`Verification:  ${verification.split('\n').join('\n               ')}`);
  say(`Audiences:     ${perAudience.join('\n               ')}`);
  say(`Catalog:       ${catalog.url}`);
  say(`Catalog page:  ${catalog.page}`);
  say('');
  say(`$ agentcard discover ${origin} --jwks ${jwksUrl} --probe --allow-cidr 127.0.0.0/8`);
  say(discovery);
  say('');
  say(`kubectl:       KUBECONFIG=${kubeconfigFile} .cluster/bin/kubectl get agentcards -n ${namespace}`);
  if (once) return 0;
  return waitForCtrlC();
}

async function waitForCtrlC(): Promise<number> {
  say('');
  say('Running; press Ctrl-C to stop everything the demo started.');
  await new Promise<void>((done) => (stopRequested = done));
  return 0;
}

/**
 * A ClusterAgentCatalog of the demo namespace's AgentCards, signed with a key generated now, and
 * the catalog server as the chart runs it (`agentcard sidecar` over the catalog's ConfigMap, laid
 * out like a kubelet volume); the served catalog is verified against the served JWKS.
 */
async function serveCatalog(
  namespace: string,
  cards: string[],
): Promise<{ url: string; page: string; entries: number; verification: string }> {
  const name = `${namespace}-agents`;
  const jwk = JSON.stringify(await generateSigningJwk('ES256', `${name}-demo`));
  const manifests = [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'catalog-signing', namespace, labels: { 'agentcard.dev/signing-key': 'true' } },
      stringData: { 'key.jwk': jwk },
    },
    {
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'ClusterAgentCatalog',
      metadata: { name },
      spec: {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
        publisher: 'demo.example.com',
        host: { displayName: 'agentcard-operator demo agents' },
        signing: { keys: [{ secretRef: { name: 'catalog-signing', key: 'key.jwk' } }] },
      },
    },
  ];
  await kubectl(['apply', '-f', '-'], manifests.map((m) => JSON.stringify(m)).join('\n'));
  cleanups.push({
    what: `delete ClusterAgentCatalog ${name}`,
    run: async () => void (await kubectl(['delete', 'clusteragentcatalog', name, '--ignore-not-found'])),
  });
  // Where it is published: the catalog's status says (the operator's namespace).
  const deadline = Date.now() + 30_000;
  let where: { namespace?: string; configMap?: string } = {};
  while (!where.configMap) {
    const got = await kubectl(['get', 'clusteragentcatalog', name, '-o', 'json']);
    where = (JSON.parse(got.stdout) as { status?: typeof where }).status ?? {};
    if (where.configMap) break;
    if (Date.now() > deadline)
      throw new Error(`ClusterAgentCatalog ${name} was not published: ${got.stdout.slice(0, 400)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  const volume = new ConfigMapVolume({
    kubeconfig: kubeconfigFile,
    namespace: where.namespace!,
    name: where.configMap,
    dir: join(logDir, 'catalog-volume'),
    onError: (message) => say(`      catalog volume sync: ${message}`),
  });
  await volume.start();
  cleanups.push({ what: 'stop the catalog ConfigMap sync', run: () => volume.stop() });
  const [port, metricsPort] = [await freePort(), await freePort()];
  const child = await startProcess('catalog-server', [
    agentcardBin,
    'sidecar',
    `--dir=${volume.dir}`,
    `--port=${port}`,
    `--metrics-port=${metricsPort}`,
  ]);
  const url = `http://127.0.0.1:${port}/.well-known/ai-catalog.json`;
  await waitForHttp(url, child, 'catalog-server');
  // Every demo card listed (they are Ready): the catalog follows them within seconds.
  const listed = Date.now() + 30_000;
  let doc: { entries?: unknown[] };
  for (;;) {
    doc = (await (await fetch(url)).json()) as { entries?: unknown[] };
    if ((doc.entries?.length ?? 0) >= cards.length) break;
    if (Date.now() > listed)
      throw new Error(`the catalog lists ${doc.entries?.length ?? 0} of ${cards.length} AgentCards`);
    await new Promise((r) => setTimeout(r, 500));
  }
  const jwks = (await (await fetch(url.replace('ai-catalog.json', 'jwks.json'))).json()) as JWKS;
  const verified = await verifyCatalog(doc, jwks);
  if (!verified.verified)
    throw new Error(`the served catalog does not verify: ${JSON.stringify(verified.results)}`);
  return {
    url,
    page: `http://127.0.0.1:${port}/`,
    entries: doc.entries!.length,
    verification: `signature verified: kid ${verified.kid}`,
  };
}

type PodView = {
  metadata: { name: string; annotations?: Record<string, string> };
  spec: { containers?: { name: string }[]; initContainers?: { name: string; restartPolicy?: string }[] };
};

/** How the sidecar sits in the Pod: a native sidecar (init container, restartPolicy Always) or a container. */
function sidecarOf(pod: PodView): string | undefined {
  const init = pod.spec.initContainers?.find((c) => c.name === 'agentcard-sidecar');
  if (init)
    return init.restartPolicy === 'Always'
      ? 'as a native sidecar (init container, restartPolicy Always)'
      : 'as an init container';
  return pod.spec.containers?.some((c) => c.name === 'agentcard-sidecar') ? 'as a container' : undefined;
}

/** GET `url` with another Host header (fetch always sends the URL's own). */
function getWithHost(url: string, host: string): Promise<string> {
  return new Promise((done, fail) => {
    const req = httpRequest(url, { headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () =>
        res.statusCode === 200 ? done(body) : fail(new Error(`Host ${host}: HTTP ${res.statusCode}`)),
      );
    });
    req.on('error', fail);
    req.end();
  });
}

/** Runs `agentcard ARGS` (this checkout's CLI) with `input` on stdin. */
function runAgentcard(
  args: string[],
  input: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(node, [agentcardBin, ...args], { cwd: repoRoot, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}

function firstLine(child: ChildProcess, name: string, timeoutMs: number): Promise<string> {
  return new Promise((ok, fail) => {
    const timer = setTimeout(
      () => fail(new Error(`the ${name} printed nothing within ${timeoutMs / 1000} s`)),
      timeoutMs,
    );
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (line) => {
      clearTimeout(timer);
      ok(line);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`the ${name} exited with code ${code}: ${logTail(name)}`));
    });
  });
}

async function cleanup(): Promise<void> {
  if (!cleanups.length) return;
  say('Cleaning up ...');
  for (const { what, run } of cleanups.reverse()) {
    try {
      await run();
      say(`      ${what}: done`);
    } catch (err) {
      say(`      ${what}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  cleanups.length = 0;
  if (logDir && !failed) rmSync(logDir, { recursive: true, force: true });
  else if (logDir) say(`Logs kept in ${logDir}: ${readdirSafe(logDir).join(', ')}`);
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir).filter((f) => f.endsWith('.log'));
  } catch {
    return [];
  }
}

// Ctrl-C after the last step ends the demo normally; during a step it stops, cleans up and
// exits 130.
let stopRequested: (() => void) | undefined;
let interrupted = false;
const onInterrupt = () => {
  if (stopRequested) return stopRequested();
  if (interrupted) return;
  interrupted = true;
  failed = false;
  say('\nInterrupted.');
  void cleanup().then(() => process.exit(130));
};

process.once('SIGINT', onInterrupt);
process.once('SIGTERM', onInterrupt);
main(process.argv.slice(2)).then(
  async (code) => {
    await cleanup();
    process.exit(code);
  },
  async (err: unknown) => {
    failed = !(err instanceof UsageError);
    process.stderr.write(`demo: ${err instanceof Error ? err.message : String(err)}\n`);
    await cleanup();
    process.exit(err instanceof UsageError ? 2 : 1);
  },
);
