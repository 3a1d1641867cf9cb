/**
 * Every file of examples/ says in its first line what it reaches or what it needs, in the form
 * test/support/example-promises.ts reads (test/integration/examples.test.ts then checks the
 * promise on the control plane); its prerequisites are files that exist; and the demo agent it
 * points at runs the operator image of this release.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import {
  CONDITION_KINDS,
  appliedFiles,
  exampleFiles,
  parsePromise,
  readPromises,
} from '../../support/example-promises.ts';
import { repoRoot } from '../../support/paths.ts';

const kindsIn = (file: string) =>
  parseAllDocuments(readFileSync(join(repoRoot, file), 'utf8')).map(
    (d) => (d.toJS() as { kind?: string } | null)?.kind,
  );

describe('examples/ first lines', () => {
  it('every example file states a promise that parses', () => {
    const files = exampleFiles(repoRoot);
    expect(files.length).toBeGreaterThanOrEqual(6);
    const promises = readPromises(repoRoot);
    expect(promises.map((p) => p.file)).toEqual(files);
    // The four a plain cluster runs; the routing examples need a controller.
    expect(promises.filter((p) => p.kind === 'reaches').map((p) => p.file)).toEqual([
      'examples/agentcard-audiences.yaml',
      'examples/agentcard-minimal.yaml',
      'examples/agentcard-signed.yaml',
      'examples/demo-agent.yaml',
    ]);
  });

  it('a Reaches promise names a condition the file has objects for, and prerequisites that exist', () => {
    for (const p of readPromises(repoRoot)) {
      if (p.kind !== 'reaches') continue;
      const kinds = kindsIn(p.file);
      expect(
        CONDITION_KINDS[p.condition]!.some((k) => kinds.includes(k)),
        `${p.file}: no ${p.condition} object`,
      ).toBe(true);
      for (const command of p.after) {
        expect(command, p.file).toMatch(/^(kubectl |npx agentcard )/);
        for (const file of appliedFiles(command)) expect(existsSync(join(repoRoot, file)), file).toBe(true);
      }
    }
  });

  it('the AgentCards point at the demo agent, which their first line applies', () => {
    for (const p of readPromises(repoRoot)) {
      if (p.kind !== 'reaches' || !kindsIn(p.file).includes('AgentCard')) continue;
      expect(p.after.flatMap(appliedFiles)).toContain('examples/demo-agent.yaml');
      const text = readFileSync(join(repoRoot, p.file), 'utf8');
      const urls = [...text.matchAll(/^\s+- url: (\S+)$/gm)].map((m) => m[1]!);
      expect(urls.length, p.file).toBeGreaterThan(0);
      for (const url of urls)
        expect(url).toMatch(/^http:\/\/demo-agent\.default\.svc\.cluster\.local:808[01]\b/);
      // A signing key the file names is made by the first line, not published in the file.
      expect(kindsIn(p.file)).not.toContain('Secret');
      for (const [, secret] of text.matchAll(/secretRef:\s+name: (\S+)/g))
        expect(p.after.join('; ')).toContain(`--secret ${secret}`);
    }
  });

  it("the demo agent runs the operator image of the chart's appVersion", () => {
    const chart = readFileSync(join(repoRoot, 'helm/agentcard-operator/Chart.yaml'), 'utf8');
    const appVersion = /^appVersion: '?([^'\s]+)'?$/m.exec(chart)![1];
    const values = readFileSync(join(repoRoot, 'helm/agentcard-operator/values.yaml'), 'utf8');
    const repository = /^ {2}repository: (\S+)$/m.exec(values)![1];
    const demo = readFileSync(join(repoRoot, 'examples/demo-agent.yaml'), 'utf8');
    expect(demo).toContain(`image: ${repository}:${appVersion}\n`);
    expect(demo).toMatch(/args: \[demo-agent\b/);
  });

  it('refuses a first line in neither form, naming the file', () => {
    expect(() => parsePromise('examples/x.yaml', '# An example\nkind: X\n')).toThrow(
      /examples\/x\.yaml: the first line must be/,
    );
    expect(() => parsePromise('examples/x.yaml', '# Reaches Green=True\n')).toThrow(/promises Green=True/);
    expect(parsePromise('e.yaml', '# Reaches Ready=True after: a; b -f c\n')).toEqual({
      file: 'e.yaml',
      kind: 'reaches',
      condition: 'Ready',
      after: ['a', 'b -f c'],
    });
  });
});
