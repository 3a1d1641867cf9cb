// `npm run images`: the chart's two images, assembled from this checkout without a registry or a
// container engine, as OCI image archives to import into each node's containerd (`ctr -n k8s.io
// images import`), for a cluster that cannot pull (docs/install.md, "Without any registry"):
// - out/images/agentcard-operator.tar: ghcr.io/agentcard-dev/agentcard-operator:<version>, the
//   name the chart's defaults and examples/demo-agent.yaml give, so they need no value;
// - out/images/nginx-unprivileged.tar: nginx with njs for the default nginx sidecar, named by its
//   tag and by its digest, and out/images/values.yaml, which sets `sidecar.nginx.image` to that
//   digest (the chart takes the nginx image pinned by digest only).
// The images are the node tests' (test/node/product-images.ts: the Dockerfile's steps on a base
// of this machine's Debian packages and the Node.js 24 of `npm ci`), cached by their inputs; how
// they differ from the published ones: docs/development.md. Needs Debian or Ubuntu (the packages
// are installed with apt-get when missing and run as root) and builds for this machine's
// architecture.
import { copyFileSync, existsSync, linkSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { digestReference, nginxImage, operatorImage, type BuiltImage } from '../test/node/product-images.ts';

const { values: args } = parseArgs({
  options: { out: { type: 'string', default: join('out', 'images') }, help: { type: 'boolean' } },
});
if (args.help) {
  process.stdout.write(
    'usage: npm run images [-- --out DIR]\n' +
      'Writes agentcard-operator.tar, nginx-unprivileged.tar and values.yaml to DIR (default out/images).\n',
  );
  process.exit(0);
}
if (process.platform !== 'linux' || !existsSync('/usr/bin/dpkg-query')) {
  process.stderr.write(
    'npm run images: needs Linux with Debian or Ubuntu packages (the images are made of them); docs/install.md, "Without any registry"\n',
  );
  process.exit(1);
}

const out = resolve(args.out);
const log = (line: string) => process.stderr.write(`[images] ${line}\n`);

/** Puts the cached archive at `dest`: a hard link when the cache is on the same file system. */
function place(image: BuiltImage, dest: string): void {
  rmSync(dest, { force: true });
  try {
    linkSync(image.archive, dest);
  } catch {
    copyFileSync(image.archive, dest);
  }
}

try {
  const operator = await operatorImage(log);
  const nginx = await nginxImage(log);
  mkdirSync(out, { recursive: true });
  const operatorTar = join(out, 'agentcard-operator.tar');
  const nginxTar = join(out, 'nginx-unprivileged.tar');
  place(operator, operatorTar);
  place(nginx, nginxTar);
  const values = join(out, 'values.yaml');
  writeFileSync(
    values,
    [
      '# Written by `npm run images`: the nginx sidecar image of nginx-unprivileged.tar, by the digest',
      '# the archive names it by (the chart takes sidecar.nginx.image pinned by digest only).',
      'sidecar:',
      '  nginx:',
      `    image: ${digestReference(nginx)}`,
      '',
    ].join('\n'),
  );
  const rel = (p: string) => relative(process.cwd(), p) || p;
  process.stdout.write(
    [
      `${rel(operatorTar)}  ${operator.name} (${operator.digest})`,
      `${rel(nginxTar)}  ${digestReference(nginx)} (tag ${nginx.name})`,
      `${rel(values)}  sidecar.nginx.image: ${digestReference(nginx)}`,
      '',
      'On each node: ctr -n k8s.io images import FILE, for both archives; then helm install with -f ' +
        rel(values),
      '',
    ].join('\n'),
  );
} catch (err) {
  process.stderr.write(`npm run images: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
