/**
 * Adoption on a real node (docs/adopt.md): an agent that serves its own card, deployed as a
 * Deployment and a Service labelled `agentcard.dev/adopt=true`, gets an AgentCard the operator
 * creates and owns; its card is fetched from the agent, fixed by an overlay, signed, published
 * and served by the central card server by Host, probed, kept in step with the agent's own card,
 * and still served while the Deployment is scaled to zero. No sidecar: the namespace and the
 * Pods ask for no injection.
 *
 * The agent is the demo agent of the operator image (`agentcard demo-agent`, @a2a-js/sdk), which
 * serves the card the SDK holds at /.well-known/agent-card.json, with the URLs it listens on
 * (127.0.0.1): the kind of card the overlay exists to fix. Its `--description` flag stands for a
 * change of the agent's own card (a new release of the agent).
 *
 * Each step logs how long it took (`[adopt] ...` on stderr).
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { publicPart, verifyCard, type JWKS } from '../../operator/card/verify.ts';
import type { JWK } from '../../operator/card/sign.ts';
import { toolPath } from '../controlplane/tools.ts';
import { execInNode, kubectl, nodeKubeconfig } from '../node/control.ts';
import { repoRoot } from '../support/paths.ts';
import { productImages, type ProductImages } from '../support/product-images.ts';
import { CHART_CRD_NAMES } from '../../build/chart-crds.ts';

const state = inject('nodeCluster');
const k = (...args: string[]) => kubectl(state, args);

const RELEASE = 'agentcard';
const opNs = `agentcard-system-${process.pid}`;
const ns = `adopt-${process.pid}`;
const FULLNAME = `${RELEASE}-agentcard-operator`;
const CARD_SERVER = `${FULLNAME}-card-server`;
const AGENT = 'demo-agent';
/** The host the card server answers for (annotation agentcard.dev/card-hosts). */
const HOST = 'echo.example.com';
/** An audience's host: its card's URLs are re-based on its baseURL. */
const PUBLIC_HOST = 'echo-public.example.com';
const PUBLIC_BASE = `https://${PUBLIC_HOST}/agents/echo`;
const FIRST = 'Echoes every message back; the first release of the agent.';
const SECOND = 'Echoes every message back; the second release, with a new description.';

let images: ProductImages;
let publicKey: JWK;
let cardServerIP: string;

const figure = (line: string) => process.stderr.write(`[adopt] ${line}\n`);
const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)} s`;

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

/** A GET from the node's network namespace: status code and body (the host has no route in). */
async function get(url: string, host: string): Promise<{ status: number; body: string }> {
  const out = await execInNode(state, 'curl', [
    '-sS',
    '-m',
    '5',
    '-H',
    `Host: ${host}`,
    '-w',
    '\n%{http_code}',
    url,
  ]);
  const cut = out.lastIndexOf('\n');
  return { status: Number(out.slice(cut + 1)), body: out.slice(0, cut) };
}

/** The card the card server serves for `host`, parsed (undefined unless 200). */
async function servedCard(host: string): Promise<Card | undefined> {
  const r = await get(`http://${cardServerIP}/.well-known/agent-card.json`, host);
  return r.status === 200 ? (JSON.parse(r.body) as Card) : undefined;
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
    await sleep(500);
  }
  throw new Error(
    `timed out after ${timeoutMs / 1000} s waiting for ${what}${last ? `: ${String(last)}` : ''}`,
  );
}

type Condition = { type: string; status: string; reason?: string; message?: string };
type Card = {
  name: string;
  description: string;
  provider?: { organization: string; url: string };
  supportedInterfaces: { url: string; protocolBinding: string }[];
  skills: { id: string }[];
  signatures?: unknown[];
};
type AgentCardObject = {
  metadata: {
    uid: string;
    labels?: Record<string, string>;
    ownerReferences?: { kind: string; name: string; uid: string; controller?: boolean }[];
  };
  spec: Record<string, unknown> & {
    source?: { service?: { name: string; port: string | number }; interval?: string };
    serving?: { server?: string; hosts?: string[] };
  };
  status?: {
    conditions?: Condition[];
    source?: { digest?: string; url?: string; protocolVersion?: string; changes?: number };
  };
};

async function agentCard(): Promise<AgentCardObject | undefined> {
  const out = await k('-n', ns, 'get', 'agentcards', '-o', 'json');
  const items = (JSON.parse(out) as { items: AgentCardObject[] }).items;
  return items.find((c) => (c.metadata as { name?: string }).name === AGENT);
}
const condition = (card: AgentCardObject | undefined, type: string) =>
  card?.status?.conditions?.find((c) => c.type === type);

/** A signing key as the README makes it: `agentcard keygen --secret NAME`, applied as a Secret. */
async function keygen(secret: string): Promise<JWK> {
  const manifest = await new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      [join(repoRoot, 'bin', 'agentcard.js'), 'keygen', '--alg', 'ES256', '--secret', secret],
      (err, stdout, stderr) => (err ? reject(new Error(stderr || err.message)) : resolve(stdout)),
    ),
  );
  await kubectl(state, ['-n', ns, 'create', '-f', '-'], manifest);
  const doc = JSON.parse(manifest) as { stringData: Record<string, string> };
  return publicPart(JSON.parse(doc.stringData['signing.jwk']!) as JWK);
}

/**
 * examples/demo-agent.yaml as an agent nobody wrote a card for: the Deployment labelled for
 * adoption (its card port named, its host given), no injection annotation, and the Service
 * without the sidecar's port.
 */
function adoptableAgent(description: string): string {
  type Manifest = {
    kind: string;
    metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
    spec: {
      template: {
        metadata: { annotations?: Record<string, string> };
        spec: { containers: { image: string; imagePullPolicy?: string; args: string[] }[] };
      };
      ports: { name: string }[];
    };
  };
  const docs = parseAllDocuments(readFileSync(join(repoRoot, 'examples', 'demo-agent.yaml'), 'utf8')).map(
    (d) => d.toJS() as Manifest,
  );
  const deployment = docs.find((d) => d.kind === 'Deployment')!;
  const service = docs.find((d) => d.kind === 'Service')!;
  deployment.metadata.labels = { ...deployment.metadata.labels, 'agentcard.dev/adopt': 'true' };
  deployment.metadata.annotations = {
    'agentcard.dev/card-port': 'a2a',
    'agentcard.dev/card-hosts': HOST,
  };
  delete deployment.spec.template.metadata.annotations;
  const container = deployment.spec.template.spec.containers[0]!;
  container.image = images.operator;
  container.imagePullPolicy = 'Never';
  container.args = [...container.args, `--description=${description}`];
  service.spec.ports = service.spec.ports.filter((p) => p.name !== 'agent-card');
  return docs.map((d) => JSON.stringify(d)).join('\n---\n');
}

/** The agent's interfaces by its Service's DNS name (the card it serves says 127.0.0.1). */
const serviceUrl = (path = '') => `http://${AGENT}.${ns}.svc.cluster.local:8080${path}`;

describe('adopting a labelled workload on a real node', () => {
  beforeAll(async () => {
    images = productImages(inject('productImages'));
    await k('create', 'namespace', opNs);
    const started = Date.now();
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
      'cardServer.enabled=true',
      '--set',
      'adoption.enabled=true',
      '--set',
      `adoption.namespaces={${ns}}`,
      '--wait',
      '--timeout=5m',
    ]);
    figure(`helm install (operator and card server Available): ${seconds(started)}`);
    cardServerIP = (
      await k('-n', opNs, 'get', 'service', CARD_SERVER, '-o', 'jsonpath={.spec.clusterIP}')
    ).trim();
    expect(cardServerIP).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    await k('create', 'namespace', ns);
    await k('label', 'namespace', ns, 'pod-security.kubernetes.io/enforce=restricted');
    publicKey = await keygen('echo-signing');
  });

  afterAll(async () => {
    await k('delete', 'namespace', ns, '--wait=false').catch(() => undefined);
    await helm(['uninstall', RELEASE, '--namespace', opNs, '--wait', '--timeout=120s']).catch(
      () => undefined,
    );
    await k('delete', 'namespace', opNs, '--wait=false').catch(() => undefined);
    // crds.keep leaves the CRDs behind an uninstall; the next run installs into another namespace.
    await k('delete', 'crd', ...CHART_CRD_NAMES, '--ignore-not-found').catch(() => undefined);
  });

  it('creates an owned AgentCard for the labelled Deployment and adopts the card the agent serves', async () => {
    const started = Date.now();
    // As a user applies it: the labelled Deployment and its Service at once, before any Pod runs.
    await kubectl(state, ['-n', ns, 'apply', '-f', '-'], adoptableAgent(FIRST));
    const created = await waitFor('the owned AgentCard', 60_000, agentCard);
    figure(`Deployment applied to the owned AgentCard created: ${seconds(started)}`);
    expect(created.metadata.labels?.['agentcard.dev/adopted-from']).toBe('deployment');
    // The first fetch comes at once, usually before the agent's Pod is Ready: record what it saw.
    const first = await waitFor('the first SourceAvailable condition', 60_000, async () =>
      condition(await agentCard(), 'SourceAvailable'),
    );
    figure(
      `first SourceAvailable after ${seconds(started)}: ${first.status} ${first.reason ?? ''} ${first.message ?? ''}`,
    );
    await k('-n', ns, 'rollout', 'status', `deployment/${AGENT}`, '--timeout=240s');
    figure(`agent Deployment Available: ${seconds(started)}`);
    const deploymentUid = (
      await k('-n', ns, 'get', 'deployment', AGENT, '-o', 'jsonpath={.metadata.uid}')
    ).trim();

    // A first fetch that fails (the Pod not Ready yet) is retried after 10 s, doubling
    // (docs/adopt.md): well before the 5 minute default interval.
    const card = await waitFor('the adopted card (status.source.digest)', 180_000, async () => {
      const c = await agentCard();
      return c?.status?.source?.digest ? c : undefined;
    });
    figure(`Deployment applied to the source card adopted: ${seconds(started)}`);
    expect(card.metadata.labels?.['agentcard.dev/adopted-from']).toBe('deployment');
    expect(card.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Deployment', name: AGENT, uid: deploymentUid, controller: true }),
    ]);
    expect(card.spec.source?.service).toEqual({ name: AGENT, port: 'a2a' });
    expect(card.spec.serving).toMatchObject({ server: 'Central', hosts: [HOST] });
    expect(card.status?.source?.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(card.status?.source?.protocolVersion).toBe('1.0');
    // The named port was read from the Service: the URL is the Service's, port 8080.
    expect(card.status?.source?.url).toBe(`http://${AGENT}.${ns}.svc:8080/.well-known/agent-card.json`);
    expect(condition(card, 'SourceAvailable')).toMatchObject({ status: 'True', reason: 'Adopted' });

    // The card server serves it by Host, as the agent wrote it (no overlay, no signing yet).
    const served = await waitFor('the card server to serve the adopted card', 60_000, () => servedCard(HOST));
    figure(`Deployment applied to the card served centrally: ${seconds(started)}`);
    expect(served.description).toBe(FIRST);
    expect(served.supportedInterfaces[0]!.url).toMatch(/^http:\/\/127\.0\.0\.1:8080\//);
    expect(served.signatures ?? []).toEqual([]);
    // Nothing is injected: the Pod runs the agent alone.
    const containers = await k(
      '-n',
      ns,
      'get',
      'pods',
      '-l',
      'app.kubernetes.io/name=demo-agent',
      '-o',
      'jsonpath={.items[*].spec.initContainers[*].name} {.items[*].spec.containers[*].name}',
    );
    expect(containers.trim()).toBe('agent');
  }, 540_000);

  it('an overlay, signing and an audience added to the owned AgentCard are published, signed and re-based', async () => {
    const started = Date.now();
    // The operator's apply owns spec.source.service and spec.serving only: the rest is the user's.
    const patch = {
      spec: {
        source: { interval: '10s' },
        card: {
          supportedInterfaces: [
            { url: serviceUrl('/a2a/jsonrpc'), protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
            { url: serviceUrl('/a2a/rest'), protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
          ],
          provider: { organization: 'Example', url: 'https://example.com' },
          skills: [
            {
              id: 'echo',
              name: 'Echo',
              description: 'Answers each message with the text it received.',
              tags: ['echo'],
            },
          ],
        },
        signing: { keys: [{ secretRef: { name: 'echo-signing', key: 'signing.jwk' } }] },
        audiences: [{ name: 'public', hosts: [PUBLIC_HOST], baseURL: PUBLIC_BASE, probe: 'Disabled' }],
        probe: { interval: '10s' },
      },
    };
    await k('-n', ns, 'patch', 'agentcard', AGENT, '--type=merge', '-p', JSON.stringify(patch));

    const card = await waitFor('the signed, overlaid card at the card server', 120_000, async () => {
      const c = await servedCard(HOST);
      return c?.signatures?.length ? c : undefined;
    });
    figure(`overlay patched to the signed card served: ${seconds(started)}`);
    // The agent's fields stay, the overlay's win.
    expect(card.name).toBe('Demo echo agent');
    expect(card.description).toBe(FIRST);
    expect(card.provider).toEqual({ organization: 'Example', url: 'https://example.com' });
    expect(card.supportedInterfaces.map((i) => i.url)).toEqual([
      serviceUrl('/a2a/jsonrpc'),
      serviceUrl('/a2a/rest'),
    ]);
    expect(card.skills.map((s) => s.id)).toEqual(['echo']);
    // Signed by the operator, verifying against the key and against the JWKS the server serves.
    expect((await verifyCard(card, { keys: [publicKey] })).verified).toBe(true);
    const jwks = await get(`http://${cardServerIP}/.well-known/jwks.json`, HOST);
    expect(jwks.status).toBe(200);
    expect((await verifyCard(card, JSON.parse(jwks.body) as JWKS)).verified).toBe(true);

    // The audience's host gets its own card, its URLs re-based on its baseURL.
    const pub = await waitFor('the audience card', 60_000, () => servedCard(PUBLIC_HOST));
    expect(pub.supportedInterfaces.map((i) => i.url)).toEqual([
      `${PUBLIC_BASE}/a2a/jsonrpc`,
      `${PUBLIC_BASE}/a2a/rest`,
    ]);
    expect(pub.description).toBe(FIRST);
    expect((await verifyCard(pub, { keys: [publicKey] })).verified).toBe(true);
    // A host no card claims: 404, never some other card.
    expect(
      (await get(`http://${cardServerIP}/.well-known/agent-card.json`, 'other.example.com')).status,
    ).toBe(404);
  });

  it('probes the adopted card by its overlaid interfaces: Ready=True', async () => {
    const started = Date.now();
    const card = await waitFor('Ready=True', 120_000, async () => {
      const c = await agentCard();
      return condition(c, 'Ready')?.status === 'True' ? c : undefined;
    });
    figure(`Ready=True after: ${seconds(started)} (from the end of the previous step)`);
    expect(condition(card, 'SourceAvailable')?.status).toBe('True');
  });

  it("a change of the agent's own card reaches the served card, with a SourceChanged Event", async () => {
    const before = (await agentCard())!;
    const started = Date.now();
    // A new release of the agent: the Deployment rolls with another description. The adoption
    // controller re-applies its fields on the workload's change; the user's fields stay.
    await kubectl(state, ['-n', ns, 'apply', '-f', '-'], adoptableAgent(SECOND));
    await k('-n', ns, 'rollout', 'status', `deployment/${AGENT}`, '--timeout=240s');
    figure(`agent rolled out: ${seconds(started)}`);
    const card = await waitFor('the new description at the card server', 180_000, async () => {
      const c = await servedCard(HOST);
      return c?.description === SECOND ? c : undefined;
    });
    figure(`Deployment rolled to the changed card served: ${seconds(started)}`);
    expect((await verifyCard(card, { keys: [publicKey] })).verified).toBe(true);
    expect(card.supportedInterfaces.map((i) => i.url)).toEqual([
      serviceUrl('/a2a/jsonrpc'),
      serviceUrl('/a2a/rest'),
    ]);
    const after = (await agentCard())!;
    expect(after.status?.source?.digest).not.toBe(before.status?.source?.digest);
    expect(after.status?.source?.changes ?? 0).toBeGreaterThanOrEqual(1);
    expect(after.spec.card).toBeDefined();
    expect(after.spec.signing).toBeDefined();
    const events = await k(
      '-n',
      ns,
      'get',
      'events',
      '--field-selector',
      `involvedObject.name=${AGENT},involvedObject.kind=AgentCard,reason=SourceChanged`,
      '-o',
      'jsonpath={.items[*].message}',
    );
    expect(events).toMatch(/changed \(sha256:.* to sha256:.*\); publishing it/);
  });

  it('scaled to zero, the card server still serves the signed card; SourceAvailable=False says why', async () => {
    const last = (await servedCard(HOST))!;
    const started = Date.now();
    await k('-n', ns, 'scale', `deployment/${AGENT}`, '--replicas=0');
    await waitFor('no agent Pod left', 120_000, async () => {
      const out = await k('-n', ns, 'get', 'pods', '-l', 'app.kubernetes.io/name=demo-agent', '-o', 'name');
      return out.trim() === '' ? true : undefined;
    });
    figure(`scaled to zero (no Pod left): ${seconds(started)}`);
    const card = await waitFor('SourceAvailable=False', 120_000, async () => {
      const c = await agentCard();
      return condition(c, 'SourceAvailable')?.status === 'False' ? c : undefined;
    });
    figure(`scale to zero to SourceAvailable=False: ${seconds(started)}`);
    expect(condition(card, 'SourceAvailable')!.message).toMatch(
      /the last good card \(sha256:[0-9a-f]{12}\) stays in use/,
    );
    // Served throughout, the same signed bytes, for 20 s of polling.
    const until = Date.now() + 20_000;
    let polls = 0;
    while (Date.now() < until) {
      const served = await servedCard(HOST);
      expect(served).toEqual(last);
      polls++;
      await sleep(1_000);
    }
    figure(`served ${polls} times in 20 s with no Pod`);
    expect((await verifyCard(last, { keys: [publicKey] })).verified).toBe(true);
  });

  it('removing the label deletes the owned AgentCard; the card server stops serving its host', async () => {
    const started = Date.now();
    await k('-n', ns, 'label', 'deployment', AGENT, 'agentcard.dev/adopt-');
    await waitFor('the owned AgentCard to go', 120_000, async () => ((await agentCard()) ? undefined : true));
    figure(`label removed to the AgentCard deleted: ${seconds(started)}`);
    await waitFor('the card server to answer 404', 120_000, async () => {
      const r = await get(`http://${cardServerIP}/.well-known/agent-card.json`, HOST);
      return r.status === 404 ? true : undefined;
    });
    figure(`label removed to the card server answering 404: ${seconds(started)}`);
    // The workload is untouched.
    expect(await k('-n', ns, 'get', 'deployment', AGENT, '-o', 'name')).toContain(AGENT);
  });
});
