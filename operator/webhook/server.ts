/**
 * The admission webhook's HTTPS server: POST /mutate-pods answers AdmissionReviews for Pods
 * (see mutate.ts), GET /healthz for probes. `startWebhook` is the entry point the operator
 * command calls.
 */
import { createServer } from 'node:https';
import { X509Certificate } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { KubeClient } from '../kube/client.ts';
import { Counter, Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import { UserError } from '../errors.ts';
import type { Logger } from '../log.ts';
import { parseReview, review } from './mutate.ts';
import type { InjectionConfig, SidecarMode, SidecarServer } from './mutate.ts';
import { directoryCertSource, selfSignedCertSource } from './tls.ts';
import type { CertSource } from './tls.ts';
import { serviceHosts } from './certs.ts';

export const MUTATE_PATH = '/mutate-pods';
/** The API server sends at most a few MiB; a Pod object is far smaller. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

export interface WebhookOptions {
  client: KubeClient;
  port: number;
  /** Listen address; default: all interfaces. */
  host?: string;
  certMode: 'self-signed' | 'cert-manager';
  /** cert-manager mode: directory with tls.crt and tls.key. */
  certDir?: string | undefined;
  /** self-signed mode: the Secret holding the CA and serving certificate. */
  secretName?: string | undefined;
  /** The Service in front of the webhook (its DNS names go into the certificate). */
  serviceName?: string | undefined;
  /** The MutatingWebhookConfiguration whose caBundle is kept current (self-signed mode). */
  webhookConfigName?: string | undefined;
  operatorNamespace: string;
  /** Required: the image of the injected sidecar. */
  sidecarImage: string | undefined;
  sidecarMode: SidecarMode;
  /** What serves the card in the Pod (default node); nginx needs nginxImage. */
  sidecarServer?: SidecarServer | undefined;
  nginxImage?: string | undefined;
  trustForwardedHost?: boolean | undefined;
  logger: Logger;
  registry: Registry;
  /** Extra certificate names (e.g. 127.0.0.1 for a URL-based clientConfig in tests). */
  extraHosts?: string[];
  /** self-signed mode: how often the Secret and caBundle are re-checked. */
  certSyncMs?: number;
}

export interface Webhook {
  port: number;
  close(): Promise<void>;
}

/** Names used when the options leave them out (the Helm chart always passes its own). */
export const WEBHOOK_DEFAULTS = {
  secretName: 'agentcard-operator-webhook-tls',
  serviceName: 'agentcard-operator-webhook',
  webhookConfigName: 'agentcard-operator',
} as const;

export async function startWebhook(opts: WebhookOptions): Promise<Webhook> {
  const { logger } = opts;
  if (!opts.sidecarImage)
    throw new UserError('the admission webhook needs --sidecar-image (the image to inject)', 2);
  if (opts.sidecarServer === 'nginx' && !opts.nginxImage)
    throw new UserError('--sidecar-server nginx needs --sidecar-nginx-image', 2);
  if (opts.certMode === 'cert-manager' && !opts.certDir) {
    throw new UserError('--webhook-cert-mode cert-manager needs --webhook-cert-dir', 2);
  }
  const secretName = opts.secretName || WEBHOOK_DEFAULTS.secretName;
  const serviceName = opts.serviceName || WEBHOOK_DEFAULTS.serviceName;
  const webhookConfigName = opts.webhookConfigName || WEBHOOK_DEFAULTS.webhookConfigName;
  const log = logger.child({ component: 'webhook' });
  const reviews = new Counter({
    name: 'agentcard_webhook_reviews_total',
    help: 'Pod admission reviews answered, by result (injected, skipped, invalid).',
    labelNames: ['result'] as const,
    registers: [opts.registry],
  });

  const cfg: InjectionConfig = {
    sidecarImage: opts.sidecarImage,
    mode: opts.sidecarMode,
    server: opts.sidecarServer ?? 'node',
    nginxImage: opts.nginxImage,
    trustForwardedHost: opts.trustForwardedHost ?? false,
    operatorNamespace: opts.operatorNamespace,
    serverVersion: undefined,
  };
  if (opts.sidecarMode === 'auto') {
    try {
      const v = await opts.client.request<{ major: string; minor: string }>('GET', '/version');
      cfg.serverVersion = { major: v.major, minor: v.minor };
    } catch (err) {
      log.warn('cannot read the API server version; injecting ordinary sidecar containers', {
        error: (err as Error).message,
      });
    }
  }

  let certs: CertSource;
  if (opts.certMode === 'cert-manager') {
    certs = await directoryCertSource({ dir: opts.certDir!, logger: log });
  } else {
    certs = await selfSignedCertSource({
      client: opts.client,
      namespace: opts.operatorNamespace,
      secretName,
      webhookConfigName,
      hosts: [...serviceHosts(serviceName, opts.operatorNamespace), ...(opts.extraHosts ?? [])],
      logger: log,
      ...(opts.certSyncMs ? { syncMs: opts.certSyncMs } : {}),
    });
  }

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path === '/healthz' && req.method === 'GET') return void res.writeHead(200).end('ok\n');
    if (path !== MUTATE_PATH) return void res.writeHead(404).end('not found\n');
    if (req.method !== 'POST') return void res.writeHead(405, { Allow: 'POST' }).end('method not allowed\n');
    const body = await readBody(req);
    if (body === undefined) {
      reviews.inc({ result: 'invalid' });
      return void res.writeHead(413, { Connection: 'close' }).end('request too large\n');
    }
    let parsed: ReturnType<typeof parseReview>;
    try {
      parsed = parseReview(JSON.parse(body.toString('utf8')));
    } catch {
      parsed = { error: 'body is not JSON' };
    }
    if ('error' in parsed) {
      reviews.inc({ result: 'invalid' });
      log.warn('invalid admission review', { problem: parsed.error });
      return void res
        .writeHead(400, { 'Content-Type': 'text/plain' })
        .end(`invalid AdmissionReview: ${parsed.error}\n`);
    }
    const { response, decision } = review(parsed.request, cfg);
    const pod = parsed.request.name || parsed.request.object?.metadata?.generateName || '';
    if (decision.inject) {
      reviews.inc({ result: 'injected' });
      log.info('sidecar injected', {
        namespace: parsed.request.namespace,
        pod,
        card: decision.card,
        native: decision.native,
      });
    } else {
      reviews.inc({ result: 'skipped' });
      if (decision.warn) {
        log.info('sidecar not injected', {
          namespace: parsed.request.namespace,
          pod,
          reason: decision.reason,
        });
      }
    }
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(response));
  };

  const server: Server = createServer(
    { ...certs.current(), minVersion: 'TLSv1.2', requestTimeout: 15_000, headersTimeout: 10_000 },
    (req, res) => {
      handle(req, res).catch((err: unknown) => {
        log.error('webhook request failed', { error: (err as Error).message });
        if (!res.headersSent) res.writeHead(500).end();
      });
    },
  );
  certs.onChange((c) => server.setSecureContext({ ...c, minVersion: 'TLSv1.2' }));

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  // Read at scrape time from the certificate being served, so renewals and cert-manager
  // rotations show without bookkeeping; the WebhookCertificateExpiring alert reads it.
  new Gauge({
    name: 'agentcard_webhook_cert_not_after_seconds',
    help: 'Expiry (Unix seconds) of the serving certificate of the admission webhook.',
    registers: [opts.registry],
    collect() {
      this.set(Date.parse(new X509Certificate(certs.current().cert).validTo) / 1000);
    },
  });
  log.info('webhook listening', {
    port,
    certMode: opts.certMode,
    sidecarMode: opts.sidecarMode,
    sidecarServer: cfg.server,
  });

  return {
    port,
    async close() {
      certs.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      opts.registry.removeSingleMetric('agentcard_webhook_reviews_total');
      opts.registry.removeSingleMetric('agentcard_webhook_cert_not_after_seconds');
    },
  };
}

/** The request body, or undefined when it exceeds the limit (reading stops there). */
function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        req.removeAllListeners('data');
        req.pause();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
