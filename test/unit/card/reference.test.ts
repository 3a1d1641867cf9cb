/* eslint-disable @typescript-eslint/no-explicit-any -- the tests walk the CRD schema as loose JSON */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildCrd } from '../../../operator/card/crd.ts';
import {
  REFERENCE_FILE,
  formattedReference,
  referenceMarkdown,
  slug,
} from '../../../operator/card/reference.ts';
import { repoRoot } from '../../support/paths.ts';

type Node = Record<string, any>;

/** Every field path of spec and status, as the reference names its sections' rows. */
function fieldPaths(node: Node, path: string, out: string[]): string[] {
  for (const [name, child] of Object.entries((node.properties ?? {}) as Record<string, Node>)) {
    out.push(`${path}.${name}`);
    fieldPaths(child, `${path}.${name}`, out);
  }
  if (node.items) fieldPaths(node.items, `${path}[]`, out);
  if (node.additionalProperties && typeof node.additionalProperties === 'object')
    fieldPaths(node.additionalProperties, `${path}{}`, out);
  return out;
}

/** The rows of each section of the reference: section path -> field names. */
function sections(markdown: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of markdown.split('\n')) {
    const heading = /^## `([^`]+)`$/.exec(line);
    if (heading) out.set(heading[1]!, (current = []));
    const row = /^\| `([^`]+)` +\|/.exec(line);
    if (row && current) current.push(row[1]!);
  }
  return out;
}

describe('the API reference', () => {
  it(`${REFERENCE_FILE} is up to date (run npm run gen:docs)`, async () => {
    expect(readFileSync(join(repoRoot, REFERENCE_FILE), 'utf8')).toBe(await formattedReference());
  });

  it('has one row for every field of spec and status, in the section of its parent', () => {
    const root = (buildCrd() as Node).spec.versions[0].schema.openAPIV3Schema as Node;
    const bySection = sections(referenceMarkdown());
    const paths = fieldPaths(root, 'AgentCard', []);
    expect(paths.length).toBeGreaterThan(100);
    for (const path of paths) {
      const cut = path.lastIndexOf('.');
      const [parent, name] = [path.slice(0, cut), path.slice(cut + 1)];
      expect(bySection.get(parent), `section ${parent} for ${path}`).toContain(name);
    }
  });

  it('gives type, required, default and validation from the schema', () => {
    const text = referenceMarkdown();
    const row = (section: string, field: string) => {
      const body = text.split(`## \`${section}\``)[1]!.split('\n## ')[0]!;
      return body.split('\n').find((l) => l.startsWith(`| \`${field}\` `))!;
    };
    expect(row('AgentCard.spec', 'card')).toMatch(/\| \[object\]\(#agentcardspeccard\) \| no \|/);
    expect(row('AgentCard.spec.source', 'interval')).toContain('| no | `5m` |');
    expect(row('AgentCard.spec.probe', 'interval')).toContain('| no | `60s` |');
    expect(row('AgentCard.spec.probe', 'interval')).toContain("CEL `duration(self) >= duration('10s')`");
    expect(row('AgentCard.spec.serving', 'cacheMaxAgeSeconds')).toContain('value 0 to 86400');
    expect(row('AgentCard.spec.signing.keys[]', 'alg')).toContain('one of `ES256`, `ES384`, `EdDSA`');
    expect(row('AgentCard.status', 'conditions')).toContain('a map-list keyed by `type`');
    expect(row('AgentCard.spec.card', 'securitySchemes')).toContain(
      'map of string to [object](#agentcardspeccardsecurityschemes)',
    );
  });

  it('links only to sections it has', () => {
    const text = referenceMarkdown();
    const anchors = new Set([...sections(text).keys()].map(slug));
    const links = [...text.matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThan(30);
    for (const link of links) expect(anchors, link).toContain(link);
  });

  it('GitHub-style anchors: lower case, punctuation dropped', () => {
    expect(slug('AgentCard.spec.card.skills[]')).toBe('agentcardspeccardskills');
    expect(slug('Webhook TLS')).toBe('webhook-tls');
  });
});
