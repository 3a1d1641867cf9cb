/**
 * docs/cli.md documents every command of `agentcard` and every flag each command accepts. The
 * commands are read from the dispatcher and the flags from each command's option table (the
 * object given to parseArgs), so a new flag without documentation fails here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { flagsIn } from '../../support/cli-flags.ts';
import { repoRoot } from '../../support/paths.ts';

const commandsDir = join(repoRoot, 'operator/cli/commands');

/** The command names of the dispatcher (operator/cli/main.ts). */
function commands(): string[] {
  const main = readFileSync(join(repoRoot, 'operator/cli/main.ts'), 'utf8');
  return [...main.matchAll(/^ {2}'?([a-z][a-z-]*)'?: \{/gm)].map((m) => m[1]!);
}

/** The section `## agentcard <command>` of docs/cli.md. */
function section(command: string): string {
  const doc = readFileSync(join(repoRoot, 'docs/cli.md'), 'utf8');
  const body = doc.split(`\n## agentcard ${command}\n`)[1];
  if (body === undefined) throw new Error(`docs/cli.md has no section "## agentcard ${command}"`);
  return body.split('\n## ')[0]!;
}

describe('docs/cli.md', () => {
  it('reads option tables as parseArgs gets them', () => {
    expect(
      flagsIn(`options: {
        file: { type: 'string', short: 'f', multiple: true },
        'leader-elect': { type: 'boolean', default: true },
        help: { type: 'boolean', short: 'h' },
      }`),
    ).toEqual([
      { long: 'file', short: 'f', boolean: false },
      { long: 'leader-elect', boolean: true },
      { long: 'help', short: 'h', boolean: true },
    ]);
  });

  it('every command has a module and a section', () => {
    const names = commands();
    expect(names).toEqual(expect.arrayContaining(['validate', 'sign', 'verify', 'probe', 'operator']));
    const modules = readdirSync(commandsDir).map((f) => f.replace(/\.ts$/, ''));
    for (const name of names) {
      expect(modules, name).toContain(name);
      expect(() => section(name)).not.toThrow();
    }
  });

  it('documents every flag of every command (and its short form)', () => {
    const undocumented: string[] = [];
    for (const name of commands()) {
      const source = readFileSync(join(commandsDir, `${name}.ts`), 'utf8');
      const flags = flagsIn(source);
      expect(flags.length, name).toBeGreaterThan(0);
      const text = section(name);
      for (const flag of flags) {
        if (flag.long === 'help') continue; // every command has --help
        if (!new RegExp(`--${flag.long}(?![a-z-])`).test(text)) undocumented.push(`${name} --${flag.long}`);
        if (flag.short && !text.includes(`-${flag.short}\``)) undocumented.push(`${name} -${flag.short}`);
      }
    }
    expect(undocumented).toEqual([]);
  });
});
