/**
 * Bad input of every kind ends with one line on stderr that names the problem, a non-zero exit
 * and no stack trace.
 */
import { chmodSync, mkdirSync, openSync, closeSync, ftruncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { agentcard, expectOneLineError, tempDir } from '../../support/cli.ts';

const { dir, cleanup } = tempDir();
afterAll(cleanup);

function file(name: string, content: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

describe('bad input', () => {
  it('malformed YAML names the line', async () => {
    const f = file(
      'bad.yaml',
      'apiVersion: agentcard.dev/v1alpha1\nkind: AgentCard\nspec:\n  card: [1,\n  x: }\n',
    );
    expectOneLineError(
      await agentcard(['validate', '-f', f]),
      /bad\.yaml: not valid YAML at line \d+, column \d+: /,
    );
  });

  it('a card nested 100,000 levels deep: render and validate name the place, no stack overflow', async () => {
    const depth = 100_000;
    const text = `{"name":"Deep","description":"d","version":"1.0.0","capabilities":{"extensions":[{"uri":"https://x.example/e","params":${'{"a":'.repeat(depth)}{}${'}'.repeat(depth)}}]}}`;
    for (const name of ['deep.json', 'deep.yaml']) {
      const f = file(name, text);
      for (const command of ['render', 'validate']) {
        const r = await agentcard([command, '-f', f]);
        expect(r.code, `${command} ${name}`).toBe(1);
        expect(r.stdout + r.stderr).toMatch(
          /capabilities\.extensions\[0\]\.params\.a\.a[.a]*: nested more than 32 levels deep/,
        );
        expect(r.stderr).not.toMatch(/Maximum call stack|\n\s+at /);
      }
    }
  });

  it('malformed JSON names the problem (and position), without quoting the input', async () => {
    const f = file('bad.json', '{"name": "Recipe Agent", "description": }');
    const r = await agentcard(['render', '-f', f]);
    expectOneLineError(r, /bad\.json: not valid JSON: unexpected '\}'$/);
    expect(r.stderr).not.toContain('description');
    const g = file('bad2.json', '{"name": "Recipe Agent",\n "skills": [1 2]}');
    expectOneLineError(
      await agentcard(['validate', '-f', g]),
      /bad2\.json: not valid JSON: .* at position 39 \(line 2 column 15\)$/,
    );
    const h = file('bad3.json', '{"name": ');
    expectOneLineError(
      await agentcard(['validate', '-f', h]),
      /bad3\.json: not valid JSON: Unexpected end of JSON input$/,
    );
  });

  it('duplicate JSON keys are refused (parsers disagree on which one wins)', async () => {
    const f = file('dup.json', '{"name": "a", "name": "b"}');
    expectOneLineError(
      await agentcard(['validate', '-f', f]),
      /dup\.json: duplicate key at line 1, column \d+/,
    );
  });

  it('a 50 MB file is refused by its size before it is read', async () => {
    const f = join(dir, 'huge.json');
    const fd = openSync(f, 'w');
    ftruncateSync(fd, 50 * 1024 * 1024); // sparse: nothing to read if the size check works
    closeSync(fd);
    for (const args of [
      ['validate', '-f', f],
      ['render', '-f', f],
      ['sign', '-f', 'test/fixtures/cards/recipe-agent.yaml', '--key', f],
      ['verify', '-f', f, '--jwks', f],
    ]) {
      expectOneLineError(await agentcard(args), /huge\.json is 52428800 bytes; the limit is \d+ bytes/);
    }
  });

  it('standard input over the limit is refused while reading', async () => {
    const r = await agentcard(['validate', '-f', '-'], { input: Buffer.alloc(5 * 1024 * 1024, 0x20) });
    expectOneLineError(r, /standard input is over 4194304 bytes; the limit is 4194304 bytes/);
  });

  it('missing files, directories and non-text files', async () => {
    expectOneLineError(
      await agentcard(['validate', '-f', join(dir, 'nope.yaml')]),
      /cannot read .*nope\.yaml: no such file/,
    );
    const sub = join(dir, 'sub');
    mkdirSync(sub);
    expectOneLineError(await agentcard(['render', '-f', sub]), /cannot read .*sub: is a directory/);
    const bin = file('binary.json', Buffer.from([0xff, 0xfe, 0x00, 0x80]));
    expectOneLineError(await agentcard(['validate', '-f', bin]), /binary\.json is not UTF-8 text/);
  });

  it.skipIf(process.getuid?.() === 0)('an unreadable file (permission denied)', async () => {
    const f = file('locked.yaml', 'a: 1');
    chmodSync(f, 0o000);
    expectOneLineError(
      await agentcard(['validate', '-f', f]),
      /cannot read .*locked\.yaml: permission denied/,
    );
  });

  it('YAML alias bombs are refused', async () => {
    const bomb = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (const n of ['b', 'c', 'd', 'e', 'f']) {
      const prev = String.fromCharCode(n.charCodeAt(0) - 1);
      bomb.push(`${n}: &${n} [${Array(10).fill(`*${prev}`).join(', ')}]`);
    }
    expectOneLineError(
      await agentcard(['validate', '-f', '-'], { input: bomb.join('\n') }),
      /standard input: .*alias/i,
    );
  });

  it('wrong types and unknown fields in a card to render are listed, then one summary line', async () => {
    const f = file(
      'types.json',
      JSON.stringify({ name: 7, description: 'Finds recipes for you.', colour: 'red' }),
    );
    const r = await agentcard(['render', '-f', f]);
    expect(r.code).toBe(1);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toContain(`${f}: name: expected string, got number`);
    expect(lines).toContain(`${f}: colour: unknown field`);
    expect(lines.at(-1)).toMatch(/^agentcard: .*types\.json: invalid card \(\d+ errors\)$/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.stdout).toBe('');
  });

  it('usage errors exit 2', async () => {
    expectOneLineError(await agentcard(['validate']), /no input: give -f FILE/, 2);
    expectOneLineError(
      await agentcard(['validate', '--frobnicate', '-f', 'x']),
      /unknown option --frobnicate/,
      2,
    );
    expectOneLineError(
      await agentcard(['render', '-f', 'x', '--format', 'v2']),
      /--format must be v1 or v0\.3/,
      2,
    );
    expectOneLineError(
      await agentcard(['sign', '-f', 'examples/agentcard-minimal.yaml']),
      /no key: give --key FILE/,
      2,
    );
    expectOneLineError(await agentcard(['verify', '-f', 'x']), /no keys: give --jwks FILE/, 2);
    expectOneLineError(await agentcard(['keygen', '--alg', 'HS256']), /unsupported alg "HS256"/, 2);
    expectOneLineError(await agentcard(['keygen']), /no --alg/, 2);
  });

  it('--help prints the usage and exits 0', async () => {
    for (const command of ['validate', 'render', 'sign', 'verify', 'keygen']) {
      const r = await agentcard([command, '--help']);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^usage: agentcard ${command} `));
    }
  });
});
