/**
 * Where the webhook's serving certificate comes from, and keeping it current:
 *
 * - self-signed (default): a CA and serving certificate kept in a Secret in the operator's
 *   namespace, renewed when a third of a lifetime is left; the MutatingWebhookConfiguration's
 *   caBundle is patched to match (and re-checked on every sync, so a GitOps tool that reverts it
 *   is corrected; see docs/install.md, "Argo CD", for the ignore rule);
 * - cert-manager: tls.crt / tls.key read from a mounted directory and re-read when they change;
 *   cert-manager's CA injector owns the caBundle.
 */
import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { join } from 'node:path';
import type { V1MutatingWebhookConfiguration, V1OwnerReference, V1Secret } from '@kubernetes/client-node';
import { readOptional, readSecret, secretPath } from '../kube/api.ts';
import { CONTENT_TYPE, type KubeClient } from '../kube/client.ts';
import { isConflict } from '../kube/errors.ts';
import { hasOwner, withOwner } from '../kube/owner.ts';
import type { Logger } from '../log.ts';
import { SECRET_KEYS, renewBundle } from './certs.ts';
import type { CertBundle } from './certs.ts';

export interface ServingCert {
  cert: string;
  key: string;
}

export interface CertSource {
  current(): ServingCert;
  /** Called after the certificate changed (renewal, rotation by cert-manager). */
  onChange(listener: (cert: ServingCert) => void): void;
  close(): void;
}

const webhookConfigPath = (name: string) =>
  `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${encodeURIComponent(name)}`;

function fromSecret(secret: V1Secret | undefined): Partial<CertBundle> {
  const data = secret?.data ?? {};
  const out: Partial<CertBundle> = {};
  for (const [field, key] of Object.entries(SECRET_KEYS) as [keyof CertBundle, string][]) {
    const b64 = data[key];
    if (b64) out[field] = Buffer.from(b64, 'base64').toString('utf8');
  }
  return out;
}

function toSecretData(bundle: CertBundle): Record<string, string> {
  const data: Record<string, string> = {};
  for (const [field, key] of Object.entries(SECRET_KEYS) as [keyof CertBundle, string][]) {
    data[key] = Buffer.from(bundle[field]).toString('base64');
  }
  return data;
}

/**
 * Reads the Secret, renews what is due, writes it back (optimistic concurrency: on a conflict
 * another replica won, and its bundle is read and used) and returns the bundle in force. With an
 * `owner` (kube/owner.ts), a Secret that does not name it yet is rewritten with it, unchanged
 * otherwise, so `helm uninstall` deletes it also when an older operator created it.
 */
export async function syncCertSecret(
  client: KubeClient,
  opts: {
    namespace: string;
    secretName: string;
    hosts: string[];
    now?: Date;
    owner?: V1OwnerReference | undefined;
  },
): Promise<{ bundle: CertBundle; renewed: boolean }> {
  for (let attempt = 0; ; attempt++) {
    const secret = await readSecret(client, opts.namespace, opts.secretName);
    const { bundle, changed } = await renewBundle(fromSecret(secret), opts.hosts, opts.now ?? new Date());
    const adopt = secret !== undefined && !hasOwner(secret.metadata, opts.owner);
    if (!changed && !adopt) return { bundle, renewed: false };
    const ownerReferences = withOwner(secret?.metadata?.ownerReferences, opts.owner);
    const body: V1Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: {
        name: opts.secretName,
        namespace: opts.namespace,
        labels: {
          'app.kubernetes.io/managed-by': 'agentcard-operator',
          'app.kubernetes.io/component': 'webhook',
        },
        ...(ownerReferences ? { ownerReferences } : {}),
        ...(secret?.metadata?.resourceVersion ? { resourceVersion: secret.metadata.resourceVersion } : {}),
      },
      data: toSecretData(bundle),
    };
    try {
      if (secret) await client.request('PUT', secretPath(opts.namespace, opts.secretName), { body });
      else await client.request('POST', secretPath(opts.namespace), { body });
      return { bundle, renewed: changed };
    } catch (err) {
      // 409: another replica wrote first (create or replace); its bundle is read next round.
      if (!isConflict(err) || attempt >= 3) throw err;
    }
  }
}

/**
 * Sets caBundle on every webhook of the MutatingWebhookConfiguration where it differs.
 * Returns how many were patched; a missing configuration is 'missing' (not installed yet).
 */
export async function patchCaBundle(
  client: KubeClient,
  name: string,
  caBundlePem: string,
): Promise<number | 'missing'> {
  const config = await readOptional<V1MutatingWebhookConfiguration>(client, webhookConfigPath(name));
  if (!config) return 'missing';
  const want = Buffer.from(caBundlePem).toString('base64');
  const ops: object[] = [];
  (config.webhooks ?? []).forEach((w, i) => {
    if (w.clientConfig.caBundle !== want) {
      // The test op makes the patch fail instead of overwriting a concurrent change blindly.
      ops.push({ op: 'test', path: `/webhooks/${i}/name`, value: w.name });
      ops.push({ op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value: want });
    }
  });
  if (ops.length === 0) return 0;
  await client.request('PATCH', webhookConfigPath(name), { body: ops, contentType: CONTENT_TYPE.jsonPatch });
  return ops.length / 2;
}

export async function selfSignedCertSource(opts: {
  client: KubeClient;
  namespace: string;
  secretName: string;
  webhookConfigName: string;
  hosts: string[];
  logger: Logger;
  /** The Deployment that owns the Secret (kube/owner.ts); none: the Secret has no owner. */
  owner?: V1OwnerReference | undefined;
  /** How often the Secret and the caBundle are re-checked (default 10 minutes). */
  syncMs?: number;
}): Promise<CertSource> {
  const { logger } = opts;
  const listeners: ((c: ServingCert) => void)[] = [];
  let current: ServingCert | undefined;

  const sync = async () => {
    const { bundle, renewed } = await syncCertSecret(opts.client, opts);
    if (renewed) {
      logger.info('webhook certificate issued', {
        secret: `${opts.namespace}/${opts.secretName}`,
        notAfter: new X509Certificate(bundle.cert).validTo,
      });
    }
    const patched = await patchCaBundle(opts.client, opts.webhookConfigName, bundle.caBundle);
    if (patched === 'missing') {
      logger.warn('MutatingWebhookConfiguration not found; caBundle not set', {
        name: opts.webhookConfigName,
      });
    } else if (patched > 0) {
      logger.info('caBundle updated', { name: opts.webhookConfigName, webhooks: patched });
    }
    if (!current || current.cert !== bundle.cert) {
      const first = !current;
      current = { cert: bundle.cert, key: bundle.key };
      if (!first) listeners.forEach((l) => l(current!));
    }
  };

  await sync();
  const timer = setInterval(() => {
    sync().catch((err: unknown) =>
      logger.warn('webhook certificate sync failed', { error: (err as Error).message }),
    );
  }, opts.syncMs ?? 600_000);
  timer.unref();
  return {
    current: () => current!,
    onChange: (l) => void listeners.push(l),
    close: () => clearInterval(timer),
  };
}

/** cert-manager mode: the Secret it maintains, mounted as a directory with tls.crt and tls.key. */
export async function directoryCertSource(opts: {
  dir: string;
  logger: Logger;
  pollMs?: number;
}): Promise<CertSource> {
  const listeners: ((c: ServingCert) => void)[] = [];
  const read = async (): Promise<ServingCert> => {
    const [cert, key] = await Promise.all([
      readFile(join(opts.dir, 'tls.crt'), 'utf8'),
      readFile(join(opts.dir, 'tls.key'), 'utf8'),
    ]);
    // A pair caught halfway through a rotation does not match; it is retried at the next change.
    if (!new X509Certificate(cert).checkPrivateKey(createPrivateKey(key))) {
      throw new Error('tls.crt and tls.key do not match');
    }
    return { cert, key };
  };
  let current = await read().catch((err: unknown) => {
    throw new Error(`cannot use the webhook certificate in ${opts.dir}: ${(err as Error).message}`);
  });
  const check = async () => {
    try {
      const next = await read();
      if (next.cert !== current.cert || next.key !== current.key) {
        current = next;
        opts.logger.info('webhook certificate reloaded', { dir: opts.dir });
        listeners.forEach((l) => l(current));
      }
    } catch (err) {
      opts.logger.warn('webhook certificate not reloaded', { dir: opts.dir, error: (err as Error).message });
    }
  };
  let watcher: FSWatcher | undefined;
  let debounce: NodeJS.Timeout | undefined;
  try {
    watcher = watch(opts.dir, { persistent: false }, () => {
      clearTimeout(debounce);
      debounce = setTimeout(() => void check(), 100);
    });
    watcher.on('error', () => watcher?.close());
  } catch {
    watcher = undefined;
  }
  const poll = setInterval(() => void check(), opts.pollMs ?? 60_000);
  poll.unref();
  return {
    current: () => current,
    onChange: (l) => void listeners.push(l),
    close() {
      clearInterval(poll);
      clearTimeout(debounce);
      watcher?.close();
    },
  };
}
