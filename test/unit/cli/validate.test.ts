import { copyFileSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { agentcard, tempDir } from '../../support/cli.ts';
import { repoRoot } from '../../support/paths.ts';

const { dir, cleanup } = tempDir();
afterAll(cleanup);

const card = {
  name: 'Recipe Agent',
  description: 'Finds recipes and answers cooking questions.',
  supportedInterfaces: [
    { url: 'https://recipes.example.com/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
  ],
  version: '1.0.0',
  capabilities: { streaming: true },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'find', name: 'Find', description: 'Finds a recipe.', tags: ['cooking'] }],
};

const invalidManifest = `apiVersion: agentcard.dev/v1alpha1
kind: AgentCard
metadata:
  name: broken
spec:
  card:
    name: Recipe Agent
    description: Finds recipes and answers cooking questions.
    url: https://recipes.example.com/a2a
    version: 1
    supportedInterfaces:
      - url: https://recipes.example.com/a2a
        protocolBinding: JSONRPC
        protocolVersion: '1.0'
        transport: JSONRPC
    capabilities: {streaming: yes please}
    defaultInputModes: [text/plain]
    defaultOutputModes: [text/plain]
    skills: []
  probe:
    interval: 1s
`;

describe('agentcard validate', () => {
  it('accepts manifests (multi-document YAML), skipping the Secret', async () => {
    const r = await agentcard([
      'validate',
      '-f',
      'test/fixtures/cards/recipe-agent.yaml',
      '-f',
      'test/fixtures/cards/support-agent.yaml',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      [
        'test/fixtures/cards/recipe-agent.yaml: AgentCard recipe-agent: valid',
        'test/fixtures/cards/support-agent.yaml#2: AgentCard support-agent: valid',
        'test/fixtures/cards/support-agent.yaml#1 (Secret support-agent-signing): skipped (not an AgentCard)',
        '',
      ].join('\n'),
    );
  });

  it('reports every problem as path: message and exits 1', async () => {
    const file = join(dir, 'broken.yaml');
    writeFileSync(file, invalidManifest);
    const r = await agentcard(['validate', '-f', file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe(
      [
        `${file}: AgentCard broken: invalid (4 errors)`,
        '  spec.card.supportedInterfaces[0].transport: unknown field (v1.0 uses protocolBinding)',
        '  spec.card.version: expected string, got number',
        '  spec.card.capabilities.streaming: expected boolean, got string',
        '  spec.probe.interval: must be at least 10s',
        '',
      ].join('\n'),
    );
  });

  it('prints warnings, and --strict makes them fail', async () => {
    const file = join(dir, 'weak.json');
    writeFileSync(file, JSON.stringify({ ...card, name: 'AI Assistant', description: 'Cooks.' }));
    const lax = await agentcard(['validate', '-f', file]);
    expect(lax.code).toBe(0);
    expect(lax.stdout).toContain(`${file}: card "AI Assistant": valid (2 warnings)`);
    expect(lax.stdout).toContain('  warning: name: "AI Assistant" is a generic name');
    expect(lax.stdout).toContain('  warning: description: shorter than 20 characters');
    const strict = await agentcard(['validate', '--strict', '-f', file]);
    expect(strict.code).toBe(1);
    expect(strict.stdout).toContain('invalid (2 errors)');
    expect(strict.stdout).toContain('  name: "AI Assistant" is a generic name');
  });

  it('reads bare card JSON from standard input and writes JSON with --output json', async () => {
    const r = await agentcard(['validate', '-f', '-', '--output', 'json'], { input: JSON.stringify(card) });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([
      { source: 'standard input', kind: 'card', name: 'Recipe Agent', valid: true, problems: [] },
    ]);
  });

  it('always fails on credentials in the card, without printing them', async () => {
    const token = 'ghp_0123456789abcdefghijklmnopqrstuvwxyzAB';
    const file = join(dir, 'leaky.json');
    writeFileSync(
      file,
      JSON.stringify({ ...card, description: `Clone the repo with token ${token} first.` }),
    );
    const r = await agentcard(['validate', '-f', file, '-o', 'json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)[0].problems).toEqual([
      {
        path: 'description',
        message: 'looks like a GitHub token; a card is public and must not carry credentials',
        severity: 'error',
      },
    ]);
    expect(r.stdout + r.stderr).not.toContain(token);
  });

  it('fails on a file without any card', async () => {
    const file = join(dir, 'secret-only.yaml');
    writeFileSync(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n');
    const r = await agentcard(['validate', '-f', file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('(file): no AgentCard manifest or card found');
  });

  it('checks the manifest envelope (metadata.name, unknown top-level fields)', async () => {
    const file = join(dir, 'envelope.yaml');
    writeFileSync(
      file,
      `apiVersion: agentcard.dev/v1alpha1\nkind: AgentCard\nmetadata: {name: Not_A_Name}\nspecs: {}\nspec:\n  card: ${JSON.stringify(card)}\n`,
    );
    const r = await agentcard(['validate', '-f', file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('  metadata.name: must be a DNS subdomain name');
    expect(r.stdout).toContain('  specs: unknown field');
  });

  describe('a directory', () => {
    const minimal = join(repoRoot, 'test/fixtures/cards/recipe-agent.yaml');

    it('checks every *.yaml, *.yml and *.json below it, in path order, and exits with the sum', async () => {
      const root = join(dir, 'deploy', 'agentcards');
      mkdirSync(join(root, 'team-b', 'nested'), { recursive: true });
      mkdirSync(join(root, '.git'));
      mkdirSync(join(dir, 'elsewhere'));
      copyFileSync(minimal, join(root, 'recipe.yaml'));
      writeFileSync(join(root, 'team-b', 'broken.yml'), invalidManifest);
      writeFileSync(join(root, 'team-b', 'nested', 'card.json'), JSON.stringify(card));
      writeFileSync(join(root, 'team-b', 'garbled.yaml'), 'kind: [AgentCard\n');
      // Other kinds of a deploy folder are skipped, not errors; other extensions are not read.
      writeFileSync(
        join(root, 'team-b', 'deployment.yaml'),
        'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n',
      );
      writeFileSync(join(root, 'README.md'), '# not a manifest\n');
      // Hidden entries are skipped; a link to a file is read, a link to a directory not followed.
      writeFileSync(join(root, '.git', 'config.yaml'), invalidManifest);
      writeFileSync(join(dir, 'elsewhere', 'broken.yaml'), invalidManifest);
      symlinkSync(join(dir, 'elsewhere'), join(root, 'linked-dir'));
      symlinkSync(join(root, 'team-b', 'nested', 'card.json'), join(root, 'z-link.json'));

      const r = await agentcard(['validate', '-f', `${root}/`]);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe(
        [
          `${root}/recipe.yaml: AgentCard recipe-agent: valid`,
          `${root}/team-b/broken.yml: AgentCard broken: invalid (4 errors)`,
          '  spec.card.supportedInterfaces[0].transport: unknown field (v1.0 uses protocolBinding)',
          '  spec.card.version: expected string, got number',
          '  spec.card.capabilities.streaming: expected boolean, got string',
          '  spec.probe.interval: must be at least 10s',
          `${root}/team-b/nested/card.json: card "Recipe Agent": valid`,
          `${root}/z-link.json: card "Recipe Agent": valid`,
          `${root}/team-b/deployment.yaml (Deployment x): skipped (not an AgentCard)`,
          '',
        ].join('\n'),
      );
      // The file that cannot be parsed is one line on stderr, naming it; the others were checked.
      expect(r.stderr).toMatch(
        new RegExp(
          `^agentcard: ${root}/team-b/garbled\\.yaml: not valid YAML at line \\d+, column \\d+: [^\\n]+\\n$`,
        ),
      );

      const json = await agentcard(['validate', '-f', root, '-o', 'json']);
      expect(json.code).toBe(1);
      const reports = JSON.parse(json.stdout) as Array<{ source: string; kind: string; valid: boolean }>;
      expect(reports.map((x) => [x.source.slice(root.length + 1), x.kind, x.valid])).toEqual([
        ['recipe.yaml', 'AgentCard', true],
        ['team-b/broken.yml', 'AgentCard', false],
        ['team-b/garbled.yaml', 'file', false],
        ['team-b/nested/card.json', 'card', true],
        ['z-link.json', 'card', true],
      ]);
    });

    it('exits 0 when every card below it is valid, and --strict applies to each', async () => {
      const root = join(dir, 'good');
      mkdirSync(join(root, 'sub'), { recursive: true });
      copyFileSync(minimal, join(root, 'recipe.yaml'));
      copyFileSync(
        join(repoRoot, 'test/fixtures/cards/support-agent.yaml'),
        join(root, 'sub', 'signed.yaml'),
      );
      const r = await agentcard(['validate', '--strict', '-f', root]);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout.match(/: valid$/gm)).toHaveLength(2);

      writeFileSync(join(root, 'sub', 'weak.json'), JSON.stringify({ ...card, name: 'AI Assistant' }));
      expect((await agentcard(['validate', '-f', root])).code).toBe(0);
      const strict = await agentcard(['validate', '--strict', '-f', root]);
      expect(strict.code).toBe(1);
      expect(strict.stdout).toContain(`${root}/sub/weak.json: card "AI Assistant": invalid (1 error)`);
    });

    it('mixes with files; an empty directory or a missing file fails without stopping the rest', async () => {
      const empty = join(dir, 'empty');
      mkdirSync(join(empty, 'sub'), { recursive: true });
      writeFileSync(join(empty, 'notes.txt'), 'no manifests here\n');
      const r = await agentcard(['validate', '-f', empty, '-f', join(dir, 'missing.yaml'), '-f', minimal]);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe(`${minimal}: AgentCard recipe-agent: valid\n`);
      expect(r.stderr).toBe(
        [
          `agentcard: ${empty}: no *.yaml, *.yml, *.json file in the directory`,
          `agentcard: cannot read ${join(dir, 'missing.yaml')}: no such file`,
          '',
        ].join('\n'),
      );
    });
  });
});
