/**
 * The GitHub Actions example of docs/cli-in-ci.md that fails a pull request which breaks callers,
 * run as a runner runs it: its diff step's script, with its env, in a clone whose origin's main
 * branch holds the manifest and whose pull request branch changes it, with `agentcard` on PATH.
 * A pull request that removes a skill fails the step (exit 3, an error annotation on the
 * manifest's line, the output the page shows); one that adds a skill passes; a new manifest passes.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { tempDir } from '../../support/cli.ts';
import { fixturePath, repoRoot } from '../../support/paths.ts';
import { agentcardBin } from '../../support/test-package.ts';

type Step = { name?: string; run?: string; env?: Record<string, string> };
type Workflow = { on: unknown; jobs: Record<string, { steps: Step[] }> };

const doc = readFileSync(join(repoRoot, 'docs/cli-in-ci.md'), 'utf8');
const section = doc.split('\n## Failing a pull request that breaks callers\n')[1]?.split('\n## ')[0] ?? '';
const blocks = (lang: string) =>
  [...section.matchAll(new RegExp('^```' + lang + '\\n([\\s\\S]*?)^```', 'gm'))].map((m) => m[1]!);

const { dir, cleanup } = tempDir();
afterAll(cleanup);

const manifestPath = 'deploy/agentcards/weather.yaml';
const base = readFileSync(fixturePath('changes/support-agent-2.2.0.yaml'), 'utf8');

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@example.com',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@example.com',
      GIT_CONFIG_GLOBAL: '/dev/null',
    },
  });
}

let step: Step;
let bin: string;
let origin: string;

beforeAll(() => {
  const workflow = parse(blocks('yaml')[0] ?? '') as Workflow;
  const steps = Object.values(workflow.jobs).flatMap((j) => j.steps);
  step = steps.find((s) => s.run?.includes('agentcard diff'))!;
  // `agentcard` on PATH, as `npm install -g` puts it there: the package as it ships.
  bin = join(dir, 'bin');
  mkdirSync(bin);
  const shim = join(bin, 'agentcard');
  writeFileSync(
    shim,
    `#!/bin/sh\nexec "${join(repoRoot, 'node_modules/.bin/node')}" "${agentcardBin()}" "$@"\n`,
  );
  chmodSync(shim, 0o755);
  // The repository on GitHub: main holds the manifest.
  origin = join(dir, 'origin');
  mkdirSync(join(origin, 'deploy/agentcards'), { recursive: true });
  git(origin, 'init', '-q', '-b', 'main');
  writeFileSync(join(origin, manifestPath), base);
  git(origin, 'add', '.');
  git(origin, 'commit', '-qm', 'weather agent');
});

/** Clones origin (as actions/checkout with fetch-depth 0), applies the PR, runs the step. */
function runPullRequest(name: string, edit: (work: string) => void, overrides: Record<string, string> = {}) {
  const work = join(dir, name);
  git(dir, 'clone', '-q', origin, work);
  git(work, 'checkout', '-qb', name);
  edit(work);
  const runnerTemp = join(dir, `${name}-tmp`);
  mkdirSync(runnerTemp);
  const env = Object.fromEntries(
    Object.entries(step.env ?? {}).map(([k, v]) => [k, v.replace('${{ github.base_ref }}', 'main')]),
  );
  const result = spawnSync('bash', ['-e', '-c', step.run!], {
    cwd: work,
    encoding: 'utf8',
    timeout: 60_000,
    env: {
      ...process.env,
      ...env,
      ...overrides,
      PATH: `${bin}:${process.env.PATH}`,
      RUNNER_TEMP: runnerTemp,
      GITHUB_ACTIONS: 'true',
    },
  });
  /** The line of the PR's manifest that holds `text`. */
  const lineOf = (text: string) =>
    readFileSync(join(work, manifestPath), 'utf8')
      .split('\n')
      .findIndex((l) => l.includes(text)) + 1;
  return { ...result, lineOf };
}

type Card = { version: string; skills: Array<{ id: string; [k: string]: unknown }> };

function editManifest(work: string, change: (card: Card) => void): void {
  const path = join(work, manifestPath);
  const manifest = parse(readFileSync(path, 'utf8'));
  change(manifest.spec.card);
  writeFileSync(path, stringify(manifest));
}

describe('docs/cli-in-ci.md: failing a pull request that breaks callers', () => {
  it('has a GitHub Actions workflow on pull_request whose step diffs the base branch manifest', () => {
    expect(step?.run).toMatch(/git show "origin\/\$BASE:\$MANIFEST"/);
    expect(step.run).toMatch(/agentcard diff .* --fail-on breaking/);
    expect(step.env).toMatchObject({ BASE: '${{ github.base_ref }}', MANIFEST: manifestPath });
  });

  it('fails a pull request that removes a skill, with an error annotation and the output the page shows', () => {
    const r = runPullRequest('remove-skill', (work) =>
      editManifest(work, (card) => {
        card.version = '2.3.0';
        card.skills = card.skills.filter((s) => s.id !== 'track-order');
      }),
    );
    expect(r.status, r.stderr).toBe(3);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines.filter((l) => l.startsWith('::'))).toEqual([
      `::error file=${manifestPath},line=${r.lineOf('skills:')},title=breaking card change (skill-removed)::skills[1]: skill track-order (Track an order) removed`,
      `::notice file=${manifestPath},line=${r.lineOf('version: 2.3.0')},title=descriptive card change (version-changed)::version: version 2.2.0 -> 2.3.0`,
    ]);
    // What the log shows (workflow commands are not printed): the page's text block.
    const shown = [...lines.filter((l) => !l.startsWith('::')), ...r.stderr.trimEnd().split('\n')].join('\n');
    expect(shown).toBe(blocks('text')[0]!.trimEnd());
  });

  it('passes a pull request that adds a skill, and one that adds the manifest', () => {
    const added = runPullRequest('add-skill', (work) =>
      editManifest(work, (card) => {
        card.skills.push({
          id: 'cancel-order',
          name: 'Cancel an order',
          description: 'Cancels it.',
          tags: ['orders'],
        });
      }),
    );
    expect(added.status, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/^compatible {2}skills\[2\]: skill cancel-order/m);
    const other = 'deploy/agentcards/orders.yaml';
    const fresh = runPullRequest('new-manifest', (work) => writeFileSync(join(work, other), base), {
      MANIFEST: other,
    });
    expect(fresh.status, fresh.stderr).toBe(0);
    expect(fresh.stdout).toBe(`${other} is new on this branch: nothing to compare\n`);
  });
});
