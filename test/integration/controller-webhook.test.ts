// `agentcard operator` starts the Pod admission webhook (operator/webhook) from its flags, on
// every replica: a real child process serving HTTPS with the CA it keeps in a Secret.
import { request } from 'node:https';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestNamespace, kubeConfig, type TestNamespace } from '../support/cluster.ts';
import { installCrd, spawnOperator, waitFor, type ChildOperator } from '../support/operator.ts';
import { freePort } from '../support/ports.ts';

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

describe('operator command: admission webhook', () => {
  it('serves the webhook over TLS with the CA it keeps in a Secret', async () => {
    const port = await freePort();
    const op = spawnOperator(ns.name, [
      '--no-leader-elect',
      '--no-probes',
      '--webhook-port',
      String(port),
      '--operator-namespace',
      ns.name,
      '--webhook-secret',
      'op-webhook-tls',
      '--webhook-service',
      'op-webhook',
      '--webhook-config',
      'op-webhook-missing',
      '--sidecar-image',
      'registry.example/agentcard:test',
    ]);
    procs.push(op);
    await op.waitForLog('webhook listening');
    const secret = await waitFor('the webhook Secret', () =>
      core.readNamespacedSecret({ namespace: ns.name, name: 'op-webhook-tls' }).catch(() => undefined),
    );
    const ca = Buffer.from(secret.data!['ca.crt']!, 'base64').toString('utf8');
    expect(await healthz(port, ca, `op-webhook.${ns.name}.svc`)).toBe(200);
    op.child.kill('SIGTERM');
    expect(await op.exited).toBe(0);
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
