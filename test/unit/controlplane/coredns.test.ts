/**
 * The node's CoreDNS is built with only the plugins its Corefile uses (test/node/coredns/main.go),
 * so a directive added to the Corefile without being compiled in makes CoreDNS refuse the whole
 * Corefile (`Unknown directive`) and every DNS lookup on the node fail. This keeps the two lists
 * equal without starting the node.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { coreDnsModuleDir } from '../../node/build.ts';
import { coreDnsManifests } from '../../node/control.ts';

/** The directive names of a Corefile's server blocks (the first word of each top-level line). */
function corefileDirectives(corefile: string): string[] {
  const names = new Set<string>();
  let depth = 0;
  for (const line of corefile.split('\n')) {
    const words = line.trim().split(/\s+/);
    if (depth === 1 && words[0] && words[0] !== '}') names.add(words[0]);
    depth += (line.match(/{/g) ?? []).length - (line.match(/}/g) ?? []).length;
  }
  return [...names];
}

const mainGo = readFileSync(join(coreDnsModuleDir, 'main.go'), 'utf8');

/** The `directives` list main.go hands to dnsserver.SetDirectives. */
function compiledDirectives(): string[] {
  const block = /var directives = \[\]string\{([^}]*)\}/.exec(mainGo);
  if (!block) throw new Error('test/node/coredns/main.go has no `var directives = []string{...}`');
  return [...block[1]!.matchAll(/"([^"]+)"/g)].map((m) => m[1]!);
}

function corefile(): string {
  const configMap = parseAllDocuments(coreDnsManifests())
    .map((d) => d.toJS() as { kind: string; data?: { Corefile?: string } })
    .find((d) => d.kind === 'ConfigMap');
  if (!configMap?.data?.Corefile) throw new Error('coreDnsManifests() has no Corefile ConfigMap');
  return configMap.data.Corefile;
}

describe("the node's CoreDNS build", () => {
  it('reads directives from a Corefile, nested blocks left out', () => {
    expect(
      corefileDirectives('.:53 {\n  errors\n  kubernetes a {\n    pods insecure\n  }\n  cache 30\n}\n'),
    ).toEqual(['errors', 'kubernetes', 'cache']);
  });

  it("compiles in exactly the Corefile's directives, each plugin imported", () => {
    const used = corefileDirectives(corefile());
    // The probes of the CoreDNS Deployment need these two.
    expect(used).toEqual(expect.arrayContaining(['health', 'ready', 'kubernetes']));
    expect([...compiledDirectives()].sort()).toEqual([...used].sort());
    for (const name of used) {
      expect(mainGo).toContain(`_ "github.com/coredns/coredns/plugin/${name}"`);
    }
  });
});
