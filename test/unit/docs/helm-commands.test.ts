/**
 * The `helm install` and `helm upgrade` commands the README and docs/ show work on a user's
 * cluster as written: they take the chart from a registry (an OCI reference, not a path of a
 * checkout, which a user who installed from the registry does not have; only the path without a
 * registry, which builds its images in a checkout, installs from there), name the release's
 * namespace (without it Helm uses the context's namespace: an install there is a second release,
 * and an upgrade finds no release), and an upgrade keeps the values the release was installed
 * with (without `--reuse-values` Helm resets every value not given again).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../support/paths.ts';

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? markdownFiles(join(dir, e.name)) : e.name.endsWith('.md') ? [join(dir, e.name)] : [],
  );
}

export interface HelmCommand {
  file: string;
  command: string;
}

/** Every `helm install|upgrade` line of the shell blocks of `text`, line continuations joined. */
export function helmCommands(file: string, text: string): HelmCommand[] {
  const blocks = [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```/gm)]
    .filter((m) => ['sh', 'bash', 'shell', 'console', ''].includes(m[1]!))
    .map((m) => m[2]!);
  return blocks.flatMap((block) =>
    block
      .replace(/\\\n\s*/g, ' ')
      .split('\n')
      .map((line) => line.replace(/^\$ /, '').trim())
      .filter((line) => /^helm (install|upgrade)\b/.test(line))
      .map((command) => ({ file, command })),
  );
}

/** Flags of `helm install|upgrade` that take no value (every other flag takes the next word). */
const BOOLEAN_FLAGS = new Set([
  '--install',
  '--create-namespace',
  '--reuse-values',
  '--reset-values',
  '--reset-then-reuse-values',
  '--force-conflicts',
  '--wait',
  '--atomic',
  '--rollback-on-failure',
  '--dry-run',
]);

/** The positional arguments of a helm command (release name, chart), after the verb. */
function positionals(words: string[]): string[] {
  const out: string[] = [];
  for (let i = 2; i < words.length; i++) {
    const w = words[i]!;
    if (!w.startsWith('-')) out.push(w);
    else if (!w.includes('=') && !BOOLEAN_FLAGS.has(w)) i++; // skip the flag's value
  }
  return out;
}

/** What is wrong with a command a user copies, or nothing. */
export function helmCommandProblems(command: string): string[] {
  const words = command.split(/\s+/);
  const problems: string[] = [];
  const chart = positionals(words)[1];
  // The one exception: the path without a registry (docs/install.md), which runs in the checkout
  // that built the images it installs (`npm run images` writes out/images/values.yaml).
  const fromCheckout = chart === './helm/agentcard-operator' && command.includes('-f out/images/values.yaml');
  if (!chart || (!/^"?oci:\/\//.test(chart) && !fromCheckout))
    problems.push(`chart ${chart ?? '(none)'} is not an OCI reference`);
  if (!words.some((w) => w === '--namespace' || w === '-n' || w.startsWith('--namespace='))) {
    problems.push('no --namespace');
  }
  if (words[1] === 'upgrade' && !words.some((w) => /^--(reuse-values|reset-then-reuse-values)$/.test(w))) {
    problems.push('an upgrade without --reuse-values or --reset-then-reuse-values');
  }
  return problems;
}

describe('helm commands in the docs', () => {
  const files = [join(repoRoot, 'README.md'), ...markdownFiles(join(repoRoot, 'docs'))];
  const commands = files.flatMap((f) => helmCommands(relative(repoRoot, f), readFileSync(f, 'utf8')));

  it('finds the install commands of the README and docs/install.md', () => {
    expect(commands.filter((c) => c.file === 'README.md').length).toBeGreaterThanOrEqual(1);
    expect(commands.filter((c) => c.file === 'docs/install.md').length).toBeGreaterThanOrEqual(3);
  });

  it('take the chart from a registry, name the namespace, and keep values on upgrade', () => {
    const bad = commands.flatMap((c) =>
      helmCommandProblems(c.command).map((problem) => `${c.file}: ${c.command}: ${problem}`),
    );
    expect(bad).toEqual([]);
  });

  it('refuses what a user could not run as written', () => {
    expect(
      helmCommandProblems('helm upgrade --install agentcard-operator ./helm/agentcard-operator --set a=b'),
    ).toEqual([
      'chart ./helm/agentcard-operator is not an OCI reference',
      'no --namespace',
      'an upgrade without --reuse-values or --reset-then-reuse-values',
    ]);
    expect(
      helmCommandProblems(
        'helm upgrade agentcard-operator oci://ghcr.io/x/charts/y --version 1.0.0 --namespace s --reuse-values',
      ),
    ).toEqual([]);
    expect(
      helmCommandProblems(
        'helm install agentcard-operator ./helm/agentcard-operator --namespace s -f out/images/values.yaml',
      ),
    ).toEqual([]);
  });
});
