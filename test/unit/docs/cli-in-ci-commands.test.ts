/**
 * docs/cli-in-ci.md's pipelines call only commands and flags that exist: every `agentcard ...`
 * line of its code blocks names a command of the dispatcher (and, for `policy`, its subcommand),
 * and every flag it passes is in that command's option table. The GitHub Actions example checks
 * the cards against policies.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { flagsIn } from '../../support/cli-flags.ts';
import { repoRoot } from '../../support/paths.ts';

const doc = readFileSync(join(repoRoot, 'docs/cli-in-ci.md'), 'utf8');
const blocks = [...doc.matchAll(/```[a-z]*\n([\s\S]*?)```/g)].map((m) => m[1]!);

/** Each `agentcard` invocation of the code blocks, as its words (up to a pipe or redirection). */
function invocations(text: string): string[][] {
  return [...text.matchAll(/(?:^|[\s|;:-])agentcard((?: +[^\s|>;]+)+)/g)].map((m) =>
    m[1]!.trim().split(/ +/),
  );
}

/** The problems of one invocation: an unknown command or a flag the command does not take. */
function problems(words: string[]): string[] {
  const [command, ...args] = words;
  const main = readFileSync(join(repoRoot, 'operator/cli/main.ts'), 'utf8');
  if (!new RegExp(`^ {2}'?${command}'?: \\{`, 'm').test(main)) return [`unknown command ${command}`];
  const source = readFileSync(join(repoRoot, 'operator/cli/commands', `${command}.ts`), 'utf8');
  if (command === 'policy' && args.shift() !== 'check') return ['policy needs its subcommand check'];
  const flags = flagsIn(source);
  const out: string[] = [];
  for (const arg of args) {
    const long = /^--([a-z-]+)/.exec(arg)?.[1];
    const short = /^-([a-z])$/.exec(arg)?.[1];
    if (long && !flags.some((f) => f.long === long)) out.push(`${command}: unknown flag --${long}`);
    if (short && !flags.some((f) => f.short === short)) out.push(`${command}: unknown flag -${short}`);
  }
  return out;
}

describe('docs/cli-in-ci.md', () => {
  const all = blocks.flatMap(invocations);

  it('finds the pipelines’ invocations (the check can fail)', () => {
    expect(all.length).toBeGreaterThanOrEqual(6);
    expect(problems(['validate', '--strictest'])).toEqual(['validate: unknown flag --strictest']);
    expect(problems(['policy', 'apply'])).toEqual(['policy needs its subcommand check']);
    expect(problems(['lint'])).toEqual(['unknown command lint']);
  });

  it('every invocation uses a command and flags that exist', () => {
    expect(all.flatMap(problems)).toEqual([]);
  });

  it('the GitHub Actions and GitLab examples check the cards against the policies', () => {
    for (const ci of ['## GitHub Actions', '## GitLab CI']) {
      const section = doc.split(`\n${ci}\n`)[1]!.split('\n## ')[0]!;
      expect(section, ci).toContain('agentcard policy check -f deploy/agentcards/ --policy deploy/policies/');
    }
  });
});
