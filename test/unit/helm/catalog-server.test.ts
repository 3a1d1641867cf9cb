// The chart's catalog server and catalog RBAC, as helm renders them.
/* eslint-disable @typescript-eslint/no-explicit-any -- rendered manifests are loosely typed JSON */
import { describe, expect, it } from 'vitest';
import { helmWithValues, render, RELEASE, NAMESPACE, chartDir } from './chart.ts';

const name = `${RELEASE}-agentcard-operator-catalog`;

describe('the catalog server (catalogServer.enabled)', async () => {
  const off = await render();
  const on = await render({
    catalogServer: {
      enabled: true,
      catalog: 'public',
      partitions: 3,
      ingress: { enabled: true, className: 'nginx', host: 'agents.example.com' },
      httpRoute: { enabled: true, parentRefs: [{ name: 'gw' }], hostnames: ['agents.example.com'] },
    },
  });

  it('is off by default', () => {
    expect(off.maybe('Deployment', name)).toBeUndefined();
  });

  it('runs the well-known server over the catalog ConfigMaps, with no token and a read-only root', () => {
    const d = on.one('Deployment', name) as any;
    expect(d.spec.replicas).toBe(2);
    const pod = d.spec.template.spec;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    const c = pod.containers[0];
    expect(c.args).toEqual(['sidecar', '--dir=/catalog', '--port=8095', '--metrics-port=8096']);
    expect(c.securityContext).toMatchObject({
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(
      pod.volumes[0].projected.sources.map((s: any) => [s.configMap.name, s.configMap.optional]),
    ).toEqual([
      ['public-cluster-ai-catalog', true],
      ['public-cluster-ai-catalog-p0', true],
      ['public-cluster-ai-catalog-p1', true],
      ['public-cluster-ai-catalog-p2', true],
    ]);
  });

  it('is Ready once it serves, before its catalog exists (helm install --wait completes)', () => {
    // The ClusterAgentCatalog needs the CRD this release installs: a readiness that waited for
    // the catalog (/readyz) would fail every first `helm install --wait`.
    const c = (on.one('Deployment', name) as any).spec.template.spec.containers[0];
    expect(c.readinessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    // A slow start is not a restart loop: liveness counts once the startup probe passed.
    expect(c.startupProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(c.startupProbe.periodSeconds * c.startupProbe.failureThreshold).toBeGreaterThanOrEqual(120);
  });

  it('has a PDB, a Service, and the Ingress and HTTPRoute asked for', () => {
    expect((on.one('PodDisruptionBudget', name) as any).spec.minAvailable).toBe(1);
    expect((on.one('Service', name) as any).spec.ports[0]).toMatchObject({ port: 80, targetPort: 'http' });
    const ingress = on.one('Ingress', name) as any;
    expect(ingress.spec.ingressClassName).toBe('nginx');
    expect(ingress.spec.rules[0].host).toBe('agents.example.com');
    const route = on.one('HTTPRoute', name) as any;
    expect(route.spec.parentRefs).toEqual([{ name: 'gw' }]);
    expect(route.spec.rules[0].backendRefs[0]).toEqual({ name, port: 80 });
  });

  it('refuses to render without the ClusterAgentCatalog to serve', async () => {
    const r = await helmWithValues(['template', RELEASE, chartDir, '--namespace', NAMESPACE], {
      catalogServer: { enabled: true },
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/catalogServer\/catalog|catalogServer\.catalog/);
  });
});

describe('catalog RBAC and flags', async () => {
  const cluster = await render();
  const namespaced = await render({ watchNamespaces: ['team-a'] });
  const off = await render({ catalogs: { enabled: false } });
  const args = (r: Awaited<ReturnType<typeof render>>) =>
    (r.one('Deployment', `${RELEASE}-agentcard-operator`) as any).spec.template.spec.containers[0]
      .args as string[];

  it('reconciles ClusterAgentCatalogs only when every namespace is watched, and binds their ClusterRole then', () => {
    expect(args(cluster)).toContain('--cluster-catalogs');
    expect(cluster.maybe('ClusterRole', `${RELEASE}-agentcard-operator-cluster-catalogs`)).toBeDefined();
    expect(args(namespaced)).not.toContain('--cluster-catalogs');
    expect(namespaced.maybe('ClusterRole', `${RELEASE}-agentcard-operator-cluster-catalogs`)).toBeUndefined();
    const role = namespaced.one('Role', `${RELEASE}-agentcard-operator`) as any;
    expect(role.rules.flatMap((r: any) => r.resources)).toEqual(
      expect.arrayContaining(['agentcatalogs', 'agentcatalogs/status']),
    );
  });

  it('catalogs.enabled=false passes --no-catalogs and grants nothing for catalogs', () => {
    expect(args(off)).toContain('--no-catalogs');
    const role = off.one('ClusterRole', `${RELEASE}-agentcard-operator`) as any;
    expect(role.rules.flatMap((r: any) => r.resources)).not.toContain('agentcatalogs');
    expect(off.maybe('ClusterRole', `${RELEASE}-agentcard-operator-cluster-catalogs`)).toBeUndefined();
  });
});
