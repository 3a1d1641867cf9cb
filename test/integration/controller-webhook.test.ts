// `agentcard operator` starts the Pod admission webhook (operator/webhook) from its flags, on
// every replica: a real child process serving HTTPS with the CA it keeps in a Secret.
import { connect } from 'node:net';
import { request } from 'node:https';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestNamespace, kubeConfig, type TestNamespace } from '../support/cluster.ts';
import { installCrd, sleep, spawnOperator, waitFor, type ChildOperator } from '../support/operator.ts';
import { freePort } from '../support/ports.ts';
import { admissionReview } from '../support/admission.ts';

const kc = kubeConfig();
const core = kc.makeApiClient(CoreV1Api);
let ns: TestNamespace;
const procs: ChildOperator[] = [];

beforeAll(async () => {
  await installCrd(kc);
  ns = await createTestNamespace('controller-webhook');
});
afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  await ns?.cleanup();
});

/** GET https://127.0.0.1:port/healthz, trusting only `ca`, for the Service's DNS name. */
function healthz(port: number, ca: string, servername: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/healthz', ca, servername }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

/** POSTs an AdmissionReview of an annotated Pod; resolves with the status and the patch's paths. */
function review(port: number, ca: string, servername: string): Promise<{ status: number; paths: string[] }> {
  const body = JSON.stringify(admissionReview({ 'agentcard.dev/inject': 'weather' }));
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/mutate-pods',
        method: 'POST',
        ca,
        servername,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => {
          const patch = (JSON.parse(text) as { response: { patch?: string } }).response.patch;
          const ops = patch
            ? (JSON.parse(Buffer.from(patch, 'base64').toString()) as { path: string }[])
            : [];
          resolve({ status: res.statusCode ?? 0, paths: ops.map((o) => o.path) });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Resolves with the connect error's code (e.g. ECONNREFUSED), or 'connected'. */
function tcpConnect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve('connected');
    });
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

/** Starts an operator with the webhook on a free port; resolves once it serves, with its CA. */
async function webhookOperator(
  secret: string,
  extra: string[],
): Promise<{ op: ChildOperator; port: number; ca: string }> {
  const port = await freePort();
  const op = spawnOperator(ns.name, [
    '--no-leader-elect',
    '--no-probes',
    '--webhook-port',
    String(port),
    '--operator-namespace',
    ns.name,
    '--webhook-secret',
    secret,
    '--webhook-service',
    'op-webhook',
    '--webhook-config',
    'op-webhook-missing',
    '--sidecar-image',
    'registry.example/agentcard:test',
    ...extra,
  ]);
  procs.push(op);
  await op.waitForLog('webhook listening');
  const data = await waitFor('the webhook Secret', () =>
    core.readNamespacedSecret({ namespace: ns.name, name: secret }).catch(() => undefined),
  );
  const ca = Buffer.from(data.data!['ca.crt']!, 'base64').toString('utf8');
  return { op, port, ca };
}

describe('operator command: admission webhook', () => {
  it('serves the webhook over TLS with the CA it keeps in a Secret', async () => {
    const { op, port, ca } = await webhookOperator('op-webhook-tls', []);
    expect(await healthz(port, ca, `op-webhook.${ns.name}.svc`)).toBe(200);
    op.child.kill('SIGTERM');
    expect(await op.exited).toBe(0);
  });

  // After SIGTERM the Service keeps sending reviews to the Pod for a few seconds (its endpoint is
  // only marked terminating): the webhook answers them until --webhook-shutdown-delay has passed.
  it('keeps answering reviews for --webhook-shutdown-delay after SIGTERM, then exits 0', async () => {
    const { op, port, ca } = await webhookOperator('op-drain-tls', ['--webhook-shutdown-delay=3s']);
    op.child.kill('SIGTERM');
    await op.waitForLog('webhook draining');
    await sleep(1_000);
    expect(await review(port, ca, `op-webhook.${ns.name}.svc`)).toEqual({
      status: 200,
      paths: ['/spec/initContainers', '/spec/volumes', '/metadata/labels'],
    });
    expect(await op.exited).toBe(0);
    expect(await tcpConnect(port)).toBe('ECONNREFUSED');
  });

  it('closes the webhook port soon after SIGTERM with --webhook-shutdown-delay=0', async () => {
    const { op, port, ca } = await webhookOperator('op-nodrain-tls', ['--webhook-shutdown-delay=0']);
    expect((await review(port, ca, `op-webhook.${ns.name}.svc`)).status).toBe(200);
    op.child.kill('SIGTERM');
    await waitFor(
      'the webhook port refusing connections',
      async () => ((await tcpConnect(port)) === 'ECONNREFUSED' ? true : undefined),
      // Well before the 5 s default delay would have passed.
      4_000,
    );
    expect(await op.exited).toBe(0);
    expect(op.lines.some((l) => l.includes('"webhook draining"'))).toBe(false);
  });

  it('refuses a --webhook-shutdown-delay over 20s, naming the flag (exit 2)', async () => {
    const op = spawnOperator(ns.name, [
      '--no-leader-elect',
      '--webhook-shutdown-delay=45s',
      '--sidecar-image',
      'registry.example/agentcard:test',
    ]);
    procs.push(op);
    expect(await op.exited).toBe(2);
    expect(op.lines.filter((l) => l.startsWith('agentcard: '))).toEqual([
      expect.stringContaining('--webhook-shutdown-delay must be at most 20s'),
    ]);
  });

  it('refuses to start the webhook without a sidecar image, in one line (exit 2)', async () => {
    const op = spawnOperator(ns.name, [
      '--no-leader-elect',
      '--no-probes',
      '--webhook-port',
      String(await freePort()),
    ]);
    procs.push(op);
    expect(await op.exited).toBe(2);
    const errors = op.lines.filter((l) => l.startsWith('agentcard: '));
    expect(errors).toEqual(['agentcard: the admission webhook needs --sidecar-image (the image to inject)']);
  });
});
