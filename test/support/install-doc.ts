// The shell blocks of docs/install.md, as its test runs them (test/e2e/install-doc.test.ts): each
// ```sh block is preceded by a comment that says where it runs or why it cannot run on the
// project's node cluster:
//   <!-- install-test: run -->              on the machine that runs kubectl and helm
//   <!-- install-test: run on the node -->  on the node (the `ctr` imports)
//   <!-- install-test: skip: REASON -->     not run; REASON says what the test's cluster lacks
// A block without one is an error, so a new block cannot be left out of the test unnoticed.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './paths.ts';

export interface InstallDocBlock {
  /** Line of the block's opening fence (1-based), for messages. */
  line: number;
  where: 'host' | 'node' | 'skip';
  /** Why a skipped block is not run. */
  reason?: string;
  /** The block's text, as a shell reads it. */
  code: string;
}

export const INSTALL_DOC = join(repoRoot, 'docs', 'install.md');

const MARK = /^\s*<!-- install-test: (run on the node|run|skip: (.+?)) -->\s*$/;

/** Every shell block of `text`, in order, with its mark; throws on a block without one. */
export function installDocBlocks(text = readFileSync(INSTALL_DOC, 'utf8')): InstallDocBlock[] {
  const lines = text.split('\n');
  const blocks: InstallDocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(\s*)```(\w*)\s*$/.exec(lines[i]!);
    if (!fence) continue;
    const indent = fence[1]!;
    let end = i + 1;
    while (end < lines.length && lines[end]!.trim() !== '```') end++;
    if (fence[2] === 'sh') {
      let prev = i - 1;
      while (prev >= 0 && lines[prev]!.trim() === '') prev--;
      const mark = MARK.exec(lines[prev] ?? '');
      if (!mark)
        throw new Error(`docs/install.md:${i + 1}: a sh block without an <!-- install-test: ... --> mark`);
      const code = lines
        .slice(i + 1, end)
        .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
        .join('\n');
      blocks.push({
        line: i + 1,
        where: mark[1] === 'run' ? 'host' : mark[1] === 'run on the node' ? 'node' : 'skip',
        ...(mark[2] ? { reason: mark[2] } : {}),
        code,
      });
    }
    i = end;
  }
  return blocks;
}

/** The command lines of a block: comments dropped, line continuations joined. */
export function commandLines(code: string): string[] {
  return code
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l && !l.startsWith('#'));
}
