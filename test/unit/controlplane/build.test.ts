import { describe, expect, it } from 'vitest';
import { buildKey, kubernetesVersion, versionLdflags } from '../../controlplane/build.ts';
import { cacheRoot } from '../../controlplane/paths.ts';

describe('control plane build inputs', () => {
  it('reads the pinned Kubernetes release from go.mod', () => {
    const goMod = 'module x\n\nrequire (\n\tk8s.io/api v0.36.3\n\tk8s.io/kubernetes v1.36.3 // indirect\n)\n';
    expect(kubernetesVersion(goMod)).toBe('v1.36.3');
    expect(() => kubernetesVersion('module x\n')).toThrow(/does not require k8s.io\/kubernetes/);
  });

  it('stamps the version the way the release build does', () => {
    const flags = versionLdflags('v1.36.3');
    expect(flags).toContain('-X k8s.io/component-base/version.gitVersion=v1.36.3');
    expect(flags).toContain('-X k8s.io/component-base/version.gitMajor=1');
    expect(flags).toContain('-X k8s.io/component-base/version.gitMinor=36');
  });

  it('keys the cache by file contents and flags, not by file order', () => {
    const a = { name: 'go.mod', content: 'one' };
    const b = { name: 'go.sum', content: 'two' };
    const key = buildKey([a, b], '-s');
    expect(key).toMatch(/^[0-9a-f]{12}$/);
    expect(buildKey([b, a], '-s')).toBe(key);
    expect(buildKey([a, { ...b, content: 'three' }], '-s')).not.toBe(key);
    expect(buildKey([a, b], '-w')).not.toBe(key);
    // Moving bytes between a name and its content changes the key.
    expect(buildKey([{ name: 'go.modo', content: 'ne' }, b], '-s')).not.toBe(key);
  });

  it('puts the cache under XDG_CACHE_HOME when set, else ~/.cache', () => {
    expect(cacheRoot({ XDG_CACHE_HOME: '/var/cache/me' })).toBe('/var/cache/me/agentcard-operator');
    expect(cacheRoot({})).toMatch(/\/\.cache\/agentcard-operator$/);
  });
});
