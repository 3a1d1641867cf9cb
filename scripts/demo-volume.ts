/**
 * What the kubelet does for a ConfigMap volume, for the demo (which has no kubelet): writes the
 * ConfigMap's keys into `<dir>/..<timestamp>/`, points `<dir>/..data` at it, and links each key
 * as `<dir>/<key> -> ..data/<key>`. On every change of the ConfigMap it writes a new timestamped
 * directory and swaps `..data` atomically (rename of a new symlink), as the kubelet does.
 */
import {
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  readlinkSync,
} from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, Watch, type V1ConfigMap } from '@kubernetes/client-node';

export type VolumeOptions = {
  kubeconfig: string;
  namespace: string;
  name: string;
  dir: string;
  onError?: (message: string) => void;
};

export class ConfigMapVolume {
  readonly dir: string;
  private readonly opts: VolumeOptions;
  private readonly kc = new KubeConfig();
  private abort?: AbortController;
  private stopped = false;
  private lastVersion = '';
  private serial = 0;

  constructor(opts: VolumeOptions) {
    this.opts = opts;
    this.dir = opts.dir;
    this.kc.loadFromFile(opts.kubeconfig);
  }

  /** Waits (up to 60 s) for the ConfigMap, lays it out, then keeps it in sync. */
  async start(): Promise<void> {
    mkdirSync(this.dir, { recursive: true });
    const core = this.kc.makeApiClient(CoreV1Api);
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        const cm = await core.readNamespacedConfigMap({
          name: this.opts.name,
          namespace: this.opts.namespace,
        });
        this.write(cm);
        break;
      } catch (err) {
        if ((err as { code?: number }).code !== 404 || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    void this.watch();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.abort?.abort();
  }

  private async watch(): Promise<void> {
    while (!this.stopped) {
      await new Promise<void>((done) => {
        const watch = new Watch(this.kc);
        watch
          .watch(
            `/api/v1/namespaces/${this.opts.namespace}/configmaps`,
            { fieldSelector: `metadata.name=${this.opts.name}` },
            (type, cm: V1ConfigMap) => {
              if (type === 'ADDED' || type === 'MODIFIED') this.write(cm);
            },
            () => done(),
          )
          .then((controller) => (this.abort = controller))
          .catch((err: unknown) => {
            this.opts.onError?.(err instanceof Error ? err.message : String(err));
            done();
          });
      });
      if (!this.stopped) await new Promise((r) => setTimeout(r, 1000));
    }
  }

  /** Writes one version of the ConfigMap and swaps `..data` to it. */
  private write(cm: V1ConfigMap): void {
    const version = cm.metadata?.resourceVersion ?? '';
    if (version && version === this.lastVersion) return;
    this.lastVersion = version;
    const data = cm.data ?? {};
    const stamp = `..${new Date().toISOString().replace(/[-:T]/g, '_').replace('Z', '')}.${++this.serial}`;
    mkdirSync(join(this.dir, stamp));
    for (const [key, value] of Object.entries(data)) writeFileSync(join(this.dir, stamp, key), value);
    let previous: string | undefined;
    try {
      previous = readlinkSync(join(this.dir, '..data'));
    } catch {
      previous = undefined;
    }
    symlinkSync(stamp, join(this.dir, '..data_tmp'));
    renameSync(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
    const names = new Set(Object.keys(data));
    for (const entry of readdirSync(this.dir)) {
      if (entry.startsWith('..')) continue;
      if (!names.has(entry)) rmSync(join(this.dir, entry));
    }
    for (const key of names) {
      try {
        symlinkSync(join('..data', key), join(this.dir, key));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
    if (previous && previous !== stamp) rmSync(join(this.dir, previous), { recursive: true, force: true });
  }
}
