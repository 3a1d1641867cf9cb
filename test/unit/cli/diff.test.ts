/**
 * `agentcard diff` as a user runs it: the real command on the repository's examples and their
 * modified versions (test/fixtures/changes), an a2a-go v0.3 card, and a live card served by
 * @a2a-js/sdk's own card handler on 127.0.0.1 (fetched under the address policy). Exit codes,
 * text, JSON, GitHub Actions annotations and bad input.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import express from 'express';
import { AgentCard as SdkAgentCard } from '@a2a-js/sdk';
import { agentCardHandler } from '@a2a-js/sdk/server/express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { audienceVariants } from '../../../operator/card/variants.ts';
import { renderV1 } from '../../../operator/card/render.ts';
import { validateResource } from '../../../operator/card/validate.ts';
import { agentcard, expectOneLineError, tempDir } from '../../support/cli.ts';
import { repoRoot } from '../../support/paths.ts';

const signed = 'examples/agentcard-signed.yaml';
const minor = 'test/fixtures/changes/support-agent-2.2.0.yaml';
const major = 'test/fixtures/changes/support-agent-3.0.0.yaml';

/** Outside GitHub Actions, whatever the machine running the tests says. */
const diff = (args: string[], env: Record<string, string> = {}) =>
  agentcard(['diff', ...args], { env: { GITHUB_ACTIONS: '', ...env } });

const { dir, cleanup } = tempDir();
afterAll(cleanup);

/** The A2A 1.0 card of an AgentCard manifest (of one audience), as `agentcard render` prints it. */
function rendered(manifest: string, audience?: string): Record<string, unknown> {
  const { spec, card } = validateResource(parse(readFileSync(join(repoRoot, manifest), 'utf8')));
  const variant = audienceVariants(spec!, card!).find((v) => v.name === (audience ?? 'default'));
  return renderV1(variant!.card);
}

function file(name: string, content: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return path;
}

describe('agentcard diff: classes and exit codes', () => {
  it('a skill removed fails --fail-on breaking with exit 3, and lists every change', async () => {
    const r = await diff([minor, major, '--fail-on', 'breaking']);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stdout).toBe(
      [
        'breaking    securityRequirements[0].schemes.oauth2.list: oauth2 (agent.invoke) no longer suffices: scope orders.read of oauth2 now required [security-tightened]',
        'breaking    skills[0]: skill resolve-support-request (Resolve a support request) removed [skill-removed]',
        'descriptive version: version 2.2.0 -> 3.0.0 [version-changed]',
        '3 changes: 2 breaking, 0 compatible, 1 descriptive',
        '',
      ].join('\n'),
    );
    expect(r.stderr).toBe(
      `agentcard: ${major}: 3 changes: 2 breaking, 0 compatible, 1 descriptive (--fail-on breaking)\n`,
    );
  });

  it('without --fail-on, or below its class, exits 0', async () => {
    expect((await diff([minor, major])).code).toBe(0);
    const r = await diff([signed, minor, '--fail-on', 'breaking']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(
      /^compatible {2}skills\[1\]: skill track-order \(Track an order\) added \[skill-added\]$/m,
    );
  });

  it('--fail-on compatible: 4 for compatible changes, 3 when one is breaking', async () => {
    expect((await diff([signed, minor, '--fail-on', 'compatible'])).code).toBe(4);
    expect((await diff([signed, major, '--fail-on', 'compatible'])).code).toBe(3);
  });

  it('--fail-on descriptive: 5 for text only; identical cards exit 0 with "no changes"', async () => {
    const reworded = file(
      'reworded.json',
      JSON.parse(
        (await agentcard(['render', '-f', signed])).stdout.replace('Customer Support Agent', 'Support Agent'),
      ),
    );
    const r = await diff([signed, reworded, '--fail-on', 'descriptive']);
    expect(r.code, r.stderr).toBe(5);
    expect(r.stdout).toMatch(/^descriptive name: name "Customer Support Agent" -> "Support Agent"/);
    const same = await diff([signed, signed, '--fail-on', 'descriptive']);
    expect(same.code).toBe(0);
    expect(same.stdout).toBe('no changes\n');
  });

  it('--output json: every change with its path, item and class, and whether the run failed', async () => {
    const r = await diff([minor, major, '--output', 'json', '--fail-on', 'breaking']);
    expect(r.code).toBe(3);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({
      old: minor,
      new: major,
      failOn: 'breaking',
      failed: true,
      highest: 'breaking',
      counts: { breaking: 2, compatible: 0, descriptive: 1 },
    });
    expect(report.changes[1]).toEqual({
      rule: 'skill-removed',
      class: 'breaking',
      path: 'skills[0]',
      side: 'old',
      item: 'resolve-support-request',
      message: 'skill resolve-support-request (Resolve a support request) removed',
    });
  });

  it('an AgentCard with audiences: --audience compares that audience', async () => {
    const audiences = 'examples/agentcard-audiences.yaml';
    const r = await diff([audiences, audiences, '--audience', 'public']);
    expect(r.stdout).toBe('no changes\n');
    // The default audience's card against the public one: other URLs and security.
    const r2 = await diff([
      audiences,
      file('public.json', rendered(audiences, 'public')),
      '--fail-on',
      'breaking',
    ]);
    expect(r2.code).toBe(3);
    expect(r2.stdout).toMatch(/\[interface-url-changed\]/);
  });
});

describe('agentcard diff under GitHub Actions', () => {
  it('adds an annotation per change: error when it fails the run, warning for other breaking changes, notice else', async () => {
    const failing = await diff([minor, major, '--fail-on', 'breaking'], { GITHUB_ACTIONS: 'true' });
    const annotations = failing.stdout.split('\n').filter((l) => l.startsWith('::'));
    expect(annotations).toEqual([
      `::error file=${major},line=40,title=breaking card change (security-tightened)::securityRequirements[0].schemes.oauth2.list: oauth2 (agent.invoke) no longer suffices: scope orders.read of oauth2 now required`,
      `::error file=${major},line=43,title=breaking card change (skill-removed)::skills[0]: skill resolve-support-request (Resolve a support request) removed`,
      `::notice file=${major},line=10,title=descriptive card change (version-changed)::version: version 2.2.0 -> 3.0.0`,
    ]);
    const warned = await diff([minor, major], { GITHUB_ACTIONS: 'true' });
    expect(warned.stdout).toMatch(/^::warning file=.*\(skill-removed\)::/m);
    // Not under Actions: no workflow command at all.
    expect((await diff([minor, major])).stdout).not.toMatch(/^::/m);
    // JSON output stays JSON.
    const json = await diff([minor, major, '-o', 'json'], { GITHUB_ACTIONS: 'true' });
    expect(() => JSON.parse(json.stdout)).not.toThrow();
  });

  it('a card cannot inject a workflow command through its text', async () => {
    const card = rendered(signed) as { skills: unknown[] };
    card.skills.push({ id: 'x', name: 'X\n::add-mask::oops\n', description: 'd', tags: [] });
    const r = await diff([signed, file('hostile.json', card)], { GITHUB_ACTIONS: 'true' });
    expect(r.stdout).not.toMatch(/^::add-mask/m);
    expect(r.stdout).toMatch(/^::notice .*skill x \(X\?::add-mask::oops\?\) added$/m);
  });
});

describe('agentcard diff: cards of every origin', () => {
  it("an a2a-go v0.3 card is converted, and its move to 1.0 shows each interface's major version", async () => {
    const r = await diff([
      'test/fixtures/changes/a2a-go-0.3.json',
      'test/fixtures/changes/go-agent-1.0.yaml',
      '-o',
      'json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const rules = JSON.parse(r.stdout).changes.map((c: { rule: string }) => c.rule);
    expect(rules.filter((x: string) => x === 'protocol-major-changed')).toHaveLength(2);
  });

  describe('a live card served by @a2a-js/sdk', () => {
    let server: Server;
    let origin: string;
    const json = {
      name: 'SDK Agent',
      description: 'Served by the SDK',
      version: '1.0.0',
      supportedInterfaces: [
        { url: 'https://sdk.example.com/a2a/jsonrpc', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
        { url: 'https://sdk.example.com/a2a/jsonrpc', protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
      ],
      capabilities: { streaming: true },
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [
        { id: 'echo', name: 'Echo', description: 'Echoes', tags: ['echo'] },
        { id: 'shout', name: 'Shout', description: 'Echoes loudly', tags: ['echo'] },
      ],
    };

    beforeAll(async () => {
      const card = SdkAgentCard.fromJSON(json);
      const app = express();
      // The SDK's card handler, with its v0.3 compatibility layer (a 1.0 client gets the 1.0 card).
      app.use(
        '/.well-known/agent-card.json',
        agentCardHandler({ agentCardProvider: async () => card, legacyCompat: { enabled: true } }),
      );
      app.get('/moved', (_req, res) => res.redirect(302, '/.well-known/agent-card.json'));
      await new Promise<void>((resolve) => {
        server = app.listen(0, '127.0.0.1', () => resolve());
      });
      origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it('is fetched from its origin (the well-known path) and compared with a file', async () => {
      const next = file('sdk-next.json', { ...json, skills: json.skills.slice(0, 1) });
      const r = await diff([origin, next, '--allow-cidr', '127.0.0.0/8', '--fail-on', 'breaking']);
      expect(r.code, r.stderr).toBe(3);
      expect(r.stdout).toBe(
        'breaking    skills[1]: skill shout (Shout) removed [skill-removed]\n1 change: 1 breaking, 0 compatible, 0 descriptive\n',
      );
      const same = await diff([
        `${origin}/.well-known/agent-card.json`,
        file('sdk.json', json),
        '--allow-cidr',
        '127.0.0.0/8',
      ]);
      expect(same.stdout).toBe('no changes\n');
    });

    it('is refused on loopback without --allow-cidr, and a redirect is not followed', async () => {
      expectOneLineError(
        await diff([origin, file('sdk2.json', json)]),
        /127\.0\.0\.1.*: cannot fetch the card: refused by the address policy: .*\(--allow-cidr allows a private or loopback range\)$/,
      );
      expectOneLineError(
        await diff([`${origin}/moved`, file('sdk3.json', json), '--allow-cidr', '127.0.0.0/8']),
        /\/moved: cannot fetch the card: HTTP 302 redirect to \/\.well-known\/agent-card\.json not followed/,
      );
    });
  });
});

describe('agentcard diff: bad input', () => {
  it('usage errors exit 2 with one line', async () => {
    expectOneLineError(await diff([signed]), /give two cards: agentcard diff OLD NEW \(got 1\)/, 2);
    expectOneLineError(
      await diff([signed, minor, '--fail-on', 'major']),
      /--fail-on must be one of breaking, compatible, descriptive, not "major"/,
      2,
    );
    expectOneLineError(await diff([signed, minor, '-o', 'yaml']), /--output must be text or json/, 2);
    expectOneLineError(await diff(['-', '-']), /only one of OLD and NEW can be "-"/, 2);
    expectOneLineError(
      await diff([signed, minor, '--allow-cidr', '10.0.0.0/8']),
      /--allow-cidr is for a card given by URL/,
      2,
    );
    expectOneLineError(
      await diff(['test/fixtures/changes/a2a-go-0.3.json', minor, '--audience', 'public']),
      /a2a-go-0\.3\.json: --audience needs an AgentCard manifest/,
      2,
    );
  });

  it('a missing file, a file with no card, an invalid card: one line naming it, no stack trace', async () => {
    expectOneLineError(await diff(['nope.yaml', minor]), /^agentcard: cannot read nope\.yaml: no such file$/);
    expectOneLineError(
      await diff([signed, file('empty.yaml', 'kind: ConfigMap\napiVersion: v1\n')]),
      /empty\.yaml: no AgentCard manifest or card found/,
    );
    const invalid = await diff([signed, file('invalid.json', { name: 'x' })]);
    expect(invalid.code).toBe(1);
    const lines = invalid.stderr.trimEnd().split('\n');
    expect(lines.at(-1)).toMatch(/^agentcard: .*invalid\.json: invalid card \(\d+ errors\)$/);
    expect(lines.slice(0, -1).every((l) => l.includes('invalid.json: '))).toBe(true);
    expect(invalid.stderr).not.toMatch(/\n\s+at /);
  });

  it('an AgentCard that takes its card from the agent says how to compare it', async () => {
    const adopted = file(
      'adopted.yaml',
      'apiVersion: agentcard.dev/v1alpha1\nkind: AgentCard\nmetadata:\n  name: a\nspec:\n  source:\n    url: https://agent.example.com\n',
    );
    expectOneLineError(
      await diff([adopted, signed]),
      /adopted\.yaml: the card comes from the agent \(spec\.source\); render it first \(agentcard render -f .* --fetch > card\.json\)/,
      2,
    );
  });
});
