import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { agentcard, tempDir } from '../../support/cli.ts';

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
});
