/**
 * A cluster's catalog as another cluster reaches it: the real catalog server (`agentcard
 * sidecar`) serving the files of the catalog's ConfigMap, copied into its directory the way the
 * kubelet updates a ConfigMap volume whenever the ConfigMap changes, behind a real nginx that
 * terminates TLS (an import fetches https only). The host can go down and come back on the same
 * port, and nginx can rewrite bytes of what it serves (a tampering hop).
 */
import { createLogger } from '../../operator/log.ts';
import { startSidecar, type Sidecar } from '../../operator/sidecar/server.ts';
import { kubeletWrite, tempDir } from './card-files.ts';
import { freePort } from './ports.ts';
import { startNginxProxy, type Proxy } from './rewriting-proxies.ts';
import { rm } from 'node:fs/promises';

export interface CatalogHost {
  /** https://127.0.0.1:<port>/.well-known/ai-catalog.json */
  url: string;
  /** Stops answering (connections refused) until up(). */
  down(): Promise<void>;
  /** Serves again on the same port; with `filters`, rewrites every served body (nginx sub_filter). */
  up(filters?: Array<[string, string]>): Promise<void>;
  /** Waits until the server serves the ConfigMap's current catalog bytes. */
  synced(): Promise<void>;
  close(): Promise<void>;
}

/**
 * `read` returns the catalog ConfigMap's data (undefined while it does not exist); it is polled
 * every `pollMs`, and each change is laid out in the server's directory.
 */
export async function startCatalogHost(opts: {
  read: () => Promise<Record<string, string> | undefined>;
  tls: { cert: string; key: string };
  pollMs?: number;
}): Promise<CatalogHost> {
  const dir = await tempDir('agentcard-catalog-host-');
  const sidecar: Sidecar = await startSidecar({
    dir,
    port: 0,
    metricsPort: 0,
    host: '127.0.0.1',
    defaultMaxAgeSeconds: 0,
    logger: createLogger({}, { write: () => {} }),
    pollMs: 60_000,
  });
  const port = await freePort();
  let proxy: Proxy | undefined;
  let written = '';
  let live = '';
  let stopped = false;
  const syncOnce = async () => {
    const data = await opts.read().catch(() => undefined);
    if (!data) return;
    live = data['ai-catalog.json'] ?? '';
    const text = JSON.stringify(data);
    if (text === written) return;
    await kubeletWrite(dir, data);
    await sidecar.reload();
    written = text;
  };
  // One at a time: an older read must never be laid out after a newer one.
  let running: Promise<void> = Promise.resolve();
  const sync = () => (running = running.then(syncOnce, syncOnce));
  const loop = (async () => {
    while (!stopped) {
      await sync().catch(() => undefined);
      await new Promise((r) => setTimeout(r, opts.pollMs ?? 200));
    }
  })();
  const up = async (filters?: Array<[string, string]>) => {
    await proxy?.close();
    proxy = await startNginxProxy({
      address: '127.0.0.1',
      port,
      upstream: sidecar.port,
      tls: opts.tls,
      // A rewriting hop answers in full: a 304 would carry no bytes to rewrite.
      ...(filters ? { filters, noRevalidation: true } : {}),
    });
  };
  await up();
  return {
    url: `https://127.0.0.1:${port}/.well-known/ai-catalog.json`,
    up,
    async down() {
      await proxy?.close();
      proxy = undefined;
    },
    async synced() {
      for (let i = 0; i < 300; i++) {
        await sync();
        if (live && JSON.parse(written || '{}')['ai-catalog.json'] === live) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error('the catalog host did not get the published catalog within 30 s');
    },
    async close() {
      stopped = true;
      await loop;
      await proxy?.close();
      await sidecar.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
