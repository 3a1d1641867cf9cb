/**
 * docs/install.md's shell blocks are what test/e2e/install-doc.test.ts runs on the node cluster,
 * and the chart's install notes repeat its first AgentCard. Checked here, without a cluster: every
 * block is marked (run, or skipped with a reason), the path without a registry runs from the
 * build to the uninstall, and the notes' commands are the doc's, so neither drifts from what
 * the node test proves.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { chartDir, helm } from '../helm/chart.ts';
import { commandLines, installDocBlocks } from '../../support/install-doc.ts';
import { repoRoot } from '../../support/paths.ts';

describe('docs/install.md, as its node test reads it', () => {
  const blocks = installDocBlocks();

  it('marks every shell block: run, or skipped with a reason', () => {
    expect(blocks.length).toBeGreaterThan(10);
    for (const b of blocks.filter((x) => x.where === 'skip'))
      expect(b.reason, `line ${b.line}`).toMatch(/\w{3}/);
    expect(() => installDocBlocks('text\n\n```sh\nkubectl get pods\n```\n')).toThrow(/line|mark/);
  });

  it('runs the path without a registry from the images to the uninstall, in that order', () => {
    const run = blocks.filter((b) => b.where !== 'skip').flatMap((b) => commandLines(b.code));
    const at = (prefix: string) => {
      const i = run.findIndex((l) => l.startsWith(prefix));
      expect(i, prefix).toBeGreaterThanOrEqual(0);
      return i;
    };
    const order = [
      at('npm run images'),
      at('ctr -n k8s.io images import out/images/agentcard-operator.tar'),
      at('helm install agentcard-operator ./helm/agentcard-operator'),
      at('kubectl apply -f examples/demo-agent.yaml'),
      at('kubectl port-forward'),
      at('helm upgrade agentcard-operator ./helm/agentcard-operator'),
      at('helm uninstall agentcard-operator'),
      at('kubectl delete namespace agentcard-system'),
    ];
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(blocks.find((b) => b.code.includes('ctr -n k8s.io'))?.where).toBe('node');
  });

  it("the chart's install notes give the first AgentCard's commands of the doc", () => {
    const notes = readFileSync(
      join(repoRoot, 'helm', 'agentcard-operator', 'templates', 'NOTES.txt'),
      'utf8',
    );
    const step = notes.slice(notes.indexOf('2. Publish your first card'), notes.indexOf('3. Serve it'));
    const commands = step
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => /^(kubectl|agentcard) [a-z]+ /.test(l));
    expect(commands.length).toBeGreaterThanOrEqual(5);
    const first = blocks.find((b) => b.where === 'host' && b.code.includes('agentcard/support-agent'));
    expect(commandLines(first!.code).filter((l) => commands.includes(l))).toEqual(commands);
    expect(notes).not.toMatch(/raw\.githubusercontent|agentcard-minimal|recipe-agent/);
  });

  it('examples/card-server-ingress.yaml routes to the card server Service of the release the doc installs', async () => {
    const install = commandLines(
      blocks.find((b) => b.code.includes('helm install agentcard-operator ./'))!.code,
    )[0]!;
    const [, , release] = install.split(/\s+/);
    const rendered = await helm([
      'template',
      release!,
      chartDir,
      '--namespace',
      'agentcard-system',
      '--set',
      'cardServer.enabled=true',
    ]);
    expect(rendered.code, rendered.stderr).toBe(0);
    const services = parseAllDocuments(rendered.stdout)
      .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string } } | null)
      .filter((o) => o?.kind === 'Service')
      .map((o) => o!.metadata!.name!);
    const example = readFileSync(join(repoRoot, 'examples', 'card-server-ingress.yaml'), 'utf8');
    const backends = [...example.matchAll(/^\s+name: (\S+-card-server)$/gm)].map((m) => m[1]!);
    expect(backends.length).toBe(3);
    for (const name of backends) expect(services).toContain(name);
  });
});
