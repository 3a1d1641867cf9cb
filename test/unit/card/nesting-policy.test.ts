// The generator of the chart's nesting policy (pure): which fields it walks, how deep, and that
// the committed template is its output. What the API server makes of the CEL is tested against
// the real kube-apiserver in test/integration/nesting-policy.test.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nestingPolicyYaml, specSchema } from '../../../operator/card/crd.ts';
import { MAX_NESTING_DEPTH } from '../../../operator/card/depth.ts';
import {
  freeFormFields,
  nestingRules,
  POLICY_TEMPLATE_FILE,
  withinLevels,
} from '../../../operator/card/nesting-policy.ts';
import { repoRoot } from '../../support/paths.ts';

const free = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
const obj = (properties: Record<string, unknown>) => ({ type: 'object', properties });
const arr = (items: unknown) => ({ type: 'array', items });

describe('the nesting policy generator', () => {
  it(`${POLICY_TEMPLATE_FILE} is up to date (run npm run gen:crd)`, () => {
    expect(readFileSync(join(repoRoot, POLICY_TEMPLATE_FILE), 'utf8')).toBe(nestingPolicyYaml());
  });

  it("finds the AgentCard's free-form field (extension params, 5 levels below spec) and the structured part stays well below the limit", () => {
    const { fields, structuredDepth } = freeFormFields(specSchema());
    expect(fields).toEqual([
      {
        steps: [
          { field: 'card' },
          { field: 'capabilities' },
          { field: 'extensions' },
          { items: true },
          { field: 'params' },
        ],
        depth: 5,
      },
    ]);
    expect(structuredDepth).toBeLessThan(MAX_NESTING_DEPTH);
  });

  it('gives a free-form field the levels the engine leaves it: the limit minus its own depth', () => {
    const [rule] = nestingRules(specSchema());
    expect(rule!.variable.name).toBe('card_capabilities_extensions_params');
    // One nested `all` per allowed level: 27 below params (5 levels down, limit 32).
    expect(rule!.variable.expression.match(/\.all\(/g)).toHaveLength(MAX_NESTING_DEPTH - 5);
    expect(rule!.validation.messageExpression).toBe(
      "'spec.card.capabilities.extensions[' + string(variables.card_capabilities_extensions_params.indexOf(false)) + '].params: nested more than 32 levels deep (objects and arrays, counted from spec; 27 inside this field); flatten it'",
    );
    expect(nestingRules(specSchema(), 10)[0]!.variable.expression.match(/\.all\(/g)).toHaveLength(5);
  });

  it('unrolls linearly: the expression grows with the limit, not with the input', () => {
    // Twice the levels, about twice the text (an exponential unrolling would square it).
    for (const n of [8, 16, 32]) {
      expect(withinLevels('v', 2 * n).length).toBeLessThan(2.2 * withinLevels('v', n).length);
    }
    expect(withinLevels('v', 27).length).toBeLessThan(3_000);
    expect(withinLevels('v', 0)).toBe('!(type(v) == map || type(v) == list)');
    expect(withinLevels('v', 1)).toBe(
      '(!(type(v) == map || type(v) == list) || (type(v) == map ? v.map(k0, v[k0]) : v).all(c0, !(type(c0) == map || type(c0) == list)))',
    );
  });

  it('guards absent fields with has(), and names a field outside any list by its path', () => {
    const [rule] = nestingRules(obj({ a: obj({ b: free }) }), 4);
    expect(rule!.variable.expression).toMatch(
      /^\(!has\(object\.spec\.a\) \|\| \(!has\(object\.spec\.a\.b\) \|\| /,
    );
    expect(rule!.validation).toEqual({
      expression: 'variables.a_b',
      messageExpression:
        "'spec.a.b: nested more than 4 levels deep (objects and arrays, counted from spec; 2 inside this field); flatten it'",
    });
  });

  it('refuses schemas it cannot express rather than generating a policy that misses a field', () => {
    expect(() => nestingRules(obj({ m: { type: 'object', additionalProperties: free } }))).toThrow(
      /spec\.m\{\}: free-form values inside a map are not supported/,
    );
    expect(() => nestingRules(obj({ l: arr(arr(obj({ p: free }))) }))).toThrow(
      /nested lists are not supported/,
    );
    expect(() => nestingRules(obj({ 'x-y': free }))).toThrow(/spec\.x-y: not a plain CEL identifier/);
    expect(() => nestingRules(obj({ a: obj({ b: obj({ c: obj({}) }) }) }), 3)).toThrow(
      /the CRD schema itself nests 3 levels, not below the limit 3/,
    );
  });
});
