// The project's images for the node cluster, assembled without a registry or a container engine
// (images.ts writes them as OCI layout archives) and cached in the machine cache under a key of
// their inputs, so only a run whose sources changed assembles them again:
// - the operator image, built by following the Dockerfile (test/integration/prod-build-image.ts:
//   its COPY lines and its build stage's bundle step), with the Dockerfile's entrypoint, command,
//   user, working directory, environment, ports and labels, on a stand-in for distroless Node.js
//   24 made of Debian packages and the Node.js 24 binary of the `node` devDependency. The same
//   image runs `agentcard operator`, `agentcard sidecar` and `agentcard demo-agent`;
// - an nginx with njs in the layout of nginxinc/nginx-unprivileged, from Debian's nginx and
//   libnginx-mod-http-js, for the sidecar's nginx mode.
// How each differs from the published image it stands in for: docs/development.md.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withLock } from '../controlplane/lock.ts';
import { cacheRoot, repoRoot } from '../controlplane/paths.ts';
import { buildImageLayout, parseDockerfile } from '../integration/prod-build-image.ts';
import { ensurePackages } from '../support/system-packages.ts';
import { execInNode, type NodeClusterState } from './control.ts';
import { copyPackages, libraryPackages, mergedUsrLinks, packageVersions } from './debian-rootfs.ts';
import { repositoryOf, write, writeImageArchive, type ImageConfig, type ImageSpec } from './images.ts';

const here = dirname(fileURLToPath(import.meta.url));

/** The operator image's repository, as the chart's `image.repository` default names it. */
export const OPERATOR_REPOSITORY = 'ghcr.io/agentcard-dev/agentcard-operator';
/** The nginx image's repository (the chart pins nginxinc/nginx-unprivileged by digest: `--set sidecar.nginx.image=`). */
export const NGINX_REPOSITORY = 'agentcard.test/nginx-unprivileged';

/** Where distroless puts Node.js (its entrypoints name it; it is not on PATH). */
export const DISTROLESS_NODE = '/nodejs/bin/node';
/** distroless' `nonroot` user and nginx-unprivileged's `nginx` user. */
export const NONROOT_UID = 65532;
export const NGINX_UID = 101;
/** The PATH both published images set. */
const PATH_ENV = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Debian packages besides the libraries Node.js links: CA certificates, time zones, /etc/services. */
export const BASE_DATA_PACKAGES = ['ca-certificates', 'tzdata', 'netbase'] as const;
const BASE_PACKAGE_FILES = [
  { pkg: 'ca-certificates', provides: '/usr/share/ca-certificates/mozilla' },
  { pkg: 'tzdata', provides: '/usr/share/zoneinfo/UTC' },
  { pkg: 'netbase', provides: '/etc/services' },
  { pkg: 'nginx-light', provides: '/usr/sbin/nginx' },
  { pkg: 'libnginx-mod-http-js', provides: '/usr/lib/nginx/modules/ngx_http_js_module.so' },
];

/** What the runtime stage of the Dockerfile declares, parsed (build args at their defaults). */
export interface DockerfileRuntime {
  /** The runtime stage's base image (`FROM ${RUNTIME_IMAGE}`). */
  base: string;
  /** The `VERSION` build argument: the release version, package.json's. */
  version: string;
  workdir: string;
  entrypoint: string[];
  cmd: string[];
  user: string;
  env: string[];
  labels: Record<string, string>;
  exposedPorts: string[];
  /** Each COPY of the runtime stage: its destination, resolved against WORKDIR. */
  copies: string[];
}

/** Parses the Dockerfile's runtime stage (the last one). */
export function dockerfileRuntime(text: string): DockerfileRuntime {
  const stages = parseDockerfile(text);
  const runtime = stages.at(-1);
  if (!runtime) throw new Error('Dockerfile: no FROM');
  const all = (op: string) => runtime.instructions.filter((i) => i.op === op);
  const last = (op: string) => all(op).at(-1)?.args;
  const workdir = last('WORKDIR')?.[0] ?? '/';
  const labels: Record<string, string> = {};
  for (const ins of all('LABEL')) {
    // The parser splits on white space and substitutes build args; a value is one quoted string.
    for (const m of ins.args.join(' ').matchAll(/([\w.-]+)=(?:"((?:[^"\\]|\\.)*)"|(\S+))/g)) {
      labels[m[1]!] = m[2] ?? m[3] ?? '';
    }
  }
  const version = /^ARG VERSION=(\S+)$/m.exec(text)?.[1];
  if (!version) throw new Error('Dockerfile: no `ARG VERSION=` default');
  return {
    base: runtime.from,
    version,
    workdir,
    entrypoint: last('ENTRYPOINT') ?? [],
    cmd: last('CMD') ?? [],
    user: last('USER')?.[0] ?? 'root',
    env: all('ENV').flatMap((i) => i.args),
    labels,
    exposedPorts: all('EXPOSE').flatMap((i) => i.args.map((p) => (p.includes('/') ? p : `${p}/tcp`))),
    copies: all('COPY').map((i) => {
      const dest = i.args.at(-1)!;
      return dest.startsWith('/') ? dest : `${workdir.replace(/\/$/, '')}/${dest.replace(/^\.\//, '')}`;
    }),
  };
}

/** The operator image's config: the Dockerfile's runtime settings over distroless' environment. */
export function operatorImageConfig(d: DockerfileRuntime): ImageConfig {
  return {
    Entrypoint: d.entrypoint,
    Cmd: d.cmd,
    User: d.user,
    // distroless' base sets PATH and SSL_CERT_FILE; the Dockerfile's ENV lines come after.
    Env: [PATH_ENV, 'SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt', ...d.env],
    WorkingDir: d.workdir,
    Labels: d.labels,
    ExposedPorts: Object.fromEntries(d.exposedPorts.map((p) => [p, {}])),
  };
}

/** The Node.js 24 binary of the `node` devDependency (the one the tests run). */
export function nodeBinary(): string {
  const bin = realpathSync(join(repoRoot, 'node_modules', '.bin', 'node'));
  const version = spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout.trim();
  if (!version.startsWith('v24.')) throw new Error(`expected Node.js 24 from node_modules, found ${version}`);
  return bin;
}

/**
 * The distroless base in `root`: the libraries Node.js links (`ldd`) and the data packages,
 * from Debian; distroless' users, groups, /tmp, /home/nonroot, CA bundle and os-release; Node.js
 * at /nodejs/bin/node.
 */
export function distrolessNodeBase(root: string, node: string): void {
  mergedUsrLinks(root);
  copyPackages(root, [...libraryPackages([node]), ...BASE_DATA_PACKAGES]);
  // ca-certificates ships the certificates; its postinst builds the bundle, as distroless does.
  const mozilla = '/usr/share/ca-certificates/mozilla';
  const bundle = readdirSync(mozilla)
    .filter((f) => f.endsWith('.crt'))
    .sort()
    .map((f) => readFileSync(join(mozilla, f), 'utf8').trimEnd() + '\n')
    .join('');
  write(root, 'etc/ssl/certs/ca-certificates.crt', bundle);
  write(
    root,
    'etc/passwd',
    [
      'root:x:0:0:root:/root:/sbin/nologin',
      'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin',
      `nonroot:x:${NONROOT_UID}:${NONROOT_UID}:nonroot:/home/nonroot:/sbin/nologin`,
      '',
    ].join('\n'),
  );
  write(root, 'etc/group', `root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:${NONROOT_UID}:\n`);
  write(root, 'etc/nsswitch.conf', 'passwd: files\ngroup: files\nhosts: files dns\n');
  write(root, 'etc/os-release', readFileSync('/usr/lib/os-release', 'utf8'));
  for (const dir of ['tmp', 'root', 'home/nonroot']) mkdirSync(join(root, dir), { recursive: true });
  chmodSync(join(root, 'tmp'), 0o1777);
  chmodSync(join(root, 'root'), 0o700);
  mkdirSync(join(root, 'nodejs', 'bin'), { recursive: true });
  cpSync(node, join(root, DISTROLESS_NODE));
  chmodSync(join(root, DISTROLESS_NODE), 0o755);
}

/** The build stage of the Dockerfile, played as prod-build.test.ts does: its RUN steps but `npm ci` and the typecheck. */
function playBuildStage(dir: string, node: string): void {
  symlinkSync(join(repoRoot, 'node_modules'), join(dir, 'node_modules'));
  const build = parseDockerfile(readFileSync(join(repoRoot, 'Dockerfile'), 'utf8')).find(
    (s) => s.name === 'build',
  );
  const steps = (build?.instructions ?? [])
    .filter((i) => i.op === 'RUN')
    .flatMap((i) => i.args.join(' ').split('&&'))
    .map((s) => s.trim())
    .filter((s) => s && !/^npm ci\b/.test(s) && !/tsc --noEmit/.test(s));
  for (const step of steps) {
    const r = spawnSync('sh', ['-c', step], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, PATH: `${dirname(node)}:${process.env.PATH ?? ''}` },
      timeout: 300_000,
    });
    if (r.status !== 0) throw new Error(`Dockerfile RUN ${step} failed:\n${(r.stderr ?? '').slice(-2000)}`);
  }
}

/** An image in the machine cache: its reference, OCI layout archive and manifest digest. */
export interface BuiltImage {
  name: string;
  archive: string;
  digest: string;
}

/** sha256 over named inputs (files, or every file below a folder, relative to the repository) and strings. */
export function inputKey(paths: string[], extra: string[]): string {
  const hash = createHash('sha256');
  for (const path of [...paths].sort()) {
    const abs = join(repoRoot, path);
    const files = !existsSync(abs)
      ? []
      : statSync(abs).isDirectory()
        ? readdirSync(abs, { recursive: true, withFileTypes: true })
            .filter((e) => e.isFile())
            .map((e) => relative(repoRoot, join(e.parentPath, e.name)))
            .filter((p) => !/(^|\/)node_modules\//.test(p))
            .sort()
        : [path];
    if (files.length === 0) hash.update(`${path}\0missing\0`);
    for (const file of files)
      hash
        .update(`${file}\0`)
        .update(readFileSync(join(repoRoot, file)))
        .update('\0');
  }
  for (const e of extra) hash.update(`${e}\0`);
  return hash.digest('hex').slice(0, 12);
}

/** The files this module's image builders are made of (a change to them rebuilds the images). */
const BUILDER_FILES = [
  relative(repoRoot, join(here, 'images.ts')),
  relative(repoRoot, join(here, 'product-images.ts')),
  relative(repoRoot, join(here, 'debian-rootfs.ts')),
  'test/integration/prod-build-image.ts',
];

/** Returns the cached archive of `name` under `key`, assembling it with `spec()` first if missing. */
async function cached(
  name: string,
  key: string,
  spec: () => ImageSpec,
  log: (line: string) => void,
): Promise<BuiltImage> {
  const base = join(cacheRoot(), 'images', `${name.replace(/[/:]/g, '_')}-${key}`);
  const archive = `${base}.tar`;
  const digestFile = `${base}.digest`;
  const ready = () => existsSync(archive) && existsSync(digestFile);
  if (!ready()) {
    await withLock(
      `${base}.lock`,
      async () => {
        if (ready()) return;
        const started = Date.now();
        log(`assembling ${name} into ${archive}`);
        const tmp = `${archive}.tmp-${process.pid}`;
        const digest = writeImageArchive(spec(), tmp);
        renameSync(tmp, archive);
        writeFileSync(digestFile, digest + '\n');
        // Assemblies of the same image from other inputs that no run has used for a day (other
        // checkouts on the machine may still use recent ones).
        const prefix = `${name.replace(/[/:]/g, '_')}-`;
        for (const file of readdirSync(dirname(base))) {
          const path = join(dirname(base), file);
          if (
            !file.startsWith(prefix) ||
            file.startsWith(`${prefix}${key}.`) ||
            !/\.(tar|digest)$/.test(file)
          )
            continue;
          if (Date.now() - statSync(path).mtimeMs > 86_400_000) rmSync(path, { force: true });
        }
        log(`assembled ${name} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      },
      () => log(`waiting for another process that assembles ${name}`),
    );
  }
  const now = new Date();
  utimesSync(archive, now, now);
  utimesSync(digestFile, now, now);
  return { name, archive, digest: readFileSync(digestFile, 'utf8').trim() };
}

/** The operator image's reference: the chart's default repository at the Dockerfile's VERSION (the chart's appVersion). */
export function operatorImageName(
  d = dockerfileRuntime(readFileSync(join(repoRoot, 'Dockerfile'), 'utf8')),
): string {
  return `${OPERATOR_REPOSITORY}:${d.version}`;
}

/**
 * The operator image (`ghcr.io/agentcard-dev/agentcard-operator:<VERSION>`), assembled on first
 * use and cached under a key of the Dockerfile, the sources it copies, the lockfile, Node.js and
 * the Debian packages' versions.
 */
export async function operatorImage(log: (line: string) => void = () => {}): Promise<BuiltImage> {
  ensurePackages(BASE_PACKAGE_FILES.filter((p) => BASE_DATA_PACKAGES.includes(p.pkg as never)));
  const text = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');
  const d = dockerfileRuntime(text);
  const pkgVersion = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string })
    .version;
  if (d.version !== pkgVersion) {
    throw new Error(`Dockerfile VERSION ${d.version} is not package.json's version ${pkgVersion}`);
  }
  const node = nodeBinary();
  const nodeVersion = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const packages = [...libraryPackages([node]), ...BASE_DATA_PACKAGES];
  const contextSources = parseDockerfile(text)
    .flatMap((s) => s.instructions)
    .filter((i) => i.op === 'COPY' && !i.flags.from)
    .flatMap((i) => i.args.slice(0, -1).map((a) => a.replace(/^\.\/|\/$/g, '')));
  const key = inputKey(
    ['Dockerfile', ...contextSources, ...BUILDER_FILES],
    [`node ${nodeVersion}`, ...packageVersions(packages)],
  );
  const name = operatorImageName(d);
  return cached(
    name,
    key,
    () => {
      const work = mkdtempSync(join(tmpdir(), 'agentcard-operator-image-'));
      const layout = buildImageLayout(work, (dir) => playBuildStage(dir, node));
      return {
        name,
        config: operatorImageConfig(d),
        fill: (root) => {
          distrolessNodeBase(root, node);
          cpSync(layout.rootDir, root, { recursive: true, verbatimSymlinks: true });
          rmSync(work, { recursive: true, force: true });
        },
      };
    },
    log,
  );
}

/** nginx-unprivileged's /etc/nginx/nginx.conf, with the error log on stderr (see docs/development.md). */
export const NGINX_CONF = `worker_processes  auto;

error_log  stderr notice;
pid        /tmp/nginx.pid;

events {
    worker_connections  1024;
}

http {
    proxy_temp_path /tmp/proxy_temp;
    client_body_temp_path /tmp/client_temp;
    fastcgi_temp_path /tmp/fastcgi_temp;
    uwsgi_temp_path /tmp/uwsgi_temp;
    scgi_temp_path /tmp/scgi_temp;

    include       /etc/nginx/mime.types;
    default_type  application/octet-stream;

    log_format  main  '$remote_addr - $remote_user [$time_local] "$request" '
                      '$status $body_bytes_sent "$http_referer" '
                      '"$http_user_agent" "$http_x_forwarded_for"';

    access_log  /dev/stdout  main;

    sendfile        on;
    keepalive_timeout  65;

    include /etc/nginx/conf.d/*.conf;
}
`;

/** nginx-unprivileged's /etc/nginx/conf.d/default.conf: the static files on port 8080. */
export const NGINX_DEFAULT_CONF = `server {
    listen       8080;
    server_name  localhost;

    location / {
        root   /usr/share/nginx/html;
        index  index.html index.htm;
    }

    error_page   500 502 503 504  /50x.html;
    location = /50x.html {
        root   /usr/share/nginx/html;
    }
}
`;

const NGINX_BINARY = '/usr/sbin/nginx';
const NJS_MODULE = '/usr/lib/nginx/modules/ngx_http_js_module.so';

/**
 * nginx with njs in nginxinc/nginx-unprivileged's layout (user 101, /etc/nginx, conf.d,
 * /usr/lib/nginx/modules, /usr/share/nginx/html, port 8080, SIGQUIT to stop), from Debian's
 * nginx and libnginx-mod-http-js; tagged `<nginx version>-njs<njs version>`.
 */
export async function nginxImage(log: (line: string) => void = () => {}): Promise<BuiltImage> {
  ensurePackages(BASE_PACKAGE_FILES);
  const packages = [
    ...new Set([
      owner(NGINX_BINARY),
      owner(NJS_MODULE),
      'nginx-common',
      ...libraryPackages([NGINX_BINARY, NJS_MODULE]),
      'tzdata',
    ]),
  ];
  const versions = packageVersions(packages);
  const upstream = (pkg: string) =>
    (versions.find((v) => v.startsWith(`${pkg}=`)) ?? '').split('=')[1]!.replace(/-[^-]*$/, '');
  const name = `${NGINX_REPOSITORY}:${upstream(owner(NGINX_BINARY))}-njs${upstream(owner(NJS_MODULE))}`;
  const key = inputKey(BUILDER_FILES, versions);
  return cached(
    name,
    key,
    () => ({
      name,
      config: {
        Cmd: ['nginx', '-g', 'daemon off;'],
        User: String(NGINX_UID),
        Env: [PATH_ENV],
        ExposedPorts: { '8080/tcp': {} },
        StopSignal: 'SIGQUIT',
      },
      fill: (root) => {
        mergedUsrLinks(root);
        copyPackages(root, packages);
        // The image's own configuration replaces Debian's (sites-enabled, www-data, port 80).
        for (const dir of [
          'sites-available',
          'sites-enabled',
          'modules-available',
          'modules-enabled',
          'snippets',
        ]) {
          rmSync(join(root, 'etc/nginx', dir), { recursive: true, force: true });
        }
        write(root, 'etc/nginx/nginx.conf', NGINX_CONF);
        write(root, 'etc/nginx/conf.d/default.conf', NGINX_DEFAULT_CONF);
        symlinkSync('/usr/lib/nginx/modules', join(root, 'etc/nginx/modules'));
        write(
          root,
          'usr/share/nginx/html/index.html',
          '<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head>\n<body><h1>Welcome to nginx!</h1></body></html>\n',
        );
        write(
          root,
          'usr/share/nginx/html/50x.html',
          '<!DOCTYPE html>\n<html><head><title>Error</title></head>\n<body><h1>An error occurred.</h1></body></html>\n',
        );
        write(
          root,
          'etc/passwd',
          'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nnginx:x:101:101:nginx user:/nonexistent:/bin/false\n',
        );
        write(root, 'etc/group', 'root:x:0:\nnogroup:x:65534:\nnginx:x:101:\n');
        write(root, 'etc/nsswitch.conf', 'passwd: files\ngroup: files\nhosts: files dns\n');
        for (const dir of ['tmp', 'var/cache/nginx', 'var/log/nginx'])
          mkdirSync(join(root, dir), { recursive: true });
        chmodSync(join(root, 'tmp'), 0o1777);
        // /var/cache/nginx is the user's in the published image; here every file is root's, so
        // it is world-writable instead (nothing in the image's configuration writes there).
        chmodSync(join(root, 'var/cache/nginx'), 0o1777);
        symlinkSync('/dev/stdout', join(root, 'var/log/nginx/access.log'));
        symlinkSync('/dev/stderr', join(root, 'var/log/nginx/error.log'));
      },
    }),
    log,
  );
}

function owner(path: string): string {
  const r = spawnSync('dpkg-query', ['-S', path], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`no Debian package owns ${path}`);
  return r.stdout.split(':')[0]!.trim();
}

/** Every product image: the operator image (which also runs the demo agent) and nginx with njs. */
export async function buildProductImages(log: (line: string) => void = () => {}): Promise<BuiltImage[]> {
  return [await operatorImage(log), await nginxImage(log)];
}

/** An image's reference by digest (`repo@sha256:...`), as the chart's pinned images are named. */
export function digestReference(image: BuiltImage): string {
  return `${repositoryOf(image.name)}@${image.digest}`;
}

/**
 * Imports `images` into the node's containerd (namespace k8s.io, where the kubelet finds them)
 * under their tag and their digest reference (both named in the archive: images.ts), but those it
 * already holds under both (a reused node cluster).
 */
export async function importImages(state: NodeClusterState, images: BuiltImage[]): Promise<void> {
  const ctr = (...args: string[]) =>
    execInNode(
      state,
      join(state.nodeBinDir, 'ctr'),
      ['--address=/run/containerd/containerd.sock', '--namespace=k8s.io', ...args],
      300_000,
    );
  const present = new Set(
    (await ctr('images', 'ls'))
      .split('\n')
      .filter((line) => line.includes('sha256:'))
      .map((line) => `${line.trim().split(/\s+/)[0]} ${/sha256:[0-9a-f]{64}/.exec(line)![0]}`),
  );
  for (const image of images) {
    const held = [image.name, digestReference(image)].every((ref) => present.has(`${ref} ${image.digest}`));
    if (!held) await ctr('images', 'import', image.archive);
  }
}

/** What an image archive holds: its OCI config and every path of its layer (type, mode, link target). */
export interface ArchiveContents {
  config: { config: ImageConfig; architecture: string; os: string };
  files: Map<string, { type: string; mode: string; link?: string }>;
}

/** Reads an OCI layout archive written by writeImageArchive (one manifest, one layer). */
export function readImageArchive(archive: string): ArchiveContents {
  const blob = (digest: string) =>
    execFileSync('tar', ['-xOf', archive, `./blobs/sha256/${digest.replace(/^sha256:/, '')}`], {
      maxBuffer: 1 << 30,
    });
  const index = JSON.parse(execFileSync('tar', ['-xOf', archive, './index.json'], { encoding: 'utf8' })) as {
    manifests: { digest: string }[];
  };
  const manifest = JSON.parse(blob(index.manifests[0]!.digest).toString()) as {
    config: { digest: string };
    layers: { digest: string }[];
  };
  const config = JSON.parse(blob(manifest.config.digest).toString()) as ArchiveContents['config'];
  const listing = execFileSync('tar', ['-tvf', '-'], {
    input: blob(manifest.layers[0]!.digest),
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  const files: ArchiveContents['files'] = new Map();
  for (const line of listing.split('\n')) {
    // drwxr-xr-x 0/0 0 1970-01-01 00:00 ./app/  |  lrwxrwxrwx 0/0 0 1970-01-01 00:00 ./bin -> usr/bin
    const m = /^(\S)(\S{9})\s+\S+\s+\d+\s+\S+\s+\S+\s+\.(\/.*?)(?: -> (.*))?$/.exec(line);
    if (!m) continue;
    const path = m[3]!.replace(/(.)\/$/, '$1');
    files.set(path, { type: m[1]!, mode: m[2]!, link: m[4] });
  }
  return { config, files };
}
