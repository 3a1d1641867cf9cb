/**
 * The chart's namespace-scoped mode (`watchNamespaces`, Roles instead of ClusterRoles) is
 * sufficient too: the same cycle as helm-rbac.test.ts, with no 403.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundRoles, cycle, setUp, tearDown } from './helm-rbac-harness.ts';

beforeAll(() => setUp({ namespaced: true }), 300_000);
afterAll(() => tearDown());

describe("the chart's RBAC in namespace-scoped mode", () => {
  it('binds Roles in the watched namespace and no cluster-wide read or write but the webhook', async () => {
    const roles = await boundRoles();
    const clusterRoles = roles.filter((r) => r.kind === 'ClusterRole');
    for (const role of clusterRoles) {
      const resources = ((await role.read()).rules ?? []).flatMap((r) => r.resources ?? []);
      expect(resources).toEqual(['mutatingwebhookconfigurations']);
    }
    expect(roles.filter((r) => r.kind === 'Role').length).toBeGreaterThanOrEqual(2);
  });

  it('is sufficient: a whole cycle with no 403', async () => {
    expect(await cycle()).toEqual({ ok: true });
  }, 90_000);
});
