/**
 * The operator loads client-node's KubeConfig without the generated API clients (slim-load.ts).
 * These tests fail if client-node's config.js starts needing more from its generated barrel, if
 * the stand-in module hands config.js different objects, or if the hook stops keeping the
 * generated APIs out of the process.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import * as barrel from '@kubernetes/client-node/dist/gen/index.js';
import * as deps from '../../../operator/kube/client-node-config-deps.ts';
import { BARREL_SPECIFIER } from '../../../operator/kube/slim-load.ts';
import { tempDir } from '../../support/cli.ts';

const root = resolve(import.meta.dirname, '../../..');
const configJs = createRequire(join(root, 'package.json')).resolve('@kubernetes/client-node/dist/config.js');
const { dir, cleanup } = tempDir();
afterAll(cleanup);

describe('loading KubeConfig without the generated API clients', () => {
  it('gives config.js every binding it imports from the barrel, as the very same objects', () => {
    const source = readFileSync(configJs, 'utf8');
    const fromBarrel = [...source.matchAll(/import\s*\{([^}]*)\}\s*from\s*'([^']+)'/g)]
      .filter((m) => m[2] === BARREL_SPECIFIER)
      .flatMap((m) =>
        m[1]!
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      );
    expect(fromBarrel.length).toBeGreaterThan(0);
    // No `import * as` or re-export of the barrel either: those would need all of it.
    expect(source).not.toMatch(
      new RegExp(`(\\*|export)[^;]*from '${BARREL_SPECIFIER.replace(/\./g, '\\.')}'`),
    );
    expect(Object.keys(deps).sort()).toEqual([...fromBarrel].sort());
    for (const name of fromBarrel) {
      expect(deps[name as keyof typeof deps]).toBe(barrel[name as keyof typeof barrel]);
    }
  });

  it('keeps the generated APIs out of the operator process, and KubeConfig still works', () => {
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]',
        'users: [{name: u, user: {token: t}}]',
        'contexts: [{name: x, context: {cluster: c, user: u, namespace: team-a}}]',
        'current-context: x',
      ].join('\n'),
    );
    // Records every module URL the process loads, then loads the operator's kubeconfig path.
    const script = (slim: boolean) => `
      import { registerHooks } from 'node:module';
      const loaded = [];
      registerHooks({ load(url, ctx, next) { loaded.push(url); return next(url, ctx); } });
      ${slim ? `(await import(${JSON.stringify(join(root, 'operator/kube/slim-load.ts'))})).loadKubeConfigWithoutGeneratedApis();` : ''}
      const { loadKubeConfig, contextNamespace } = await import(${JSON.stringify(join(root, 'operator/kube/config.ts'))});
      const { KubeClient } = await import(${JSON.stringify(join(root, 'operator/kube/client.ts'))});
      const kc = loadKubeConfig({ kubeconfig: ${JSON.stringify(kubeconfig)} });
      const client = new KubeClient(kc);
      console.log(JSON.stringify({
        url: client.url('/api/v1/namespaces', { limit: 1 }),
        namespace: contextNamespace(kc),
        generated: loaded.filter((u) => u.includes('/client-node/dist/gen/apis/') || u.endsWith('/client-node/dist/gen/index.js')).length,
      }));`;
    const run = (slim: boolean) => {
      const out = spawnSync(process.execPath, ['--input-type=module', '-e', script(slim)], {
        cwd: root,
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(out.stderr).toBe('');
      return JSON.parse(out.stdout) as { url: string; namespace: string; generated: number };
    };
    const slim = run(true);
    expect(slim).toEqual({
      url: 'https://127.0.0.1:6443/api/v1/namespaces?limit=1',
      namespace: 'team-a',
      generated: 0,
    });
    // Without the hook the same imports load the generated code (so the check above can fail).
    expect(run(false).generated).toBeGreaterThan(0);
  });
});
