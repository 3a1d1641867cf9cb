/**
 * examples/card-server-ingress.yaml, checked twice, since no Ingress controller image can run
 * here:
 * - the manifest is accepted by the real API server (server-side dry run with strict field
 *   validation; Ingress is built in), applied in a test namespace in place of agentcard-system;
 * - the same routing, read from the manifest (its host and Exact paths), is configured in a real
 *   nginx (Debian's) as the reverse proxy in front of a running card server, keeping Host as an
 *   Ingress controller does: the card comes back for the right Host and verifies against the
 *   JWKS served the same way; other paths and other hosts are not routed to the card server.
 * What this does not prove: the behaviour of a real ingress-nginx controller (its generated
 * configuration, annotations, Service endpoint resolution) - docs/adopt.md says so.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { startCardServer, type CardServer } from '../../operator/cardserver/server.ts';
import { verifyCard, type JWKS } from '../../operator/card/verify.ts';
import { KubeClient } from '../../operator/kube/client.ts';
import { loadKubeConfig } from '../../operator/kube/config.ts';
import { createLogger } from '../../operator/log.ts';
import { kubeconfigPath } from '../support/cluster.ts';
import { privateJwk, sampleCard, useOperatorInNamespace, waitFor } from '../support/operator.ts';
import { freePort } from '../support/ports.ts';
import { repoRoot } from '../support/paths.ts';
import { runTool } from '../support/tools.ts';

const run = promisify(execFile);
const example = join(repoRoot, 'examples', 'card-server-ingress.yaml');
const { api, ns } = useOperatorInNamespace('card-ingress', {
  before: async () => {
    await api.putSecret(ns.name, 'signing', { jwk: await privateJwk('ingress-1') }, true);
  },
});
let server: CardServer;
let nginx: ChildProcess | undefined;
let nginxPort = 0;
const tmp = mkdtempSync(join(tmpdir(), 'agentcard-ingress-'));

interface IngressPath {
  path: string;
  pathType: string;
  backend: { service: { name: string; port: { name?: string; number?: number } } };
}
interface Ingress {
  metadata: { name: string; namespace: string };
  spec: { rules: Array<{ host: string; http: { paths: IngressPath[] } }> };
}

const ingress = (): Ingress => {
  const docs = parseAllDocuments(readFileSync(example, 'utf8')).map((d) => d.toJS() as Ingress);
  expect(docs).toHaveLength(1);
  return docs[0]!;
};

/**
 * The nginx configuration an Ingress controller amounts to for this manifest: a server per rule
 * host, a `location =` per Exact path proxied to the card server with the request's Host, and
 * a default server answering 404 for any other host.
 */
function nginxConfig(ing: Ingress, listen: number, upstream: number): string {
  const servers = ing.spec.rules.map((rule) => {
    const locations = rule.http.paths.map((p) => {
      expect(p.pathType).toBe('Exact');
      return `    location = ${p.path} {
      proxy_pass http://127.0.0.1:${upstream};
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-Host $host;
      proxy_set_header X-Forwarded-Proto $scheme;
    }`;
    });
    return `  server {
    listen 127.0.0.1:${listen};
    server_name ${rule.host};
${locations.join('\n')}
    location / { return 404 "not routed\\n"; }
  }`;
  });
  return `worker_processes 1;
pid ${tmp}/nginx.pid;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path ${tmp}/b; proxy_temp_path ${tmp}/p; fastcgi_temp_path ${tmp}/f;
  uwsgi_temp_path ${tmp}/u; scgi_temp_path ${tmp}/s;
  server {
    listen 127.0.0.1:${listen} default_server;
    location / { return 404 "no such host\\n"; }
  }
${servers.join('\n')}
}
`;
}

async function curl(host: string, path: string): Promise<{ status: number; body: string }> {
  const { stdout } = await run('curl', [
    '-sS',
    '-H',
    `Host: ${host}`,
    '-w',
    '\n%{http_code}',
    `http://127.0.0.1:${nginxPort}${path}`,
  ]);
  const at = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(at + 1)), body: stdout.slice(0, at) };
}

// After the shared set-up's beforeAll (the operator running), before its afterAll (after hooks
// run in reverse order).
beforeAll(async () => {
  server = await startCardServer({
    client: new KubeClient(loadKubeConfig({ kubeconfig: kubeconfigPath() })),
    namespaces: [ns.name],
    port: 0,
    metricsPort: 0,
    host: '127.0.0.1',
    defaultMaxAgeSeconds: 300,
    logger: createLogger({ component: 'card-server' }, { level: 'warn', write: () => {} }),
  });
  nginxPort = await freePort();
  chmodSync(tmp, 0o755);
  const conf = join(tmp, 'nginx.conf');
  writeFileSync(conf, nginxConfig(ingress(), nginxPort, server.port));
  nginx = spawn('nginx', ['-c', conf, '-e', 'stderr', '-g', 'daemon off;'], { stdio: 'ignore' });
  await waitFor('nginx listening', async () => {
    try {
      await curl('x', '/');
      return true;
    } catch {
      return false;
    }
  });
}, 120_000);

afterAll(async () => {
  nginx?.kill('SIGTERM');
  await server?.close();
  rmSync(tmp, { recursive: true, force: true });
});

describe('examples/card-server-ingress.yaml', () => {
  it('is accepted by the API server', async () => {
    // As its first line says, in the card server's namespace (here the test's).
    const r = await runTool(
      'kubectl',
      ['apply', '--dry-run=server', '--validate=strict', '--namespace', ns.name, '-f', example],
      {
        kubeconfig: kubeconfigPath(),
        timeoutMs: 120_000,
      },
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^ingress\.networking\.k8s\.io\/agent-cards (created|configured) \(server dry run\)$/m,
    );
  });

  it('routes the card of its host, keeping Host, and nothing else, through a real nginx', async () => {
    const ing = ingress();
    const host = ing.spec.rules[0]!.host;
    await api.createCard(ns.name, 'weather', {
      card: sampleCard('1.0.0'),
      signing: { keys: [{ secretRef: { name: 'signing', key: 'jwk' } }] },
      serving: { server: 'Central', hosts: [host] },
    });
    const data = await waitFor('the published ConfigMap', async () => {
      const cm = await api.getConfigMap(ns.name, 'weather-agent-card');
      return cm?.metadata?.labels?.['agentcard.dev/serving'] === 'central' ? cm.data : undefined;
    });
    const card = await waitFor('the card through nginx', async () => {
      const r = await curl(host, '/.well-known/agent-card.json');
      return r.status === 200 ? r.body : undefined;
    });
    expect(card).toBe(data['agent-card.json']);
    const jwks = await curl(host, '/.well-known/jwks.json');
    expect(jwks.status).toBe(200);
    const verdict = await verifyCard(
      JSON.parse(card) as Record<string, unknown>,
      JSON.parse(jwks.body) as JWKS,
    );
    expect(verdict.verified).toBe(true);
    expect(await curl(host, '/.well-known/agent.json')).toEqual({ status: 200, body: data['agent.json'] });
    // Not routed: other paths of the host (answered by nginx, never by the card server, whose 404
    // body is "not found"), and other hosts.
    for (const path of [
      '/',
      '/.well-known/openid-configuration',
      '/.well-known/agent-card.json/',
      '/healthz',
    ]) {
      expect(await curl(host, path), path).toEqual({ status: 404, body: 'not routed\n' });
    }
    expect(await curl('other.example.com', '/.well-known/agent-card.json')).toEqual({
      status: 404,
      body: 'no such host\n',
    });
  });
});
