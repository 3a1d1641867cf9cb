/**
 * Everything the operator takes from @kubernetes/client-node at run time (types aside), in one
 * place and through its public API only: KubeConfig (kubeconfig files, in-cluster service
 * accounts, exec and OIDC plugins, token files) and, per request, the authentication of the
 * current context. The package is pinned exactly in package.json; test/unit/kube/client-node.test.ts
 * checks every assumption below against the installed version, so an upgrade that breaks one fails
 * there.
 *
 * The production bundle leaves client-node's generated API clients and models out (they are 24 MB
 * of JavaScript the operator never calls): build/client-node-alias.ts, at build time.
 */
import { createHash } from 'node:crypto';
import type { RequestOptions } from 'node:https';
import type { Dispatcher } from 'undici';
// The module, not the package root (which also loads every generated API class): KubeConfig is
// all the operator needs.
import { KubeConfig } from '@kubernetes/client-node/dist/config.js';

export { KubeConfig };

/** What a request to the API server needs: its headers and the connection pool to send it through. */
export interface KubeAuth {
  headers: Record<string, string>;
  /** Absent for a plain-HTTP server without a proxy: undici's global pool is right for it. */
  dispatcher?: Dispatcher;
}

/** The TLS settings client-node derives from a context, the ones that decide a connection. */
export const TLS_FIELDS = [
  'ca',
  'cert',
  'key',
  'pfx',
  'passphrase',
  'rejectUnauthorized',
  'servername',
] as const;

/**
 * The authentication of a KubeConfig's current context, with one connection pool per distinct
 * TLS setting.
 *
 * client-node's own request path (`applySecurityAuthentication`) builds a new undici Agent on
 * every call, so every API request would open a new TLS connection and leave an idle one behind:
 * at 1,000 AgentCards that cost most of the operator's CPU and 100+ MiB of RSS. Here the headers
 * (tokens of exec plugins, OIDC and projected service-account files are refreshed by client-node
 * on every call) come from the public `applyToHTTPSOptions`, and a new Agent is asked of
 * `applySecurityAuthentication` only when the TLS material or the server changes (a rotated
 * client certificate or CA); the previous Agent is closed once its requests are done.
 */
export class KubeAuthenticator {
  private readonly kubeConfig: KubeConfig;
  private pool: { key: string; dispatcher: Dispatcher | undefined } | undefined;

  constructor(kubeConfig: KubeConfig) {
    this.kubeConfig = kubeConfig;
  }

  async authenticate(): Promise<KubeAuth> {
    const options: RequestOptions = {};
    await this.kubeConfig.applyToHTTPSOptions(options);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      if (value !== undefined) headers[name.toLowerCase()] = String(value);
    }
    // applyToHTTPSOptions gives basic auth as `auth` (for node:https); the header is what
    // applySecurityAuthentication sets for the same user.
    if (options.auth) headers.authorization = `Basic ${Buffer.from(options.auth).toString('base64')}`;
    const key = poolKey(this.kubeConfig.getCurrentCluster(), options);
    if (this.pool?.key !== key) {
      const previous = this.pool?.dispatcher;
      this.pool = { key, dispatcher: await this.newDispatcher() };
      if (previous && previous !== this.pool.dispatcher) void previous.close().catch(() => {});
    }
    return { headers, dispatcher: this.pool.dispatcher };
  }

  /** client-node's own dispatcher for the current context (direct TLS, HTTP(S) or SOCKS proxy). */
  private async newDispatcher(): Promise<Dispatcher | undefined> {
    let dispatcher: Dispatcher | undefined;
    const context = { setHeaderParam: () => {}, setDispatcher: (d: Dispatcher) => (dispatcher = d) };
    await this.kubeConfig.applySecurityAuthentication(
      context as unknown as Parameters<KubeConfig['applySecurityAuthentication']>[0],
    );
    return dispatcher;
  }
}

/** A digest of the server, proxy and TLS material (never logged; keys must not be kept in clear). */
export function poolKey(
  cluster: { server?: string; proxyUrl?: string } | null,
  options: Partial<Record<(typeof TLS_FIELDS)[number], unknown>>,
): string {
  const hash = createHash('sha256');
  for (const field of TLS_FIELDS) {
    const value = options[field];
    hash.update(`${field}:${Buffer.isBuffer(value) ? value.toString('base64') : String(value)};`);
  }
  hash.update(JSON.stringify({ server: cluster?.server, proxyUrl: cluster?.proxyUrl }));
  return hash.digest('hex');
}
