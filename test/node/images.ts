// Container images assembled on this machine, without a registry or a container engine: each is
// one uncompressed layer (a tar of a folder, owned by root, timestamps zeroed) and an OCI image
// config, written as an OCI image layout archive that `ctr images import` reads
// (https://github.com/opencontainers/image-spec/blob/v1.1.1/image-layout.md).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** The runtime settings of an OCI image config (`config` in the image-spec's config.md). */
export interface ImageConfig {
  Entrypoint?: string[];
  Cmd?: string[];
  User?: string;
  Env?: string[];
  WorkingDir?: string;
  Labels?: Record<string, string>;
  ExposedPorts?: Record<string, Record<string, never>>;
  StopSignal?: string;
}

/** An image to assemble: its name, a function that fills the layer's folder, and its config. */
export interface ImageSpec {
  /** Full reference, e.g. `agentcard.test/busybox:1`. */
  name: string;
  fill: (root: string) => void;
  config: ImageConfig;
}

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** The repository of a tagged reference (`host[:port]/path:tag` without `:tag`). */
export function repositoryOf(name: string): string {
  const colon = name.lastIndexOf(':');
  if (colon <= name.lastIndexOf('/')) throw new Error(`image name ${name} has no tag`);
  return name.slice(0, colon);
}

/** Writes the image as an OCI layout archive at `file` and returns its manifest's digest. */
export function writeImageArchive(spec: ImageSpec, file: string): string {
  const work = mkdtempSync(join(tmpdir(), 'agentcard-image-'));
  try {
    const root = join(work, 'rootfs');
    mkdirSync(root);
    spec.fill(root);
    const layer = execFileSync(
      'tar',
      ['--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner', '-C', root, '-cf', '-', '.'],
      { maxBuffer: 1 << 30 },
    );
    const layerDigest = `sha256:${sha256(layer)}`;
    const config = Buffer.from(
      JSON.stringify({
        architecture: 'amd64',
        os: 'linux',
        config: spec.config,
        rootfs: { type: 'layers', diff_ids: [layerDigest] },
        history: [{ created_by: 'test/node/images.ts' }],
      }),
    );
    const manifest = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: {
          mediaType: 'application/vnd.oci.image.config.v1+json',
          digest: `sha256:${sha256(config)}`,
          size: config.length,
        },
        layers: [
          { mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: layerDigest, size: layer.length },
        ],
      }),
    );
    const layout = join(work, 'layout');
    const blobs = join(layout, 'blobs', 'sha256');
    mkdirSync(blobs, { recursive: true });
    for (const blob of [layer, config, manifest]) writeFileSync(join(blobs, sha256(blob)), blob);
    writeFileSync(join(layout, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    const tag = spec.name.slice(spec.name.lastIndexOf(':') + 1);
    const digest = `sha256:${sha256(manifest)}`;
    const byDigest = `${repositoryOf(spec.name)}@${digest}`;
    const entry = (annotations: Record<string, string>) => ({
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      digest,
      size: manifest.length,
      annotations,
    });
    // The image under its tag and under its digest reference, as `ctr export` writes an image
    // pulled by tag and one pulled by digest: `ctr images import` names an image only after these
    // annotations, and containerd's CRI finds a local image only under a name it holds (a Pod
    // naming `repo@sha256:<manifest>` that only `repo:tag` names makes the kubelet pull it). The
    // importer's own `--digests` names the digest of this index.json, which no Pod can know.
    writeFileSync(
      join(layout, 'index.json'),
      JSON.stringify({
        schemaVersion: 2,
        manifests: [
          entry({ 'io.containerd.image.name': spec.name, 'org.opencontainers.image.ref.name': tag }),
          entry({ 'io.containerd.image.name': byDigest, 'org.opencontainers.image.ref.name': byDigest }),
        ],
      }),
    );
    mkdirSync(dirname(file), { recursive: true });
    execFileSync('tar', [
      '--sort=name',
      '--mtime=@0',
      '--owner=0',
      '--group=0',
      '-C',
      layout,
      '-cf',
      file,
      '.',
    ]);
    return `sha256:${sha256(manifest)}`;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Copies `src` to `root`/`dest` (parents created), with `mode`. */
export function put(root: string, dest: string, src: string, mode = 0o755): void {
  const target = join(root, dest);
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(src, target);
  chmodSync(target, mode);
}

/** Writes `content` to `root`/`dest` (parents created). */
export function write(root: string, dest: string, content: string, mode = 0o644): void {
  const target = join(root, dest);
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, content, { mode });
}

export const BUSYBOX = '/bin/busybox';

/**
 * The node's own images: the Pod sandbox (`pause`), CoreDNS, and busybox for test workloads
 * (Debian's busybox-static, every applet linked in /bin).
 */
export function nodeImages(bin: string): ImageSpec[] {
  return [
    {
      name: 'agentcard.test/pause:1',
      fill: (root) => put(root, 'pause', join(bin, 'pause')),
      config: { Entrypoint: ['/pause'], User: '65535:65535' },
    },
    {
      name: 'agentcard.test/coredns:1',
      fill: (root) => put(root, 'coredns', join(bin, 'coredns')),
      config: { Entrypoint: ['/coredns'], ExposedPorts: { '53/udp': {}, '53/tcp': {} } },
    },
    {
      name: 'agentcard.test/busybox:1',
      fill: (root) => {
        put(root, 'bin/busybox', BUSYBOX);
        const applets = execFileSync(BUSYBOX, ['--list'], { encoding: 'utf8' });
        for (const applet of applets.split('\n').filter((a) => a && a !== 'busybox')) {
          symlinkSync('busybox', join(root, 'bin', applet));
        }
        mkdirSync(join(root, 'tmp'), { mode: 0o1777 });
        chmodSync(join(root, 'tmp'), 0o1777);
        write(
          root,
          'etc/passwd',
          'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n',
        );
        write(root, 'etc/group', 'root:x:0:\nnobody:x:65534:\n');
      },
      config: { Cmd: ['/bin/sh'], Env: ['PATH=/bin'] },
    },
  ];
}
