/**
 * The links between the README and the documents under docs/ lead somewhere: every relative link
 * names a file of the repository, and every #anchor a heading of its target (GitHub's anchors).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { slug } from '../../../operator/card/reference.ts';
import { repoRoot } from '../../support/paths.ts';

/**
 * Documents the README links to for features whose code and docs are being merged separately;
 * a link to one of them is not checked until the file exists.
 */
const PENDING = new Set(['docs/catalogs.md', 'docs/discover.md', 'docs/audiences.md', 'docs/RELIABILITY.md']);

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? markdownFiles(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
  );
}

/** The anchors of a Markdown file's headings (outside code blocks). */
function anchors(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!.trim())));
}

/** Relative links of a Markdown file (outside code blocks and spans): [text](target). */
function links(file: string): string[] {
  const text = readFileSync(file, 'utf8')
    .replace(/^```[\s\S]*?^```/gm, '')
    .replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z]+:/.test(target));
}

const documents = () => [join(repoRoot, 'README.md'), ...markdownFiles(join(repoRoot, 'docs'))];

describe('links in the README and docs/', () => {
  it('finds the documents and their links', () => {
    const all = documents().flatMap(links);
    expect(documents().length).toBeGreaterThanOrEqual(9);
    expect(all.length).toBeGreaterThan(50);
  });

  it('every relative link names an existing file, and every anchor a heading of it', () => {
    const broken: string[] = [];
    for (const file of documents()) {
      for (const link of links(file)) {
        const [path, anchor] = link.split('#') as [string, string | undefined];
        const target = path === '' ? file : join(dirname(file), path);
        const name = relative(repoRoot, target);
        if (PENDING.has(name) && !existsSync(target)) continue;
        const where = `${relative(repoRoot, file)}: ${link}`;
        if (!existsSync(target)) broken.push(`${where} (no such file)`);
        else if (anchor !== undefined && target.endsWith('.md') && !anchors(target).has(anchor))
          broken.push(`${where} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});
