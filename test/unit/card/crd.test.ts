/* eslint-disable @typescript-eslint/no-explicit-any -- the tests edit cards as loosely typed JSON */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { buildCrd, CRD_FILE, crdYaml, toStructural } from '../../../operator/card/crd.ts';
import { parseDuration } from '../../../operator/card/resource.ts';
import { repoRoot } from '../../support/paths.ts';
import { join } from 'node:path';

type Node = Record<string, any>;
const version = () => (buildCrd() as Node).spec.versions[0];
const root = () => version().schema.openAPIV3Schema as Node;

/** Visits every schema node with its path. */
function walk(node: Node, path: string, visit: (node: Node, path: string) => void): void {
  visit(node, path);
  for (const [name, child] of Object.entries(node.properties ?? {}))
    walk(child as Node, `${path}.${name}`, visit);
  if (node.items) walk(node.items, `${path}[]`, visit);
  if (node.additionalProperties && typeof node.additionalProperties === 'object') {
    walk(node.additionalProperties, `${path}{}`, visit);
  }
}

describe('the AgentCard CRD', () => {
  it(`${CRD_FILE} is up to date (run npm run gen:crd)`, () => {
    expect(readFileSync(join(repoRoot, CRD_FILE), 'utf8')).toBe(crdYaml());
  });

  it('has the names, scope, version and status subresource of the contract', () => {
    const crd = parse(crdYaml()) as Node;
    expect(crd.metadata.name).toBe('agentcards.agentcard.dev');
    expect(crd.spec.group).toBe('agentcard.dev');
    expect(crd.spec.names).toEqual({
      kind: 'AgentCard',
      listKind: 'AgentCardList',
      plural: 'agentcards',
      singular: 'agentcard',
      shortNames: ['acard'],
      categories: ['a2a'],
    });
    expect(crd.spec.scope).toBe('Namespaced');
    expect(version()).toMatchObject({
      name: 'v1alpha1',
      served: true,
      storage: true,
      subresources: { status: {} },
    });
  });

  it('has the printer columns of the contract, Message at priority 1', () => {
    expect(version().additionalPrinterColumns).toEqual([
      { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
      { name: 'Signed', type: 'string', jsonPath: '.status.conditions[?(@.type=="Signed")].status' },
      { name: 'Interfaces', type: 'string', jsonPath: '.status.reachableInterfaces' },
      // The published version: spec.card.version is absent when the card is adopted (spec.source).
      { name: 'Version', type: 'string', jsonPath: '.status.card.version' },
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      {
        name: 'Message',
        type: 'string',
        jsonPath: '.status.conditions[?(@.type=="Ready")].message',
        priority: 1,
      },
    ]);
  });

  it('is structural: a type everywhere, no $ref/anyOf/oneOf/allOf/not, no additionalProperties false', () => {
    walk(root(), '', (node, path) => {
      // int-or-string (a Service port) is the one node structural schemas allow without a type.
      if (node['x-kubernetes-int-or-string'] === true) {
        expect(path).toBe('.spec.source.service.port');
        expect(Object.keys(node).sort()).toEqual(['description', 'x-kubernetes-int-or-string']);
        return;
      }
      expect(node.type, path).toBeTypeOf('string');
      for (const banned of ['$ref', 'anyOf', 'oneOf', 'allOf', 'not', 'propertyNames', '$defs', 'const']) {
        expect(node, `${path} ${banned}`).not.toHaveProperty(banned);
      }
      expect(node.additionalProperties, path).not.toBe(false);
      if (node.properties) expect(node, path).not.toHaveProperty('additionalProperties');
    });
  });

  it('describes every field of spec and status (for kubectl explain)', () => {
    for (const part of ['spec', 'status']) {
      walk(root().properties[part], part, (node, path) => {
        if (path.endsWith('[]') || path.endsWith('{}')) return; // items of described lists/maps
        expect(node.description, path).toBeTypeOf('string');
        expect(node.description.length, path).toBeGreaterThan(5);
      });
    }
  });

  it('preserves unknown fields only in the free-form extension params', () => {
    const preserved: string[] = [];
    walk(root(), '', (node, path) => {
      if (node['x-kubernetes-preserve-unknown-fields']) preserved.push(path);
    });
    expect(preserved).toEqual(['.spec.card.capabilities.extensions[].params']);
  });

  it('carries the CEL rules: unions, unique skill ids, non-empty interfaces, minimum probe interval', () => {
    const rules: Record<string, string[]> = {};
    walk(root(), '', (node, path) => {
      if (node['x-kubernetes-validations'])
        rules[path] = node['x-kubernetes-validations'].map((r: Node) => r.rule);
    });
    expect(Object.keys(rules).sort()).toEqual(
      [
        '.spec',
        '.spec.source',
        '.spec.source.url',
        '.spec.source.path',
        '.spec.source.interval',
        '.spec.remove[]',
        '.spec.card.supportedInterfaces',
        '.spec.card.skills',
        '.spec.card.securitySchemes{}',
        '.spec.card.securitySchemes{}.oauth2SecurityScheme.flows',
        '.spec.probe.interval',
        '.spec.signing.keys',
        '.spec.signing.keys[]',
        '.spec.serving',
        '.spec.serving.hosts',
        '.spec.serving.hosts[]',
        '.spec.audiences',
        '.spec.audiences[]',
        '.spec.audiences[].name',
        '.spec.audiences[].hosts',
        '.spec.audiences[].hosts[]',
        '.spec.audiences[].baseURL',
        '.spec.audiences[].supportedInterfaces',
        '.spec.audiences[].securitySchemes{}',
        '.spec.audiences[].securitySchemes{}.oauth2SecurityScheme.flows',
      ].sort(),
    );
    expect(rules['.spec.card.supportedInterfaces']).toEqual(['size(self) > 0']);
    expect(rules['.spec.card.skills']).toEqual(['self.all(s, self.exists_one(t, t.id == s.id))']);
    expect(rules['.spec.card.securitySchemes{}']![0]).toBe(
      '(has(self.apiKeySecurityScheme) ? 1 : 0) + (has(self.httpAuthSecurityScheme) ? 1 : 0) + (has(self.oauth2SecurityScheme) ? 1 : 0) + (has(self.openIdConnectSecurityScheme) ? 1 : 0) + (has(self.mtlsSecurityScheme) ? 1 : 0) == 1',
    );
    expect(rules['.spec.probe.interval']).toEqual(["duration(self) >= duration('10s')"]);
    expect(rules['.spec.signing.keys[]']).toEqual([
      '(has(self.secretRef) ? 1 : 0) + (has(self.certificate) ? 1 : 0) + (has(self.issuerRef) ? 1 : 0) == 1',
    ]);
    // One Certificate per card: at most one key names an issuer.
    expect(rules['.spec.signing.keys']).toEqual(['self.filter(k, has(k.issuerRef)).size() <= 1']);
    // A written card is complete; an adopted one (spec.source) may leave spec.card out.
    expect(rules['.spec']![0]).toMatch(
      /^has\(self\.source\) \|\| \(has\(self\.card\) && has\(self\.card\.name\)/,
    );
    expect(rules['.spec']![1]).toBe('!has(self.remove) || has(self.source)');
    expect(rules['.spec.source']).toEqual([
      'has(self.url) != has(self.service)',
      '!(has(self.path) && has(self.url))',
    ]);
    expect(rules['.spec.source.interval']).toEqual(["duration(self) >= duration('10s')"]);
    // A host belongs to at most one audience, compared case-insensitively.
    expect(rules['.spec.audiences']![0]).toContain('lowerAscii()');
    expect(rules['.spec.audiences[]']).toEqual(['!(has(self.baseURL) && has(self.supportedInterfaces))']);
    // Default-audience hosts are for the central card server only.
    expect(rules['.spec.serving']).toEqual([
      "!has(self.hosts) || (has(self.server) && self.server == 'Central')",
    ]);
  });

  it('bounds what the CEL rules iterate over (cost estimation)', () => {
    const card = root().properties.spec.properties.card;
    expect(card.properties.skills.maxItems).toBeGreaterThan(0);
    expect(card.properties.skills.items.properties.id.maxLength).toBeGreaterThan(0);
    expect(card.properties.securitySchemes.maxProperties).toBeGreaterThan(0);
    expect(card.properties.supportedInterfaces.maxItems).toBeGreaterThan(0);
    const audiences = root().properties.spec.properties.audiences;
    expect(audiences.maxItems).toBeGreaterThan(0);
    expect(audiences.items.properties.hosts.maxItems).toBeGreaterThan(0);
    expect(audiences.items.properties.hosts.items.maxLength).toBeGreaterThan(0);
    expect(audiences['x-kubernetes-list-map-keys']).toEqual(['name']);
  });

  it('has the defaults of the contract; spec.card is required by CEL unless spec.source is set', () => {
    const spec = root().properties.spec;
    expect(spec.required).toBeUndefined();
    expect(spec.properties.card.required).toBeUndefined();
    expect(spec.properties.source.properties.interval.default).toBe('5m');
    expect(spec.properties.serving.properties.cacheMaxAgeSeconds).toMatchObject({
      default: 300,
      minimum: 0,
      maximum: 86400,
    });
    expect(spec.properties.probe.properties.enabled.default).toBe(true);
    expect(spec.properties.probe.properties.interval.default).toBe('60s');
    expect(spec.properties.probe.properties.timeout.default).toBe('5s');
    expect(root().properties.status.properties.conditions['x-kubernetes-list-type']).toBe('map');
  });

  it('the converter refuses JSON Schema it cannot express structurally', () => {
    expect(() => toStructural({ anyOf: [{ type: 'string' }, { type: 'number' }] })).toThrow(/anyOf/);
    expect(() => toStructural({ description: 'no type' })).toThrow(/no type/);
    expect(toStructural({ type: 'string', const: 'x' })).toEqual({ type: 'string', enum: ['x'] });
  });
});

describe('parseDuration', () => {
  it('reads Go-style durations', () => {
    expect(parseDuration('60s')).toBe(60_000);
    expect(parseDuration('5m')).toBe(300_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('1.5s')).toBe(1500);
  });
  it('rejects anything else', () => {
    for (const bad of ['', '60', 's', '5 m', '-5s', '1d', '10sec'])
      expect(() => parseDuration(bad), bad).toThrow(/invalid duration/);
  });
});
