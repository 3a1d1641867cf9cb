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
import type { V1OwnerReference } from '@kubernetes/client-node';
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
/**
 * Limits against clients that are not the API server (anything in the cluster can reach the
 * Service) and against floods:
 * - body: a Pod must fit etcd's 1.5 MiB request limit, and a CREATE review carries one Pod plus
 *   a small envelope (no oldObject), so 2 MiB; a larger Content-Length is refused unread;
 * - reviews read at the same time: each may buffer up to the body limit, so this caps the memory
 *   held by request bodies (32 x 2 MiB); the API server's reviews take well under a millisecond
 *   each, so only stalled senders ever queue up, and the excess is answered 429 at once (the
 *   webhook's failurePolicy Ignore admits the Pod, and status.serving reports it);
 * - time: a review must arrive within the API server's own webhook timeout (10 s by default), and
 *   a connection silent for 5 s is closed; Node checks these every second instead of its default
 *   30 s, so a stalled sender holds its buffer for seconds, not most of a minute.
 */
export const WEBHOOK_LIMITS = {
  maxBodyBytes: 2 * 1024 * 1024,
  maxConcurrentReviews: 32,
  maxConnections: 512,
  requestTimeoutMs: 10_000,
  headersTimeoutMs: 5_000,
  idleTimeoutMs: 5_000,
  checkIntervalMs: 1_000,
  /** On close, how long reviews in flight may take to finish before their connections are cut. */
  closeGraceMs: 5_000,
};
export type WebhookLimits = typeof WEBHOOK_LIMITS;

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
  /** self-signed mode: the Deployment that owns the Secret, so an uninstall deletes it (kube/owner.ts). */
  owner?: V1OwnerReference | undefined;
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
  /** Overrides of WEBHOOK_LIMITS (tests). */
  limits?: Partial<WebhookLimits>;
}

export interface Webhook {
  port: number;
  /** Stops accepting, lets reviews in flight finish (closeGraceMs at most), then resolves. */
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
    help: 'Pod admission reviews answered, by result (injected, skipped, invalid, throttled).',
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
      // Bounded: a hung API server must not hold the process's start (and its health endpoint).
      const v = await opts.client.request<{ major: string; minor: string }>('GET', '/version', {
        signal: AbortSignal.timeout(5_000),
      });
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
      owner: opts.owner,
      ...(opts.certSyncMs ? { syncMs: opts.certSyncMs } : {}),
    });
  }

  const limits: WebhookLimits = { ...WEBHOOK_LIMITS, ...opts.limits };
  let reading = 0;
  let closing = false;
  // Answers not yet sent: on close they end their kept-alive connection, so close() need not wait.
  const answering = new Set<ServerResponse>();
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (closing) res.setHeader('Connection', 'close');
    answering.add(res);
    res.once('close', () => answering.delete(res));
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path === '/healthz' && req.method === 'GET') return void res.writeHead(200).end('ok\n');
    if (path !== MUTATE_PATH) return void res.writeHead(404).end('not found\n');
    if (req.method !== 'POST') return void res.writeHead(405, { Allow: 'POST' }).end('method not allowed\n');
    const declared = Number(req.headers['content-length'] ?? 0);
    // Refusals discard the body as it comes (no buffering) so that the answer is not lost to a
    // reset of a connection closed with unread data; the idle timeout ends a stalled one.
    if (declared > limits.maxBodyBytes) {
      reviews.inc({ result: 'invalid' });
      req.resume();
      return void res.writeHead(413, { Connection: 'close' }).end('request too large\n');
    }
    if (reading >= limits.maxConcurrentReviews) {
      reviews.inc({ result: 'throttled' });
      req.resume();
      return void res
        .writeHead(429, { Connection: 'close', 'Retry-After': '1' })
        .end('too many admission reviews at once\n');
    }
    reading++;
    let body: Buffer | undefined;
    try {
      body = await readBody(req, limits.maxBodyBytes);
    } finally {
      reading--;
    }
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
    let answer: ReturnType<typeof review>;
    try {
      answer = review(parsed.request, cfg);
    } catch {
      // parseReview checked every field decide() reads; this is the net under it. A malformed
      // review is the sender's fault: 400, never 500.
      reviews.inc({ result: 'invalid' });
      return void res
        .writeHead(400, { 'Content-Type': 'text/plain' })
        .end('invalid AdmissionReview: the Pod cannot be read\n');
    }
    const { response, decision } = answer;
    const pod = parsed.request.name || parsed.request.object?.metadata?.generateName || '';
    if (decision.inject) {
      reviews.inc({ result: 'injected' });
      // One line per Pod at a Deployment's rollout rate is noise and costs admission latency
      // (cert-manager logs admission at a verbose level too); the counter above keeps the count.
      log.debug('sidecar injected', {
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
    {
      ...certs.current(),
      minVersion: 'TLSv1.2',
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      connectionsCheckingInterval: limits.checkIntervalMs,
    },
    (req, res) => {
      handle(req, res).catch((err: unknown) => {
        // A client that went away mid-body: nothing to answer.
        if (req.destroyed || res.destroyed) return;
        log.error('webhook request failed', { error: (err as Error).message });
        if (!res.headersSent) res.writeHead(500).end();
      });
    },
  );
  server.maxConnections = limits.maxConnections;
  // A connection that sends nothing for this long is closed (a stalled body included).
  server.setTimeout(limits.idleTimeoutMs);
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
      closing = true;
      for (const res of answering) if (!res.headersSent) res.setHeader('Connection', 'close');
      // The listener closes and idle connections end at once (Node.js 19+); one answering a
      // review finishes it first, as Go's http.Server.Shutdown does, up to closeGraceMs.
      await new Promise<void>((resolve) => {
        const cut = setTimeout(() => server.closeAllConnections(), limits.closeGraceMs);
        server.close(() => {
          clearTimeout(cut);
          resolve();
        });
        server.closeIdleConnections();
      });
      certs.close();
      opts.registry.removeSingleMetric('agentcard_webhook_reviews_total');
      opts.registry.removeSingleMetric('agentcard_webhook_cert_not_after_seconds');
    },
  };
}

/**
 * The request body, or undefined when it exceeds `limit` (reading stops there). Rejects when the
 * request is aborted or times out, which drops what was buffered.
 */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        chunks.length = 0;
        req.pause();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
    req.on('close', () => {
      chunks.length = 0;
      reject(new Error('the request was closed before its body was read'));
    });
  });
}
