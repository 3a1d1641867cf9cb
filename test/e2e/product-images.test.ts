// The project's images on the real node (test/node/product-images.ts, imported by the node
// project's global setup): the operator image agrees with the Dockerfile and runs
// `agentcard --version` and the demo agent under the restricted Pod Security Standard with a
// read-only root file system; the nginx image (nginx-unprivileged's layout, Debian's nginx and
// njs) serves a static file and runs njs under the same rules.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { execInNode, kubectl } from '../node/control.ts';
import { waitForService } from '../node/services.ts';
import {
  digestReference,
  dockerfileRuntime,
  NGINX_REPOSITORY,
  NONROOT_UID,
  operatorImageName,
  readImageArchive,
} from '../node/product-images.ts';
import { repoRoot } from '../support/paths.ts';

/** Where nginx images (nginx.org's and Debian's libnginx-mod-http-js) put the njs module. */
const NJS_MODULE = '/usr/lib/nginx/modules/ngx_http_js_module.so';

const state = inject('nodeCluster');
const images = inject('productImages');
const ns = `images-e2e-${process.pid}`;
const k = (...args: string[]) => kubectl(state, args);
const operator = images.find((i) => i.name === operatorImageName())!;
const nginx = images.find((i) => i.name.startsWith(`${NGINX_REPOSITORY}:`))!;
const dockerfile = dockerfileRuntime(readFileSync(join(repoRoot, 'Dockerfile'), 'utf8'));
const version = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string })
  .version;

/** The restricted Pod Security Standard's container fields (the namespace enforces it too). */
const restricted = (uid: number) => ({
  runAsNonRoot: true,
  runAsUser: uid,
  runAsGroup: uid,
  allowPrivilegeEscalation: false,
  readOnlyRootFilesystem: true,
  capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' },
});

const apply = (docs: object[]) =>
  kubectl(state, ['apply', '-n', ns, '-f', '-'], docs.map((d) => JSON.stringify(d)).join('\n'));

beforeAll(async () => {
  await kubectl(
    state,
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: ns, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
    }),
  );
});

afterAll(async () => {
  await k('delete', 'namespace', ns, '--wait=false').catch(() => undefined);
});

describe('the images on the node', () => {
  it('are held under their tag and under their manifest digest, as a pull by either records them', async () => {
    // What `ctr images ls` shows is what containerd's CRI resolves a Pod's image name against.
    const out = await execInNode(state, join(state.nodeBinDir, 'ctr'), [
      '--address=/run/containerd/containerd.sock',
      '--namespace=k8s.io',
      'images',
      'ls',
    ]);
    const held = new Map(
      out
        .split('\n')
        .slice(1)
        .filter((line) => line.trim())
        .map((line) => {
          const [ref, , digest] = line.trim().split(/\s+/);
          return [ref!, digest!];
        }),
    );
    for (const image of images) {
      expect(held.get(image.name), image.name).toBe(image.digest);
      expect(held.get(digestReference(image)), digestReference(image)).toBe(image.digest);
    }
  });
});

describe('the operator image', () => {
  it('agrees with the Dockerfile: entrypoint, command, user, working dir, environment, ports, labels, files', () => {
    const { config, files } = readImageArchive(operator.archive);
    expect(config.config.Entrypoint).toEqual(dockerfile.entrypoint);
    expect(config.config.Cmd).toEqual(dockerfile.cmd);
    expect(config.config.User).toBe(dockerfile.user);
    expect(config.config.WorkingDir).toBe(dockerfile.workdir);
    expect(config.config.Labels).toEqual(dockerfile.labels);
    expect(Object.keys(config.config.ExposedPorts ?? {}).sort()).toEqual([...dockerfile.exposedPorts].sort());
    for (const env of dockerfile.env) expect(config.config.Env).toContain(env);
    expect(config.config.Labels?.['org.opencontainers.image.version']).toBe(version);
    expect(operator.name.endsWith(`:${version}`)).toBe(true);
    // What the COPY lines copy is where they put it; the entrypoint's program is executable.
    for (const dest of dockerfile.copies) expect(files.has(dest.replace(/\/$/, '')), dest).toBe(true);
    expect(files.get(dockerfile.entrypoint[0]!)).toMatchObject({ type: '-', mode: 'rwxr-xr-x' });
    expect(files.get(dockerfile.entrypoint[1]!)?.type).toBe('-');
    // Nothing the runtime user could change: every file is root's and not writable by others
    // (the tar records owner 0 for all), /tmp aside.
    const writable = [...files].filter(([p, f]) => f.type !== 'l' && f.mode[7] === 'w' && p !== '/tmp');
    expect(writable).toEqual([]);
    // The user the Dockerfile names exists, as in distroless (`nonroot`).
    expect(dockerfile.user.split(':')[0]).toBe(String(NONROOT_UID));
    expect(files.has('/etc/passwd')).toBe(true);
  });

  it('runs `agentcard --version` in a Pod: restricted, read-only root, the Dockerfile user', async () => {
    await apply([
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'version' },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          containers: [
            {
              name: 'agentcard',
              image: operator.name,
              imagePullPolicy: 'Never',
              // No securityContext user: the image's USER must already satisfy runAsNonRoot.
              args: ['--version'],
              securityContext: { ...restricted(NONROOT_UID), runAsUser: undefined, runAsGroup: undefined },
            },
          ],
        },
      },
    ]);
    await k('-n', ns, 'wait', 'pod/version', '--for=jsonpath={.status.phase}=Succeeded', '--timeout=180s');
    expect((await k('-n', ns, 'logs', 'version')).trim()).toBe(`agentcard ${version}`);
  });

  it('runs the demo agent of examples/demo-agent.yaml (the same image, `demo-agent`), Ready behind its Service', async () => {
    const docs = parseAllDocuments(readFileSync(join(repoRoot, 'examples', 'demo-agent.yaml'), 'utf8')).map(
      (d) => d.toJS() as { kind: string; spec: { template?: { spec: { containers: { image: string }[] } } } },
    );
    const deployment = docs.find((d) => d.kind === 'Deployment')!;
    // The example names the released image; the one assembled here has that same reference.
    expect(deployment.spec.template!.spec.containers[0]!.image).toBe(operator.name);
    await apply(docs);
    await k('-n', ns, 'rollout', 'status', 'deployment/demo-agent', '--timeout=180s');
    // Ready Pods are not yet a Service that routes to them (test/node/services.ts).
    const clusterIP = await waitForService(state, ns, 'demo-agent', 8080);
    const status = await execInNode(state, 'curl', [
      '-sS',
      '-m',
      '10',
      '-o',
      '/dev/null',
      '-w',
      '%{http_code}',
      `http://${clusterIP}:8080/healthz`,
    ]);
    expect(status).toBe('200');
  });
});

describe('the nginx image', () => {
  it('serves a static file and runs njs as user 101 under the restricted Pod Security Standard', async () => {
    const conf = `load_module ${NJS_MODULE};
pid /tmp/nginx.pid;
error_log stderr notice;
events {}
http {
  client_body_temp_path /tmp/client_body;
  proxy_temp_path /tmp/proxy;
  fastcgi_temp_path /tmp/fastcgi;
  uwsgi_temp_path /tmp/uwsgi;
  scgi_temp_path /tmp/scgi;
  include /etc/nginx/mime.types;
  js_import hello from /etc/custom/hello.js;
  server {
    listen 8081;
    location / { root /www; }
    location = /js { js_content hello.hi; }
  }
}
`;
    await apply([
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'nginx' },
        data: {
          'index.html': 'hello from nginx\n',
          'nginx.conf': conf,
          'hello.js': 'function hi(r) { r.return(200, `njs ${njs.version}\\n`); }\nexport default { hi };\n',
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'nginx', labels: { app: 'nginx' } },
        spec: {
          automountServiceAccountToken: false,
          containers: [
            {
              name: 'default',
              // The image as it comes: its own configuration, the static files on 8080.
              image: nginx.name,
              imagePullPolicy: 'Never',
              securityContext: restricted(101),
              readinessProbe: { httpGet: { path: '/index.html', port: 8080 } },
              volumeMounts: [
                { name: 'www', mountPath: '/usr/share/nginx/html', readOnly: true },
                { name: 'tmp', mountPath: '/tmp' },
              ],
            },
            {
              name: 'njs',
              // As the sidecar's nginx mode runs it: `nginx -c <conf>`, njs loaded from the image,
              // named by digest as the chart pins it (`sidecar.nginx.image`): the imported image
              // must be found under its manifest's digest, never pulled.
              image: digestReference(nginx),
              imagePullPolicy: 'Never',
              command: ['nginx'],
              args: ['-c', '/etc/custom/nginx.conf', '-e', 'stderr', '-g', 'daemon off;'],
              securityContext: restricted(101),
              volumeMounts: [
                { name: 'www', mountPath: '/www', readOnly: true },
                { name: 'custom', mountPath: '/etc/custom', readOnly: true },
                { name: 'tmp2', mountPath: '/tmp' },
              ],
            },
          ],
          volumes: [
            { name: 'www', configMap: { name: 'nginx', items: [{ key: 'index.html', path: 'index.html' }] } },
            { name: 'custom', configMap: { name: 'nginx' } },
            { name: 'tmp', emptyDir: {} },
            { name: 'tmp2', emptyDir: {} },
          ],
        },
      },
    ]);
    await k('-n', ns, 'wait', 'pod/nginx', '--for=condition=Ready', '--timeout=180s');
    const podIP = (await k('-n', ns, 'get', 'pod', 'nginx', '-o', 'jsonpath={.status.podIP}')).trim();
    const get = (url: string) => execInNode(state, 'curl', ['-sS', '-m', '10', url]);
    expect(await get(`http://${podIP}:8080/index.html`)).toBe('hello from nginx\n');
    expect(await get(`http://${podIP}:8081/index.html`)).toBe('hello from nginx\n');
    expect(await get(`http://${podIP}:8081/js`)).toMatch(/^njs \d+\.\d+\.\d+\n$/);
  });
});
