/**
 * The chart's RBAC (cluster-wide mode) is sufficient and minimal: see helm-rbac-harness.ts for
 * the cycle the operator runs on the chart's ServiceAccount token.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundRoles, cycle, narrowings, setUp, tearDown, writeRules } from './helm-rbac-harness.ts';

beforeAll(() => setUp(), 300_000);
afterAll(() => tearDown());

describe("the chart's RBAC, with the operator out of cluster on the ServiceAccount's token", () => {
  it('is sufficient: a whole cycle with no 403', async () => {
    const result = await cycle();
    expect(result).toEqual({ ok: true });
  }, 90_000);

  it('is minimal: removing any one verb, resource or API group of any rule breaks the cycle', async () => {
    // Only a cycle that passes with every rule can tell which rules it needs.
    expect(await cycle(), 'the whole cycle must pass before rules are taken away').toEqual({ ok: true });
    const roles = await boundRoles();
    expect(roles.length).toBeGreaterThanOrEqual(2);
    const unneeded: string[] = [];
    for (const role of roles) {
      const original = (await role.read()).rules ?? [];
      for (let i = 0; i < original.length; i++) {
        for (const { what, rule } of narrowings(original[i]!)) {
          const rules = original.flatMap((r, j) => (j !== i ? [r] : rule ? [rule] : []));
          await writeRules(role, rules);
          try {
            const result = await cycle();
            if (result.ok) unneeded.push(`${role.kind} ${role.name}: ${what}`);
            // What broke without it, for whoever reads the test log.
            process.stdout.write(
              `without ${what}: ${result.ok ? 'the cycle still passes' : result.reason}\n`,
            );
          } finally {
            await writeRules(role, original);
          }
        }
      }
    }
    expect(unneeded).toEqual([]);
  }, 1_800_000);
});
