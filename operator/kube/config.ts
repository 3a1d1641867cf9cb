/**
 * Where the operator finds the API server: `--kubeconfig FILE`, else the KUBECONFIG environment
 * variable, else the in-cluster service account, else ~/.kube/config.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
// The module itself, not the package root: see slim-load.ts.
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';
import { UserError, describeError } from '../errors.ts';

export interface KubeConfigOptions {
  kubeconfig?: string;
  env?: NodeJS.ProcessEnv;
}

export function loadKubeConfig(opts: KubeConfigOptions = {}): KubeConfig {
  const env = opts.env ?? process.env;
  const kc = new KubeConfig();
  let source: string;
  try {
    if (opts.kubeconfig) {
      if (!existsSync(opts.kubeconfig))
        throw new UserError(`kubeconfig file ${opts.kubeconfig} does not exist`);
      source = opts.kubeconfig;
      kc.loadFromFile(opts.kubeconfig);
    } else if (env.KUBECONFIG) {
      source = `KUBECONFIG=${env.KUBECONFIG}`;
      // loadFromDefault reads process.env; it merges the files of a path list like kubectl.
      kc.loadFromDefault();
    } else if (env.KUBERNETES_SERVICE_HOST) {
      source = 'the in-cluster service account';
      kc.loadFromCluster();
    } else if (existsSync(join(homedir(), '.kube', 'config'))) {
      source = '~/.kube/config';
      kc.loadFromFile(join(homedir(), '.kube', 'config'));
    } else {
      throw new UserError(
        'no Kubernetes configuration: pass --kubeconfig FILE, set KUBECONFIG, or run in a cluster',
      );
    }
  } catch (err) {
    if (err instanceof UserError) throw err;
    throw new UserError(`cannot load the Kubernetes configuration: ${describeError(err)}`);
  }
  if (!kc.getCurrentCluster()) {
    throw new UserError(`the Kubernetes configuration from ${source} has no current cluster`);
  }
  poolConnections(kc);
  return kc;
}

type Dispatcher = { close(): Promise<void> };
type DispatcherFactory = (cluster: unknown, agentOptions: Record<string, unknown>) => Dispatcher | undefined;

/**
 * client-node 2.0 builds a new undici Agent every time it authenticates a request
 * (KubeConfig.createDispatcher, also behind kube/client.ts), so every API call would open a new
 * TLS connection and leave an idle one behind: at 1,000 AgentCards that cost most of the
 * operator's CPU and 100+ MiB of RSS. This reuses one Agent per distinct TLS setting (CA, client
 * certificate and key, server name): a rotated certificate gets a new Agent and the previous one
 * is closed once its requests are done. Auth headers (tokens) are set per request, unaffected.
 */
export function poolConnections(kc: KubeConfig): void {
  const target = kc as unknown as { createDispatcher: DispatcherFactory };
  const create = target.createDispatcher.bind(kc);
  let current: { key: string; dispatcher: Dispatcher | undefined } | undefined;
  target.createDispatcher = (cluster, agentOptions) => {
    const hash = createHash('sha256');
    for (const field of ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername']) {
      const value = agentOptions[field];
      hash.update(`${field}:${Buffer.isBuffer(value) ? value.toString('base64') : String(value)};`);
    }
    hash.update(JSON.stringify((cluster as { server?: string; proxyUrl?: string } | null) ?? {}));
    const key = hash.digest('hex');
    if (current?.key === key) return current.dispatcher;
    const previous = current?.dispatcher;
    const dispatcher = create(cluster, agentOptions);
    current = { key, dispatcher };
    if (previous) void previous.close().catch(() => {});
    return dispatcher;
  };
}

/** The namespace of the current context, if the kubeconfig names one. */
export function contextNamespace(kc: KubeConfig): string | undefined {
  const ctx = kc.getContextObject(kc.getCurrentContext());
  return ctx?.namespace || undefined;
}
