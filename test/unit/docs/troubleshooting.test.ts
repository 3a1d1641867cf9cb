/**
 * docs/troubleshooting.md explains every condition reason and Event reason the operator writes.
 * The reasons are read from the code itself: every CamelCase string literal given to a `reason:`
 * in operator/ (conditions, Events, probe verdicts), and the probe's verdict vocabulary.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CARD_REASONS_BY_TYPE, CATALOG_REASONS_BY_TYPE } from '../../../operator/api/reasons.ts';
import { PROBE_REASONS } from '../../../operator/api/reasons.ts';
import { repoRoot } from '../../support/paths.ts';

/** A reason: CamelCase, one word (messages and sentences have spaces). */
const CAMEL = /^[A-Z](?=[A-Za-z0-9]*[a-z])[A-Za-z0-9]*$/;

/** TypeScript sources under `dir`, recursively. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** CamelCase literals in the expression after each `reason:` (ternaries and unions included). */
export function reasonsIn(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/\breason:\s*([^,;}\n]*(?:\n\s*[?:|][^,;}\n]*)*)/g)) {
    for (const lit of m[1]!.matchAll(/'([^'\\]*)'/g)) if (CAMEL.test(lit[1]!)) found.push(lit[1]!);
  }
  return found;
}

function codeReasons(): Map<string, string> {
  const where = new Map<string, string>();
  for (const file of sources(join(repoRoot, 'operator'))) {
    for (const reason of reasonsIn(readFileSync(file, 'utf8'))) {
      if (!where.has(reason)) where.set(reason, relative(repoRoot, file));
    }
  }
  for (const reason of PROBE_REASONS) if (!where.has(reason)) where.set(reason, 'operator/probe/types.ts');
  for (const byType of [CARD_REASONS_BY_TYPE, CATALOG_REASONS_BY_TYPE])
    for (const reason of Object.values(byType).flat())
      if (!where.has(reason)) where.set(reason, 'operator/api/reasons.ts');
  return where;
}

const doc = () => readFileSync(join(repoRoot, 'docs/troubleshooting.md'), 'utf8');
const headings = () => new Set([...doc().matchAll(/^### `([A-Za-z]+)`$/gm)].map((m) => m[1]!));
/**
 * The reasons the page explains: a section of their own, or a row of a table of reasons (the
 * first cell is the reason itself, the others its cause and fix; index rows link instead).
 */
const explained = () =>
  new Set([...headings(), ...[...doc().matchAll(/^\| `([A-Za-z]+)` +\|/gm)].map((m) => m[1]!)]);

describe('docs/troubleshooting.md', () => {
  it('finds reasons in ternaries, unions and plain literals, and skips sentences', () => {
    expect(
      reasonsIn(`x = { reason: probed.length ? 'AllReachable' : 'NothingToProbe', message };
        const p: Array<{ reason: 'SigningKeyNotFound' | 'SigningKeyInvalid'; message: string }> = [];
        return { inject: false, reason: 'the sidecar is already there', card };
        fail({ reason: 'TLSError' });
        at({ status: 'False', reason: nameProblem
            ? 'InvalidName'
            : 'InvalidSpec', message })`),
    ).toEqual([
      'AllReachable',
      'NothingToProbe',
      'SigningKeyNotFound',
      'SigningKeyInvalid',
      'TLSError',
      'InvalidName',
      'InvalidSpec',
    ]);
  });

  it('the code uses the reasons this test knows to look for', () => {
    const reasons = codeReasons();
    // A sample from each source: conditions, Ready, Events, probe verdicts.
    for (const known of [
      'InvalidSpec',
      'SigningKeyNotFound',
      'PublishFailed',
      'ProbesPending',
      'Reconciling',
      'PodsMissingSidecar',
      'NothingToProbe',
      'BindingMismatch',
    ]) {
      expect([...reasons.keys()]).toContain(known);
    }
  });

  it('has a section for every condition and Event reason the code uses', () => {
    const documented = explained();
    const missing = [...codeReasons()].filter(([reason]) => !documented.has(reason));
    expect(missing.map(([reason, file]) => `${reason} (${file})`)).toEqual([]);
  });

  it('lists every section in its index, and links only to headings it has', () => {
    const text = doc();
    const anchors = new Set(
      [...text.matchAll(/^#{2,3} (.+)$/gm)].map((m) =>
        m[1]!
          .toLowerCase()
          .replace(/[^a-z0-9 _-]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    for (const link of text.matchAll(/\]\(#([^)]+)\)/g)) expect(anchors, link[0]).toContain(link[1]);
    const index = text.split('## Index')[1]!.split('\n## ')[0]!;
    const probeSection = text.split('## Probe reasons')[1]!.split('\n## ')[0]!;
    for (const reason of headings()) {
      if (probeSection.includes(`### \`${reason}\``)) continue; // indexed as "probe reasons"
      expect(index, reason).toContain(`(#${reason.toLowerCase()})`);
    }
  });
});
