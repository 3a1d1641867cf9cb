/**
 * Where the operator finds the API server: `--kubeconfig FILE`, else the KUBECONFIG environment
 * variable, else the in-cluster service account, else ~/.kube/config.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from './client-node.ts';
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
        'no Kubernetes configuration: pass --kubeconfig FILE, set KUBECONFIG, create ~/.kube/config, or run in a cluster',
      );
    }
  } catch (err) {
    if (err instanceof UserError) throw err;
    throw new UserError(`cannot load the Kubernetes configuration: ${describeError(err)}`);
  }
  if (!kc.getCurrentCluster()) {
    throw new UserError(`the Kubernetes configuration from ${source} has no current cluster`);
  }
  return kc;
}

/** The namespace of the current context, if the kubeconfig names one. */
export function contextNamespace(kc: KubeConfig): string | undefined {
  const ctx = kc.getContextObject(kc.getCurrentContext());
  return ctx?.namespace || undefined;
}
