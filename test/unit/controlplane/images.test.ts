/**
 * An image assembled for the node cluster (test/node/images.ts) names itself twice in its OCI
 * layout's index: by tag and by its manifest's digest, so `ctr images import` creates both names
 * and containerd's CRI finds the image when a Pod names it by digest (as the chart pins nginx)
 * instead of trying to pull it. The node project checks the names on the node itself
 * (test/e2e/product-images.test.ts).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { repositoryOf, writeImageArchive } from '../../node/images.ts';

const work = mkdtempSync(join(tmpdir(), 'agentcard-images-test-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const read = (archive: string, path: string) => execFileSync('tar', ['-xOf', archive, path]);

describe('writeImageArchive', () => {
  it('names the manifest by tag and by its digest, as an export of an image pulled by digest does', () => {
    const archive = join(work, 'image.tar');
    const digest = writeImageArchive(
      {
        name: 'registry.test:5000/team/app:1.2',
        config: { Cmd: ['/hello'] },
        fill: (root) => writeFileSync(join(root, 'hello'), 'hi\n'),
      },
      archive,
    );
    expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    // The digest is the manifest blob's, the one a registry serves and a Pod pins.
    const manifest = read(archive, `./blobs/sha256/${digest.slice('sha256:'.length)}`);
    expect(`sha256:${createHash('sha256').update(manifest).digest('hex')}`).toBe(digest);
    const index = JSON.parse(read(archive, './index.json').toString()) as {
      manifests: { digest: string; annotations: Record<string, string> }[];
    };
    expect(index.manifests.map((m) => m.digest)).toEqual([digest, digest]);
    expect(index.manifests.map((m) => m.annotations['io.containerd.image.name'])).toEqual([
      'registry.test:5000/team/app:1.2',
      `registry.test:5000/team/app@${digest}`,
    ]);
    expect(index.manifests[0]!.annotations['org.opencontainers.image.ref.name']).toBe('1.2');
  });
});

describe('repositoryOf', () => {
  it('drops the tag, not a registry port', () => {
    expect(repositoryOf('registry.test:5000/team/app:1.2')).toBe('registry.test:5000/team/app');
    expect(repositoryOf('agentcard.test/busybox:1')).toBe('agentcard.test/busybox');
  });

  it('refuses a name without a tag', () => {
    expect(() => repositoryOf('registry.test:5000/team/app')).toThrow(/has no tag/);
  });
});
