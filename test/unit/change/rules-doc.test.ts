/**
 * docs/changes.md lists the rules of the change classification engine in one table; this test
 * reads that table and checks it against the engine's own (operator/change/rules.ts): the same
 * rules, in the same order, each with the same class, words and A2A sections.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { RULES } from '../../../operator/change/rules.ts';
import { repoRoot } from '../../support/paths.ts';

interface Row {
  rule: string;
  class: string;
  change: string;
  spec: string[];
}

/** The rows of the Markdown table whose header starts with `| rule | class |`. */
export function ruleTable(markdown: string): Row[] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => /^\|\s*rule\s*\|\s*class\s*\|/.test(l));
  if (start < 0) throw new Error('no "| rule | class | ..." table');
  const rows: Row[] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const cells = line
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((c) => c.trim().replace(/\\\|/g, '|'));
    if (cells.length !== 4) throw new Error(`a row of ${cells.length} cells: ${line}`);
    const [rule, cls, change, spec] = cells as [string, string, string, string];
    rows.push({
      rule: rule.replace(/^`|`$/g, ''),
      class: cls,
      change,
      spec: spec === '—' ? [] : spec.split(/,\s*/),
    });
  }
  return rows;
}

describe('docs/changes.md', () => {
  const doc = readFileSync(join(repoRoot, 'docs/changes.md'), 'utf8');

  it('reads a table as written', () => {
    expect(
      ruleTable(
        '| rule | class | change | A2A 1.0 |\n| --- | --- | --- | --- |\n| `a-b` | breaking | x \\| y | 3.6, 4.4.6 |\n| `c` | descriptive | z | — |\n\nafter',
      ),
    ).toEqual([
      { rule: 'a-b', class: 'breaking', change: 'x | y', spec: ['3.6', '4.4.6'] },
      { rule: 'c', class: 'descriptive', change: 'z', spec: [] },
    ]);
  });

  it("lists exactly the engine's rules, with their class, words and A2A sections", () => {
    const engine = Object.entries(RULES).map(([rule, r]) => ({
      rule,
      class: r.class,
      change: r.change,
      spec: [...r.spec],
    }));
    expect(ruleTable(doc)).toEqual(engine);
  });

  it('cites only sections that the A2A 1.0 specification has', () => {
    // The sections the rules may cite: the headings of the A2A 1.0 specification they come from.
    const known = new Set([
      '3.3.4',
      '3.6',
      '3.6.2',
      '4.4.1',
      '4.4.2',
      '4.4.3',
      '4.4.4',
      '4.4.5',
      '4.4.6',
      '4.5',
      '4.5.1',
      '4.5.7',
      '4.5.8',
      '4.6.1',
      '4.6.3',
      '5.2',
      '7.3',
      '7.4',
      '8.3.1',
      '8.3.2',
    ]);
    const cited = Object.values(RULES).flatMap((r) => [...r.spec]);
    expect(cited.filter((s) => !known.has(s))).toEqual([]);
  });
});
