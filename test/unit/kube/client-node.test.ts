/**
 * The operator's assumptions about @kubernetes/client-node (operator/kube/client-node.ts and the
 * build-time alias build/client-node-alias.ts), checked against the installed package. A client-node
 * upgrade that breaks one of them fails here, before it reaches a cluster.
 */
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as barrel from '@kubernetes/client-node/dist/gen/index.js';
import { BARREL_BINDINGS, BARREL_SPECIFIER, CONFIG_MODULE_SUFFIX } from '../../../build/client-node-alias.ts';
import { KubeAuthenticator, KubeConfig, TLS_FIELDS } from '../../../operator/kube/client-node.ts';
import { KubeClient } from '../../../operator/kube/client.ts';
import { createCA, issueServingCert } from '../../../operator/webhook/certs.ts';
import { tempDir } from '../../support/cli.ts';

const root = resolve(import.meta.dirname, '../../..');
const require = createRequire(join(root, 'package.json'));
const { dir, cleanup } = tempDir();
afterAll(cleanup);

function kubeconfig(name: string, cluster: string, user: string): KubeConfig {
  const file = join(dir, name);
  writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: c, cluster: ${cluster}}]`,
      `users: [{name: u, user: ${user}}]`,
      'contexts: [{name: x, context: {cluster: c, user: u}}]',
      'current-context: x',
    ].join('\n'),
  );
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  return kc;
}

/** What client-node's own request path sets: its headers and the TLS options of its dispatcher. */
async function clientNodeRequestPath(kc: KubeConfig) {
  const headers: Record<string, string> = {};
  let tls: Record<string, unknown> | undefined;
  const original = kc.createDispatcherOptions.bind(kc);
  // A spy on this one instance, to see what applySecurityAuthentication hands the dispatcher.
  kc.createDispatcherOptions = (cluster, agentOptions) => {
    tls = { ...agentOptions };
    return original(cluster, agentOptions);
  };
  await kc.applySecurityAuthentication({
    setHeaderParam: (name: string, value: string) => (headers[name.toLowerCase()] = value),
    setDispatcher: () => {},
  } as unknown as Parameters<KubeConfig['applySecurityAuthentication']>[0]);
  kc.createDispatcherOptions = original;
  return { headers, tls: tls ?? {} };
}

describe('the installed @kubernetes/client-node', () => {
  it('is the version package.json pins, exactly', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
      devDependencies?: Record<string, string>;
    };
    const pinned =
      pkg.dependencies?.['@kubernetes/client-node'] ?? pkg.devDependencies?.['@kubernetes/client-node'];
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    const installed = JSON.parse(
      readFileSync(require.resolve('@kubernetes/client-node/package.json'), 'utf8'),
    ) as { version: string };
    expect(installed.version).toBe(pinned);
  });

  it('config.js imports from the generated barrel exactly what the build alias stands in for, as the same objects', async () => {
    const configJs = require.resolve('@kubernetes/client-node/dist/config.js');
    expect(configJs.replaceAll('\\', '/').endsWith(CONFIG_MODULE_SUFFIX)).toBe(true);
    const source = readFileSync(configJs, 'utf8');
    const fromBarrel = [...source.matchAll(/import\s*\{([^}]*)\}\s*from\s*'([^']+)'/g)]
      .filter((m) => m[2] === BARREL_SPECIFIER)
      .flatMap((m) =>
        m[1]!
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      );
    expect(fromBarrel.sort()).toEqual(Object.keys(BARREL_BINDINGS).sort());
    // No `import * as` or re-export of the barrel either: those would need all of it.
    expect(source).not.toMatch(
      new RegExp(`(\\*|export)[^;]*from '${BARREL_SPECIFIER.replace(/\./g, '\\.')}'`),
    );
    for (const [name, from] of Object.entries(BARREL_BINDINGS)) {
      const module = (await import(from)) as Record<string, unknown>;
      expect(module[name], name).toBeDefined();
      expect(module[name], name).toBe(barrel[name as keyof typeof barrel]);
    }
  });
});

describe('KubeAuthenticator', () => {
  const token = 'sha256~not-a-real-token';
  const cases: Record<string, { cluster: string; user: string }> = {
    'a bearer token': { cluster: '{server: "https://127.0.0.1:6443"}', user: `{token: ${token}}` },
    'basic auth': {
      cluster: '{server: "https://127.0.0.1:6443"}',
      user: '{username: admin, password: s3cret}',
    },
    'a token file (as in a Pod)': {
      cluster: '{server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}',
      user: '{auth-provider: {name: tokenFile, config: {tokenFile: TOKEN_FILE}}}',
    },
    'an exec plugin': {
      cluster: '{server: "https://127.0.0.1:6443", tls-server-name: api.example}',
      user: `{exec: {apiVersion: client.authentication.k8s.io/v1, command: ${JSON.stringify(process.execPath)}, args: ["-e", ${JSON.stringify(`console.log(JSON.stringify({apiVersion:'client.authentication.k8s.io/v1',kind:'ExecCredential',status:{token:'from-exec'}}))`)}], interactiveMode: Never}}`,
    },
  };

  for (const [name, c] of Object.entries(cases)) {
    it(`sets the headers and TLS options client-node's own request path sets: ${name}`, async () => {
      const tokenFile = join(dir, 'token');
      writeFileSync(tokenFile, 'from-file');
      const kc = kubeconfig(
        `kc-${name.replace(/\W/g, '-')}`,
        c.cluster,
        c.user.replace('TOKEN_FILE', tokenFile),
      );
      const own = await clientNodeRequestPath(kc);
      expect(Object.keys(own.headers)).toContain('authorization');
      const ours = await new KubeAuthenticator(kc).authenticate();
      expect(ours.headers).toEqual(own.headers);
      // The TLS material the pool is keyed by is what client-node builds its dispatcher from.
      const options: Record<string, unknown> = {};
      await kc.applyToHTTPSOptions(options);
      for (const field of TLS_FIELDS) expect(options[field], field).toEqual(own.tls[field]);
    });
  }

  describe('against a TLS server on loopback', () => {
    let server: Server;
    let url: string;
    let caFile: string;
    let caPem: string;
    const connections: TLSSocket[] = [];
    const seen: Array<string | undefined> = [];

    beforeAll(async () => {
      const now = new Date();
      const ca = await createCA(now, 'client-node test CA');
      const serving = await issueServingCert(ca, ['127.0.0.1'], now);
      caPem = ca.cert;
      caFile = join(dir, 'ca.crt');
      writeFileSync(caFile, caPem);
      server = createServer({ cert: serving.cert, key: serving.key }, (req, res) => {
        seen.push(req.headers.authorization);
        res.setHeader('content-type', 'application/json');
        res.end('{"kind":"NamespaceList","items":[]}');
      });
      server.on('secureConnection', (socket: TLSSocket) => connections.push(socket));
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => {
      server?.closeAllConnections();
      server?.close();
    });

    it('sends the token, verifies the server with the CA, and reuses one connection until the CA changes', async () => {
      const kc = kubeconfig(
        'kc-tls',
        `{server: "${url}", certificate-authority: ${caFile}}`,
        `{token: ${token}}`,
      );
      const auth = new KubeAuthenticator(kc);
      const first = await auth.authenticate();
      expect((await auth.authenticate()).dispatcher).toBe(first.dispatcher);

      // Every request authenticates anew (client-node's own path would build a new Agent, and so
      // open a new connection, each time); a pause lets the connection go idle in between.
      for (let i = 0; i < 5; i++) {
        const { headers, dispatcher } = await auth.authenticate();
        const res = await request(`${url}/api/v1/namespaces`, { headers, dispatcher });
        expect(await res.body.json()).toMatchObject({ kind: 'NamespaceList' });
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(seen).toEqual(Array(5).fill(`Bearer ${token}`));
      expect(connections).toHaveLength(1);
      // The operator's client goes the same way.
      await expect(new KubeClient(kc).request('GET', '/api/v1/namespaces')).resolves.toMatchObject({
        kind: 'NamespaceList',
      });

      // A rotated CA file (the same CA, written again with a trailing newline: other bytes) gets a
      // new pool; the previous one is closed.
      writeFileSync(caFile, caPem + '\n');
      const rotated = await auth.authenticate();
      expect(rotated.dispatcher).toBeDefined();
      expect(rotated.dispatcher).not.toBe(first.dispatcher);
      expect((first.dispatcher as unknown as { closed: boolean }).closed).toBe(true);
    });

    it('refuses a server its CA did not sign', async () => {
      const other = await createCA(new Date(), 'another CA');
      const otherFile = join(dir, 'other-ca.crt');
      writeFileSync(otherFile, other.cert);
      const kc = kubeconfig(
        'kc-other',
        `{server: "${url}", certificate-authority: ${otherFile}}`,
        `{token: ${token}}`,
      );
      await expect(new KubeClient(kc).request('GET', '/api/v1/namespaces')).rejects.toThrow(
        /certificate|self.signed|verify/i,
      );
    });
  });
});
