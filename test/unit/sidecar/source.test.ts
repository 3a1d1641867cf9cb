import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readSnapshot, watchDirectory } from '../../../operator/sidecar/source.ts';
import type { DirectoryWatch, Snapshot } from '../../../operator/sidecar/source.ts';
import { cardFiles, kubeletWrite, tempDir } from '../../support/card-files.ts';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function waitFor<T>(what: string, get: () => T | undefined, ms = 2000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = get();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function cardVersionOf(s: Snapshot): string {
  return (JSON.parse(s.files.get('agent-card.json')!.bytes.toString()) as { version: string }).version;
}

describe('readSnapshot', () => {
  it('reads one consistent version through ..data', async () => {
    const dir = await tempDir();
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await kubeletWrite(dir, cardFiles('1'));
    const s = await readSnapshot(dir);
    expect(cardVersionOf(s)).toBe('1');
    expect(s.files.get('cache-max-age-seconds')!.bytes.toString()).toBe('120');
    expect(s.fingerprint).toContain('..2026_11_30');
  });

  it('reads plain files when there is no ..data link, and reports absent files as missing', async () => {
    const dir = await tempDir();
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await writeFile(join(dir, 'agent-card.json'), cardFiles('7')['agent-card.json']!);
    const s = await readSnapshot(dir);
    expect(cardVersionOf(s)).toBe('7');
    expect(s.files.has('jwks.json')).toBe(false);
  });
});

describe('watchDirectory', () => {
  async function watching(dir: string, opts: { useWatch: boolean; pollMs: number }) {
    const seen: Snapshot[] = [];
    const w: DirectoryWatch = watchDirectory(dir, {
      ...opts,
      onChange: (s) => seen.push(s),
      onError: () => {},
    });
    cleanups.push(() => w.close());
    return { seen, w };
  }

  it('notices a kubelet ..data swap through the watcher', async () => {
    const dir = await tempDir();
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await kubeletWrite(dir, cardFiles('1'));
    // A long poll interval: only the watcher can see the swap in time.
    const { seen } = await watching(dir, { useWatch: true, pollMs: 60_000 });
    await waitFor('first snapshot', () => seen[0]);
    await kubeletWrite(dir, cardFiles('2'));
    const second = await waitFor('second snapshot', () => seen[1]);
    expect(cardVersionOf(second)).toBe('2');
  });

  it('notices a swap through the poll alone when watching is off', async () => {
    const dir = await tempDir();
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await kubeletWrite(dir, cardFiles('1'));
    const { seen } = await watching(dir, { useWatch: false, pollMs: 50 });
    await waitFor('first snapshot', () => seen[0]);
    await kubeletWrite(dir, cardFiles('3'));
    expect(cardVersionOf(await waitFor('poll snapshot', () => seen[1]))).toBe('3');
  });

  it('does not report the same contents twice', async () => {
    const dir = await tempDir();
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await kubeletWrite(dir, cardFiles('1'));
    const { seen, w } = await watching(dir, { useWatch: false, pollMs: 60_000 });
    await waitFor('first snapshot', () => seen[0]);
    await w.check();
    await w.check();
    expect(seen).toHaveLength(1);
  });

  it('waits for a directory that does not exist yet', async () => {
    const parent = await tempDir();
    cleanups.push(() => rm(parent, { recursive: true, force: true }));
    const dir = join(parent, 'later');
    const { seen } = await watching(dir, { useWatch: true, pollMs: 50 });
    const { mkdir } = await import('node:fs/promises');
    await mkdir(dir);
    await kubeletWrite(dir, cardFiles('5'));
    expect(cardVersionOf(await waitFor('snapshot', () => seen.find((s) => s.files.size > 0)))).toBe('5');
  });
});
