/**
 * The whole product as a user runs it, on the real node of test/node/: the chart installed from
 * this checkout with `helm install` (two operator replicas, the webhook, the catalog server, the
 * nginx sidecar), the demo agent as a Deployment and a Service in a namespace that enforces the
 * restricted Pod Security Standard, a signed AgentCard with an audience, and a
 * ClusterAgentCatalog. Everything is checked where a user would look: the API, and the Pod
 * network (from the node's network namespace, and from a Pod of the cluster).
 *
 * The images are the ones assembled in test/node/images.ts (the operator image, nginx with njs),
 * imported into the node's containerd: `imagePullPolicy: Never`.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { publicPart, verifyCard, type JWKS } from '../../operator/card/verify.ts';
import type { JWK } from '../../operator/card/sign.ts';
import { toolPath } from '../controlplane/tools.ts';
import { execInNode, kubectl, nodeKubeconfig } from '../node/control.ts';
import { waitForService } from '../node/services.ts';
import { CONDITION_KINDS, readPromises, type ExamplePromise } from '../support/example-promises.ts';
import { repoRoot } from '../support/paths.ts';
import { productImages, type ProductImages } from '../support/product-images.ts';
import { CHART_CRD_NAMES } from '../../build/chart-crds.ts';

const state = inject('nodeCluster');
const k = (...args: string[]) => kubectl(state, args);
const apply = (yaml: string) => kubectl(state, ['apply', '-f', '-'], yaml);

const RELEASE = 'agentcard';
const opNs = `agentcard-system-${process.pid}`;
const ns = `agents-${process.pid}`;
const CATALOG = `e2e-${process.pid}`;
const PUBLIC_HOST = 'support.example.com';
/** Fullname of the release (`<release>-<chart>`), as the chart names its objects. */
const FULLNAME = `${RELEASE}-agentcard-operator`;
const CARD_PORT = 8095;

let images: ProductImages;

/** Log a figure into the test output (`npm run test:node` prints it; docs/development.md quotes it). */
const figure = (line: string) => process.stderr.write(`[product] ${line}\n`);

function helm(args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(
      toolPath('helm'),
      [`--kubeconfig=${nodeKubeconfig}`, ...args],
      { timeout: 300_000, maxBuffer: 16 << 20 },
      (err, stdout, stderr) =>
        err ? reject(new Error(`helm ${args.join(' ')}: ${stderr || err.message}`)) : resolve(stdout),
    ),
  );
}

/** curl from the node's network namespace (the host itself has no route into the cluster). */
async function curl(url: string, headers: Record<string, string> = {}): Promise<string> {
  const h = Object.entries(headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
  return execInNode(state, 'curl', ['-sS', '-f', '-m', '5', ...h, url]);
}

async function waitFor<T>(what: string, timeoutMs: number, get: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await get();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      last = err;
    }
    await sleep(250);
  }
  throw new Error(
    `timed out after ${timeoutMs / 1000} s waiting for ${what}${last ? `: ${String(last)}` : ''}`,
  );
}

type Condition = { type: string; status: string; reason?: string; message?: string };
async function conditions(kind: string, name: string, namespace?: string): Promise<Condition[]> {
  const args = ['get', kind, name, '-o', 'jsonpath={.status.conditions}'];
  const out = await k(...(namespace ? ['-n', namespace, ...args] : args));
  return out.trim() ? (JSON.parse(out) as Condition[]) : [];
}
const isTrue = (conds: Condition[], type: string) =>
  conds.some((c) => c.type === type && c.status === 'True');

/** A signing key as the README makes it: `agentcard keygen --secret NAME`, as a Secret manifest. */
async function keygen(secret: string, namespace: string): Promise<JWK> {
  const manifest = await new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      [join(repoRoot, 'bin', 'agentcard.js'), 'keygen', '--alg', 'ES256', '--secret', secret],
      (err, stdout, stderr) => (err ? reject(new Error(stderr || err.message)) : resolve(stdout)),
    ),
  );
  await kubectl(state, ['-n', namespace, 'create', '-f', '-'], manifest);
  const doc = JSON.parse(manifest) as { stringData: Record<string, string> };
  return publicPart(JSON.parse(doc.stringData['signing.jwk']!) as JWK);
}

/** examples/demo-agent.yaml, in the test's namespace, with the assembled operator image. */
function demoAgent(): string {
  return readFileSync(join(repoRoot, 'examples', 'demo-agent.yaml'), 'utf8').replace(
    /image: \S+/,
    `image: ${images.operator}\n          imagePullPolicy: Never`,
  );
}

/** examples/agentcard-signed.yaml in the test's namespace, with a public audience and a card URL for catalogs. */
function supportAgent(description?: string): string {
  const card = parse(readFileSync(join(repoRoot, 'examples', 'agentcard-signed.yaml'), 'utf8')) as {
    metadata: Record<string, unknown>;
    spec: {
      card: { description: string; supportedInterfaces: { url: string }[] };
      audiences?: unknown[];
      probe?: Record<string, unknown>;
    };
  };
  card.metadata.namespace = ns;
  card.metadata.labels = { tier: 'public' };
  card.metadata.annotations = {
    // Catalog entries point at the card where the sidecar serves it (the agent's own port 8080
    // serves the agent, not the card).
    'agentcard.dev/card-url': `http://demo-agent.${ns}.svc.cluster.local:${CARD_PORT}/.well-known/agent-card.json`,
  };
  for (const i of card.spec.card.supportedInterfaces) i.url = i.url.replace('.default.svc.', `.${ns}.svc.`);
  if (description) card.spec.card.description = description;
  card.spec.audiences = [
    {
      name: 'public',
      hosts: [PUBLIC_HOST],
      baseURL: `https://${PUBLIC_HOST}/agents/support`,
      probe: 'Disabled',
    },
  ];
  // Probes every 10 s, so the test sees Ready follow the agent without waiting a minute.
  card.spec.probe = { ...card.spec.probe, interval: '10s' };
  return JSON.stringify(card);
}

/** A Pod that asks for injection, for a dry run only. */
function probePod(): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'webhook-ready', annotations: { 'agentcard.dev/inject': 'support-agent' } },
    spec: {
      securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'c',
          image: images.operator,
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        },
      ],
    },
  });
}

type Card = { description: string; supportedInterfaces: { url: string }[]; signatures?: unknown[] };

async function podOf(label: string, namespace: string): Promise<{ name: string; ip: string }> {
  const out = await k('-n', namespace, 'get', 'pods', '-l', label, '-o', 'json');
  const pods = (
    JSON.parse(out) as {
      items: { metadata: { name: string; deletionTimestamp?: string }; status: { podIP?: string } }[];
    }
  ).items.filter((p) => !p.metadata.deletionTimestamp && p.status.podIP);
  if (pods.length !== 1) throw new Error(`expected one running Pod for ${label}, found ${pods.length}`);
  return { name: pods[0]!.metadata.name, ip: pods[0]!.status.podIP! };
}

/** The Service's cluster IP, once it routes to a ready endpoint on `port` (test/node/services.ts). */
async function clusterIP(name: string, namespace: string, port: number): Promise<string> {
  return waitForService(state, namespace, name, port);
}

/**
 * The image of the sidecar the webhook injects into a Pod of demo-agent's template now: a
 * server-side dry run goes through the real admission chain and creates nothing.
 */
async function admittedSidecarImage(): Promise<string | undefined> {
  const deployment = JSON.parse(await k('-n', ns, 'get', 'deployment', 'demo-agent', '-o', 'json')) as {
    spec: { template: { metadata: { annotations?: Record<string, string> }; spec: unknown } };
  };
  const template = deployment.spec.template;
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { generateName: 'admission-check-', annotations: template.metadata.annotations ?? {} },
    spec: template.spec,
  };
  const admitted = JSON.parse(
    await kubectl(
      state,
      ['-n', ns, 'create', '--dry-run=server', '-o', 'json', '-f', '-'],
      JSON.stringify(pod),
    ),
  ) as { spec: { initContainers?: { name: string; image: string }[] } };
  return admitted.spec.initContainers?.find((c) => c.name === 'agentcard-sidecar')?.image;
}

/** The catalog server's port in the Pod: the chart's default `catalogServer.port`. */
const CATALOG_SERVER_PORT = (
  parse(readFileSync(join(repoRoot, 'helm', 'agentcard-operator', 'values.yaml'), 'utf8')) as {
    catalogServer: { port: number };
  }
).catalogServer.port;

/** The Pod IPs of the catalog server's Deployment. */
async function catalogServerPods(): Promise<string[]> {
  const out = await k(
    '-n',
    opNs,
    'get',
    'pods',
    '-l',
    'app.kubernetes.io/component=catalog-server',
    '-o',
    'json',
  );
  const pods = (
    JSON.parse(out) as { items: { metadata: { deletionTimestamp?: string }; status: { podIP?: string } }[] }
  ).items.filter((p) => !p.metadata.deletionTimestamp && p.status.podIP);
  if (pods.length === 0) throw new Error('no catalog server Pod has an IP');
  return pods.map((p) => p.status.podIP!);
}

async function leaseHolder(): Promise<string> {
  const out = await k(
    '-n',
    opNs,
    'get',
    'lease',
    'agentcard-operator',
    '-o',
    'jsonpath={.spec.holderIdentity}',
  );
  return out.trim();
}

let publicKey: JWK;

describe('the product on a real node', () => {
  beforeAll(async () => {
    images = productImages(inject('productImages'));
    await k('create', 'namespace', opNs);
    const started = Date.now();
    // As a user installs it: `--wait` returns once every Deployment of the release is available
    // (the catalog server before its ClusterAgentCatalog exists, too).
    await helm([
      'install',
      RELEASE,
      join(repoRoot, 'helm', 'agentcard-operator'),
      '--namespace',
      opNs,
      '--set',
      `image.repository=${images.operatorRepository}`,
      '--set',
      `image.tag=${images.operatorTag}`,
      '--set',
      'image.pullPolicy=Never',
      '--set',
      'replicas=2',
      '--set',
      'sidecar.server=nginx',
      '--set',
      `sidecar.nginx.image=${images.nginx}`,
      '--set',
      'catalogServer.enabled=true',
      '--set',
      `catalogServer.catalog=${CATALOG}`,
      '--wait',
      '--timeout=5m',
    ]);
    await k('-n', opNs, 'rollout', 'status', `deployment/${FULLNAME}`, '--timeout=240s');
    figure(`helm install to both operator replicas Ready: ${((Date.now() - started) / 1000).toFixed(1)} s`);

    await k('create', 'namespace', ns);
    await k('label', 'namespace', ns, 'pod-security.kubernetes.io/enforce=restricted');
    await waitFor('the webhook to inject (a dry-run Pod comes back mutated)', 120_000, async () => {
      const out = await kubectl(
        state,
        ['-n', ns, 'create', '--dry-run=server', '-o', 'json', '-f', '-'],
        probePod(),
      );
      return out.includes('"agentcard-sidecar"') ? true : undefined;
    });
    figure(`helm install to the webhook injecting: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    // The README's order: the agent, then its key, then its AgentCard.
    await kubectl(state, ['-n', ns, 'apply', '-f', '-'], demoAgent());
    await k('-n', ns, 'rollout', 'status', 'deployment/demo-agent', '--timeout=240s');
    publicKey = await keygen('support-agent-signing', ns);
    await apply(supportAgent());
    const catalogKey = await keygen('catalog-signing', opNs);
    expect(catalogKey.kid).toBeTruthy();
    await apply(
      JSON.stringify({
        apiVersion: 'agentcard.dev/v1alpha1',
        kind: 'ClusterAgentCatalog',
        metadata: { name: CATALOG },
        spec: {
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
          selector: { matchLabels: { tier: 'public' } },
          publisher: 'example.com',
          signing: { keys: [{ secretRef: { name: 'catalog-signing', key: 'signing.jwk' } }] },
        },
      }),
    );
  });

  afterAll(async () => {
    for (const p of readPromises(repoRoot).reverse())
      await k(
        'delete',
        '-n',
        'default',
        '--ignore-not-found',
        '--wait=false',
        '-f',
        join(repoRoot, p.file),
      ).catch(() => undefined);
    await k(
      'delete',
      '-n',
      'default',
      'secret',
      '-l',
      'agentcard.dev/signing-key=true',
      '--ignore-not-found',
    ).catch(() => undefined);
    await k('delete', 'clusteragentcatalog', CATALOG, '--ignore-not-found', '--wait=false').catch(
      () => undefined,
    );
    await k('delete', 'namespace', ns, '--wait=false').catch(() => undefined);
    await helm(['uninstall', RELEASE, '--namespace', opNs, '--wait', '--timeout=120s']).catch(
      () => undefined,
    );
    await k('delete', 'namespace', opNs, '--wait=false').catch(() => undefined);
    // crds.keep leaves the CRDs behind an uninstall, as it should in a user's cluster; the next
    // run installs into another namespace, and Helm refuses CRDs another release's metadata names.
    await k('delete', 'crd', ...CHART_CRD_NAMES, '--ignore-not-found').catch(() => undefined);
  });

  it('injects the native nginx sidecar; the Pod runs 2/2 ready under the restricted Pod Security Standard', async () => {
    const pod = JSON.parse(
      await k('-n', ns, 'get', 'pods', '-l', 'app.kubernetes.io/name=demo-agent', '-o', 'json'),
    ) as {
      items: {
        spec: {
          initContainers?: {
            name: string;
            image: string;
            restartPolicy?: string;
            startupProbe?: { httpGet?: { path: string; port: number; scheme?: string } };
          }[];
          containers: { name: string }[];
        };
        status: {
          containerStatuses?: { ready: boolean }[];
          initContainerStatuses?: { name: string; ready: boolean; started?: boolean }[];
        };
      }[];
    };
    expect(pod.items).toHaveLength(1);
    const [p] = pod.items;
    const sidecar = p!.spec.initContainers?.find((c) => c.name === 'agentcard-sidecar');
    expect(sidecar?.restartPolicy).toBe('Always');
    expect(sidecar?.image).toBe(images.nginx);
    // Its startup probe passed (the kubelet started the agent after it): nginx answers /healthz.
    expect(sidecar?.startupProbe?.httpGet).toEqual({ path: '/healthz', port: CARD_PORT, scheme: 'HTTP' });
    expect(p!.status.initContainerStatuses?.find((c) => c.name === 'agentcard-sidecar')?.started).toBe(true);
    expect(
      [...(p!.status.initContainerStatuses ?? []), ...(p!.status.containerStatuses ?? [])].map(
        (s) => s.ready,
      ),
    ).toEqual([true, true]);
    // kubectl's READY column: 2/2 (a native sidecar counts).
    const ready = await k('-n', ns, 'get', 'pods', '-l', 'app.kubernetes.io/name=demo-agent', '--no-headers');
    expect(ready).toMatch(/\s2\/2\s+Running\s/);
    expect(await k('get', 'namespace', ns, '-o', 'jsonpath={.metadata.labels}')).toContain(
      '"pod-security.kubernetes.io/enforce":"restricted"',
    );
  });

  it('serves the signed card at the Pod IP and through the Service; the audience by Host', async () => {
    const pod = await podOf('app.kubernetes.io/name=demo-agent', ns);
    const svc = await clusterIP('demo-agent', ns, CARD_PORT);
    const served = await waitFor('the card at the Pod IP', 120_000, () =>
      curl(`http://${pod.ip}:${CARD_PORT}/.well-known/agent-card.json`),
    );
    const jwks = JSON.parse(await curl(`http://${svc}:${CARD_PORT}/.well-known/jwks.json`)) as JWKS;
    expect(jwks.keys.map((key) => key.kid)).toContain(publicKey.kid);
    const card = JSON.parse(served) as Card;
    expect((await verifyCard(card, jwks)).verified).toBe(true);
    // Against the key the user kept, not only what the server says.
    expect((await verifyCard(card, { keys: [publicKey] })).verified).toBe(true);
    expect(await curl(`http://${svc}:${CARD_PORT}/.well-known/agent-card.json`)).toBe(served);
    expect(card.supportedInterfaces[0]!.url).toBe(
      `http://demo-agent.${ns}.svc.cluster.local:8080/a2a/jsonrpc`,
    );

    const pub = JSON.parse(
      await curl(`http://${svc}:${CARD_PORT}/.well-known/agent-card.json`, { Host: PUBLIC_HOST }),
    ) as Card;
    expect(pub.supportedInterfaces[0]!.url).toBe(`https://${PUBLIC_HOST}/agents/support/a2a/jsonrpc`);
    expect((await verifyCard(pub, { keys: [publicKey] })).verified).toBe(true);
  });

  it('probes the agent by its Service DNS name: Ready=True', async () => {
    await waitFor('the AgentCard to be Ready', 180_000, async () =>
      isTrue(await conditions('agentcard', 'support-agent', ns), 'Ready'),
    );
    const status = JSON.parse(
      await k('-n', ns, 'get', 'agentcard', 'support-agent', '-o', 'jsonpath={.status.interfaces}'),
    ) as { url: string; reachable?: boolean }[];
    expect(status.map((i) => i.url)).toContain(`http://demo-agent.${ns}.svc.cluster.local:8081`);
  });

  it('a spec change reaches the served bytes through the kubelet ConfigMap update', async () => {
    const svc = await clusterIP('demo-agent', ns, CARD_PORT);
    const url = `http://${svc}:${CARD_PORT}/.well-known/agent-card.json`;
    const description = `Changed at ${new Date().toISOString()}.`;
    const started = Date.now();
    await apply(supportAgent(description));
    const card = await waitFor('the new description to be served', 180_000, async () => {
      const c = JSON.parse(await curl(url)) as Card;
      return c.description === description ? c : undefined;
    });
    const took = (Date.now() - started) / 1000;
    figure(`spec change to served bytes: ${took.toFixed(1)} s`);
    expect((await verifyCard(card, { keys: [publicKey] })).verified).toBe(true);
  });

  it('the catalog server serves the signed catalog; `agentcard discover` in a Pod finds and verifies the agent', async () => {
    await waitFor('the ClusterAgentCatalog to be Ready', 120_000, async () =>
      isTrue(await conditions('clusteragentcatalog', CATALOG), 'Ready'),
    );
    const ready = Date.now();
    await k('-n', opNs, 'rollout', 'status', `deployment/${FULLNAME}-catalog`, '--timeout=180s');
    // Ready means published in the ConfigMap; each catalog server Pod answers 503 until the kubelet
    // brings the new ConfigMap into its volume (its sync period, about a minute; docs/catalogs.md).
    // Wait for every replica, so that the Service and `discover` below see the catalog on any of them.
    const servers = await catalogServerPods();
    await waitFor('every catalog server Pod to serve the published catalog', 180_000, async () => {
      for (const ip of servers) await curl(`http://${ip}:${CATALOG_SERVER_PORT}/.well-known/ai-catalog.json`);
      return true;
    });
    figure(`catalog Ready to served by every replica: ${((Date.now() - ready) / 1000).toFixed(1)} s`);
    const svc = await clusterIP(`${FULLNAME}-catalog`, opNs, 80);
    const catalog = JSON.parse(await curl(`http://${svc}/.well-known/ai-catalog.json`)) as {
      entries: { identifier: string; url?: string }[];
      signature?: string;
    };
    expect(catalog.signature).toMatch(/^[\w-]+\.\.[\w-]+$/);
    expect(catalog.entries.map((e) => e.identifier)).toEqual([`urn:air:example.com:${ns}:support-agent`]);

    const catalogHost = `${FULLNAME}-catalog.${opNs}.svc.cluster.local`;
    const agentHost = `demo-agent.${ns}.svc.cluster.local`;
    const pod = `discover-${process.pid}`;
    await apply(
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: pod, namespace: ns },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 65532,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: 'discover',
              image: images.operator,
              imagePullPolicy: 'Never',
              args: [
                'discover',
                `http://${catalogHost}`,
                '--jwks',
                `http://${catalogHost}/.well-known/jwks.json`,
                '--jwks',
                `http://${agentHost}:${CARD_PORT}/.well-known/jwks.json`,
                '--allow-cidr',
                '10.0.0.0/8',
                '--output',
                'json',
              ],
              securityContext: {
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                capabilities: { drop: ['ALL'] },
              },
            },
          ],
        },
      }),
    );
    const phase = await waitFor('the discover Pod to finish', 180_000, async () => {
      const p = (await k('-n', ns, 'get', 'pod', pod, '-o', 'jsonpath={.status.phase}')).trim();
      return p === 'Succeeded' || p === 'Failed' ? p : undefined;
    });
    const logs = await k('-n', ns, 'logs', pod);
    expect(phase, logs).toBe('Succeeded');
    const found = JSON.parse(logs) as { agents: { url?: string; verified?: boolean; name?: string }[] };
    expect(JSON.stringify(found)).toContain(`http://${agentHost}:${CARD_PORT}/.well-known/agent-card.json`);
    expect(JSON.stringify(found)).toContain('Customer Support Agent');
  });

  it('deleting the leader hands over to the other replica; the card is served throughout', async () => {
    const leader = await leaseHolder();
    const leaderPod = leader.slice(0, leader.lastIndexOf('_'));
    expect(leaderPod).toMatch(new RegExp(`^${FULLNAME}-`));
    const svc = await clusterIP('demo-agent', ns, CARD_PORT);
    const url = `http://${svc}:${CARD_PORT}/.well-known/agent-card.json`;
    const before = await curl(url);

    let polling = true;
    let polls = 0;
    const failures: string[] = [];
    const poller = (async () => {
      while (polling) {
        polls++;
        try {
          const body = await curl(url);
          if (!(JSON.parse(body) as Card).signatures?.length)
            failures.push('served a card without signatures');
        } catch (err) {
          failures.push(String(err));
        }
        await sleep(200);
      }
    })();
    const started = Date.now();
    const pollsBeforeDelete = polls;
    await k('-n', opNs, 'delete', 'pod', leaderPod, '--wait=false');
    const next = await waitFor('another replica to take the Lease', 120_000, async () => {
      const holder = await leaseHolder();
      return holder && !holder.startsWith(`${leaderPod}_`) ? holder : undefined;
    });
    figure(`leader handover (delete to new holder): ${((Date.now() - started) / 1000).toFixed(1)} s`);
    // The new leader reconciles: a change made now reaches the served card.
    const description = `Changed after the handover to ${next}.`;
    await apply(supportAgent(description));
    await waitFor('the new leader to publish the change', 180_000, async () =>
      (JSON.parse(await curl(url)) as Card).description === description ? true : undefined,
    );
    // The poll covers the delete, the handover and the change (a node that syncs fast can do all
    // three in a few seconds): a few more fetches, then stop.
    await waitFor('three fetches since the delete', 30_000, async () =>
      polls >= pollsBeforeDelete + 3 ? true : undefined,
    );
    polling = false;
    await poller;
    expect(failures).toEqual([]);
    expect(before).not.toBe(await curl(url));
  });

  it('every example of examples/ reaches what its first line promises, in `default`, as the README applies it', async () => {
    // The examples name the image ghcr.io/agentcard-dev/agentcard-operator:<version> with the
    // default pull policy (IfNotPresent): the assembled image carries that name, so they run
    // unchanged, and so does the README's `npx agentcard keygen ... | kubectl create -f -`.
    const env = {
      ...process.env,
      KUBECONFIG: nodeKubeconfig,
      PATH: `${dirname(toolPath('kubectl'))}:${process.env.PATH ?? ''}`,
    };
    const sh = (command: string) =>
      new Promise<string>((resolve, reject) =>
        execFile(
          'sh',
          [
            '-c',
            command.replaceAll(
              'npx agentcard ',
              `"${process.execPath}" "${join(repoRoot, 'bin', 'agentcard.js')}" `,
            ),
          ],
          { cwd: repoRoot, env, timeout: 240_000 },
          (err, stdout, stderr) =>
            err ? reject(new Error(`${command}: ${stderr || err.message}`)) : resolve(stdout),
        ),
      );
    const reaches = readPromises(repoRoot).filter(
      (p): p is ExamplePromise & { kind: 'reaches' } => p.kind === 'reaches',
    );
    expect(reaches.length).toBeGreaterThan(0);
    const done = new Set<string>();
    const cards: string[] = [];
    for (const p of reaches.sort(
      (a, b) => Number(b.file.endsWith('demo-agent.yaml')) - Number(a.file.endsWith('demo-agent.yaml')),
    )) {
      for (const command of [...p.after, `kubectl apply -f ${p.file}`]) {
        if (done.has(command)) continue;
        await sh(command);
        done.add(command);
      }
      for (const doc of parseAllDocuments(readFileSync(join(repoRoot, p.file), 'utf8')).map(
        (d) => d.toJS() as { kind?: string; metadata?: { name?: string } } | null,
      )) {
        if (doc?.kind && CONDITION_KINDS[p.condition]!.includes(doc.kind)) {
          cards.push(`${doc.kind}/${doc.metadata!.name!}`);
          await waitFor(
            `${p.file}: ${doc.kind} ${doc.metadata!.name!} ${p.condition}=True`,
            240_000,
            async () => isTrue(await conditions(doc.kind!, doc.metadata!.name!, 'default'), p.condition),
          );
        }
      }
    }
    figure(`examples Ready/Available on the node: ${cards.join(', ')}`);
    expect(cards).toContain('AgentCard/support-agent');
  });

  it('Node mode: after `helm upgrade --set sidecar.server=node`, new Pods serve the same card', async () => {
    await helm([
      'upgrade',
      RELEASE,
      join(repoRoot, 'helm', 'agentcard-operator'),
      '--namespace',
      opNs,
      '--reuse-values',
      '--set',
      'sidecar.server=node',
    ]);
    await k('-n', opNs, 'rollout', 'status', `deployment/${FULLNAME}`, '--timeout=240s');
    // The rollout ends once the new replicas are Ready, but the API server reaches the webhook
    // through its Service: until the EndpointSlice and kube-proxy have caught up, a call can still
    // go to an old replica (the nginx sidecar) or to one already gone (no sidecar: failurePolicy
    // Ignore). Wait until five admissions in a row, dry runs of demo-agent's Pod, get the Node one.
    let inARow = 0;
    await waitFor('the webhook to inject the Node sidecar five times in a row', 120_000, async () => {
      inARow = (await admittedSidecarImage()) === images.operator ? inARow + 1 : 0;
      return inARow >= 5;
    });
    await k('-n', ns, 'rollout', 'restart', 'deployment/demo-agent');
    await k('-n', ns, 'rollout', 'status', 'deployment/demo-agent', '--timeout=240s');
    const pod = await podOf('app.kubernetes.io/name=demo-agent', ns);
    const image = await k(
      '-n',
      ns,
      'get',
      'pod',
      pod.name,
      '-o',
      'jsonpath={.spec.initContainers[?(@.name=="agentcard-sidecar")].image}',
    );
    expect(image.trim()).toBe(images.operator);
    // The Node server's startup probe, on its monitoring port, passed.
    const sidecar = JSON.parse(
      await k(
        '-n',
        ns,
        'get',
        'pod',
        pod.name,
        '-o',
        'jsonpath={.spec.initContainers[?(@.name=="agentcard-sidecar")].startupProbe.httpGet}',
      ),
    ) as unknown;
    expect(sidecar).toEqual({ path: '/healthz', port: 8096, scheme: 'HTTP' });
    const started = await k(
      '-n',
      ns,
      'get',
      'pod',
      pod.name,
      '-o',
      'jsonpath={.status.initContainerStatuses[?(@.name=="agentcard-sidecar")].started}',
    );
    expect(started.trim()).toBe('true');
    const card = JSON.parse(await curl(`http://${pod.ip}:${CARD_PORT}/.well-known/agent-card.json`)) as Card;
    expect((await verifyCard(card, { keys: [publicKey] })).verified).toBe(true);
    const pub = JSON.parse(
      await curl(`http://${pod.ip}:${CARD_PORT}/.well-known/agent-card.json`, { Host: PUBLIC_HOST }),
    ) as Card;
    expect(pub.supportedInterfaces[0]!.url).toBe(`https://${PUBLIC_HOST}/agents/support/a2a/jsonrpc`);
  });
});
