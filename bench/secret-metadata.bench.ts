/**
 * Memory cost of the controller's metadata-only Secret watch (operator/controllers/cache/collections.ts):
 * N Secrets on the local control plane, each with 1 KiB of data and a kubectl
 * last-applied-configuration annotation (what `kubectl apply` leaves), cached three ways, each in
 * a fresh Node.js process: the operator's way (PartialObjectMetadata, trimmed to name, namespace
 * and resourceVersion), metadata without the trim, and whole Secrets. Reports the V8 heap and RSS
 * growth after a full GC, per Secret. Bounded: N Secrets created once, three list+watch syncs.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { trimToIdentity } from '../operator/controllers/cache/collections.ts';
import { KubeClient } from '../operator/kube/client.ts';
import { loadKubeConfig } from '../operator/kube/config.ts';
import { ResilientInformer } from '../operator/kube/informer.ts';
import { createLogger } from '../operator/log.ts';
import { up } from '../test/controlplane/control.ts';
import { kubeconfigFile } from '../test/controlplane/paths.ts';
import { table, writeSection } from './report.ts';

const SECRETS = 2_000;
type Mode = 'metadata, trimmed (the operator)' | 'metadata, untrimmed' | 'whole Secrets';
const MODES: Mode[] = ['metadata, trimmed (the operator)', 'metadata, untrimmed', 'whole Secrets'];

async function child(mode: Mode, namespace: string): Promise<void> {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const client = new KubeClient(loadKubeConfig({ kubeconfig: kubeconfigFile }));
  // Warm the client (TLS, auth) before the baseline.
  await client.request('GET', `/api/v1/namespaces/${namespace}`);
  gc();
  const before = process.memoryUsage();
  const informer = new ResilientInformer({
    name: 'secrets',
    client,
    path: `/api/v1/namespaces/${namespace}/secrets`,
    log: createLogger({}, { write: () => {} }),
    metadataOnly: mode !== 'whole Secrets',
    trim: mode === 'metadata, trimmed (the operator)' ? trimToIdentity : undefined,
  });
  await informer.start();
  await informer.waitForSync();
  const cached = informer.list().length;
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  const after = process.memoryUsage();
  await informer.stop();
  process.stdout.write(
    JSON.stringify({ cached, heap: after.heapUsed - before.heapUsed, rss: after.rss - before.rss }),
  );
}

async function main(): Promise<void> {
  const { state } = await up((line) => process.stderr.write(`[control plane] ${line}\n`));
  process.stderr.write(`control plane at ${state.server}\n`);
  const client = new KubeClient(loadKubeConfig({ kubeconfig: kubeconfigFile }));
  const namespace = `bench-secrets-${randomBytes(3).toString('hex')}`;
  await client.request('POST', '/api/v1/namespaces', { body: { metadata: { name: namespace } } });
  try {
    const data = { key: randomBytes(768).toString('base64') };
    let next = 0;
    const worker = async () => {
      while (next < SECRETS) {
        const name = `s-${next++}`;
        const body = { apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace }, data };
        await client.request('POST', `/api/v1/namespaces/${namespace}/secrets`, {
          body: {
            ...body,
            metadata: {
              ...body.metadata,
              annotations: { 'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify(body) },
            },
          },
        });
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    const rows: (string | number)[][] = [];
    for (const mode of MODES) {
      const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', mode, namespace], {
        encoding: 'utf8',
      });
      if (r.status !== 0) throw new Error(`${mode}: ${r.stderr}`);
      const { cached, heap, rss } = JSON.parse(r.stdout) as { cached: number; heap: number; rss: number };
      if (cached !== SECRETS) throw new Error(`${mode}: cached ${cached} of ${SECRETS}`);
      const kib = (n: number) => (n / 1024).toFixed(2);
      rows.push([mode, kib(heap / cached), (heap / 2 ** 20).toFixed(1), (rss / 2 ** 20).toFixed(1)]);
      process.stderr.write(`${mode}: ${kib(heap / cached)} KiB heap per Secret\n`);
    }
    writeSection(
      'secret-metadata',
      'Secret metadata cache',
      [
        `The controller watches the metadata of every Secret in its namespaces so that a referenced Secret that appears or changes re-signs its cards within seconds (bench/secret-metadata.bench.ts). ${SECRETS} Secrets, each with 1 KiB of data and a kubectl last-applied-configuration annotation, cached by one informer in a fresh process; growth after a full GC.`,
        '',
        table(['cache', 'heap per Secret (KiB)', 'heap total (MiB)', 'RSS total (MiB)'], rows),
        '',
        'RSS includes the list pages read on the way (V8 keeps the grown heap for a while); the heap figure is what stays.',
      ].join('\n'),
    );
  } finally {
    await client.request('DELETE', `/api/v1/namespaces/${namespace}`).catch(() => {});
  }
}

const args = process.argv.slice(2);
if (args[0] === '--child') await child(args[1] as Mode, args[2]!);
else await main();
