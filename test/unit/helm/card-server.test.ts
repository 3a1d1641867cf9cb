// The chart's central card server and label adoption, as helm renders them.
/* eslint-disable @typescript-eslint/no-explicit-any -- rendered manifests are loosely typed JSON */
import { describe, expect, it } from 'vitest';
import { render, RELEASE, NAMESPACE } from './chart.ts';

const name = `${RELEASE}-agentcard-operator-card-server`;
const operator = `${RELEASE}-agentcard-operator`;

describe('the card server (cardServer.enabled)', async () => {
  const off = await render();
  const cluster = await render({ cardServer: { enabled: true } });
  const scoped = await render({ cardServer: { enabled: true }, watchNamespaces: ['team-a', 'team-b'] });

  it('is off by default', () => {
    expect(off.maybe('Deployment', name)).toBeUndefined();
  });

  it('runs `agentcard card-server` under its own ServiceAccount, restricted', () => {
    const d = cluster.one('Deployment', name) as any;
    const pod = d.spec.template.spec;
    expect(pod.serviceAccountName).toBe(name);
    const c = pod.containers[0];
    expect(c.args).toEqual(['card-server', '--port=8095', '--metrics-port=8096']);
    expect(c.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
    });
    expect(cluster.one('Service', name)).toMatchObject({
      spec: { ports: [{ port: 80, targetPort: 'http' }] },
    });
    expect(cluster.one('ServiceAccount', name)).toMatchObject({ metadata: { namespace: NAMESPACE } });
  });

  it('may only list and watch ConfigMaps: cluster-wide, or in each watched namespace', () => {
    expect((cluster.one('ClusterRole', name) as any).rules).toEqual([
      { apiGroups: [''], resources: ['configmaps'], verbs: ['list', 'watch'] },
    ]);
    const roles = scoped.all('Role').filter((r: any) => r.metadata.name === name) as any[];
    expect(roles.map((r) => r.metadata.namespace).sort()).toEqual(['team-a', 'team-b']);
    for (const r of roles)
      expect(r.rules).toEqual([{ apiGroups: [''], resources: ['configmaps'], verbs: ['list', 'watch'] }]);
    expect(scoped.maybe('ClusterRole', name)).toBeUndefined();
    const args = (scoped.one('Deployment', name) as any).spec.template.spec.containers[0].args;
    expect(args).toEqual(expect.arrayContaining(['--namespace=team-a', '--namespace=team-b']));
  });
});

describe('label adoption (adoption.enabled)', async () => {
  const off = await render();
  const on = await render({
    adoption: { enabled: true, namespaces: ['shop'], namespaceLabel: 'agentcard.dev/adoption=enabled' },
  });
  const args = (r: typeof on) => (r.one('Deployment', operator) as any).spec.template.spec.containers[0].args;
  const rules = (r: typeof on) => (r.one('ClusterRole', operator) as any).rules as any[];

  it('passes the allowed namespaces to the operator, and grants what adoption does', () => {
    expect(args(off).some((a: string) => a.startsWith('--adopt'))).toBe(false);
    expect(rules(off).some((r) => r.apiGroups.includes('apps'))).toBe(false);
    expect(args(on)).toEqual(
      expect.arrayContaining([
        '--adopt-namespace=shop',
        '--adopt-namespace-label=agentcard.dev/adoption=enabled',
      ]),
    );
    expect(rules(on)).toEqual(
      expect.arrayContaining([
        { apiGroups: ['apps'], resources: ['deployments', 'statefulsets'], verbs: ['list', 'watch'] },
        { apiGroups: ['agentcard.dev'], resources: ['agentcards'], verbs: ['create', 'patch', 'delete'] },
      ]),
    );
    expect((on.one('ClusterRole', `${operator}-adoption`) as any).rules).toEqual([
      { apiGroups: [''], resources: ['namespaces'], verbs: ['list', 'watch'] },
    ]);
  });
});
