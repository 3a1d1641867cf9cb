/**
 * The Argo CD health checks for AgentCard, AgentCatalog and ClusterAgentCatalog
 * (examples/gitops/argocd/argocd-cm-health.yaml, shown in docs/install.md), run in a real Lua VM
 * (fengari) the way Argo CD runs them: the script is a function body with a global `obj`
 * returning `{status, message}`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { lauxlib, lua, lualib, to_luastring } from 'fengari';
import { parse } from 'yaml';
import { repoRoot } from '../../support/paths.ts';

const KINDS = ['AgentCard', 'AgentCatalog', 'ClusterAgentCatalog'] as const;
type Kind = (typeof KINDS)[number];
const key = (kind: Kind) => `resource.customizations.health.agentcard.dev_${kind}`;

function exampleData(): Record<string, string> {
  const text = readFileSync(join(repoRoot, 'examples/gitops/argocd/argocd-cm-health.yaml'), 'utf8');
  return (parse(text) as { data: Record<string, string> }).data;
}

function docsData(): Record<string, string> {
  const doc = readFileSync(join(repoRoot, 'docs/install.md'), 'utf8');
  const block = /<!-- argocd-health:start -->\s*```yaml\n([\s\S]*?)```\s*<!-- argocd-health:end -->/.exec(
    doc,
  );
  if (!block) throw new Error('docs/install.md has no argocd-health block');
  return (parse(block[1]!) as { data: Record<string, string> }).data;
}

function healthScript(kind: Kind = 'AgentCard'): string {
  const script = exampleData()[key(kind)];
  if (!script) throw new Error(`argocd-cm-health.yaml has no health customization for agentcard.dev_${kind}`);
  return script;
}

describe('the Argo CD health customizations', () => {
  it('cover the three kinds, with one script', () => {
    expect(Object.keys(exampleData()).sort()).toEqual(KINDS.map(key).sort());
    for (const kind of KINDS) expect(healthScript(kind)).toBe(healthScript('AgentCard'));
  });

  it('are the ones docs/install.md shows', () => {
    expect(docsData()).toEqual(exampleData());
  });
});

/** A JSON value as a Lua table constructor (arrays 1-based, so ipairs works; null -> nil). */
function toLua(value: unknown): string {
  if (value === null || value === undefined) return 'nil';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `{${value.map(toLua).join(', ')}}`;
  const entries = Object.entries(value as Record<string, unknown>).filter(
    ([, v]) => v !== null && v !== undefined,
  );
  return `{${entries.map(([k, v]) => `[${JSON.stringify(k)}] = ${toLua(v)}`).join(', ')}}`;
}

function health(obj: unknown, kind: Kind = 'AgentCard'): { status: string; message: string } {
  const L = lauxlib.luaL_newstate();
  lualib.luaL_openlibs(L);
  try {
    const code = `obj = ${toLua(obj)}\nlocal hs = (function()\n${healthScript(kind)}\nend)()\nreturn hs.status, hs.message`;
    if (lauxlib.luaL_dostring(L, to_luastring(code)) !== lua.LUA_OK) {
      throw new Error(`Lua error: ${lua.lua_tojsstring(L, -1)}`);
    }
    return { status: lua.lua_tojsstring(L, -2) ?? '', message: lua.lua_tojsstring(L, -1) ?? '' };
  } finally {
    lua.lua_close(L);
  }
}

type Condition = { type: string; status: 'True' | 'False' | 'Unknown'; reason?: string; message?: string };
function card(generation: number, status?: { observedGeneration?: number; conditions?: Condition[] }) {
  return {
    apiVersion: 'agentcard.dev/v1alpha1',
    kind: 'AgentCard',
    metadata: { name: 'a', generation },
    status,
  };
}
const ok = (type: string): Condition => ({ type, status: 'True', reason: 'Ok', message: `${type} ok` });

describe('Argo CD health check for AgentCard (docs/install.md)', () => {
  it('is Progressing before the operator wrote any status', () => {
    expect(health(card(1))).toEqual({
      status: 'Progressing',
      message: 'Waiting for the operator to reconcile',
    });
  });

  it('is Progressing while the status describes an older generation', () => {
    const h = health(card(3, { observedGeneration: 2, conditions: [ok('Ready')] }));
    expect(h.status).toBe('Progressing');
    expect(h.message).toContain('generation 3');
  });

  it('is Healthy when Ready is True for the current generation', () => {
    const conditions = ['Accepted', 'Signed', 'Published', 'InterfacesReachable', 'Ready'].map(ok);
    expect(health(card(2, { observedGeneration: 2, conditions }))).toEqual({
      status: 'Healthy',
      message: 'Ready ok',
    });
  });

  it('is Degraded, naming the failing condition, for an invalid spec or a missing key', () => {
    const h = health(
      card(1, {
        observedGeneration: 1,
        conditions: [
          ok('Accepted'),
          {
            type: 'Signed',
            status: 'False',
            reason: 'SigningKeyNotFound',
            message: 'Secret demo-key not found',
          },
          { type: 'Ready', status: 'False', reason: 'NotSigned', message: 'not signed' },
        ],
      }),
    );
    expect(h).toEqual({ status: 'Degraded', message: 'Signed: Secret demo-key not found' });
  });

  it('is Progressing while the interfaces have not been probed yet', () => {
    const h = health(
      card(1, {
        observedGeneration: 1,
        conditions: [
          ok('Accepted'),
          ok('Signed'),
          ok('Published'),
          {
            type: 'InterfacesReachable',
            status: 'Unknown',
            reason: 'NotProbed',
            message: 'waiting for the first probe',
          },
          {
            type: 'Ready',
            status: 'False',
            reason: 'InterfacesUnknown',
            message: 'interfaces not probed yet',
          },
        ],
      }),
    );
    expect(h).toEqual({ status: 'Progressing', message: 'InterfacesReachable: waiting for the first probe' });
  });

  it('does not count an unsigned card (no spec.signing) as a failure', () => {
    const unsigned: Condition = {
      type: 'Signed',
      status: 'False',
      reason: 'SigningNotConfigured',
      message: 'unsigned (no spec.signing)',
    };
    const pending: Condition = { type: 'InterfacesReachable', status: 'Unknown', message: 'not probed yet' };
    const notReady: Condition = {
      type: 'Ready',
      status: 'False',
      reason: 'InterfacesUnknown',
      message: 'waiting',
    };
    expect(
      health(
        card(1, {
          observedGeneration: 1,
          conditions: [ok('Accepted'), unsigned, ok('Published'), pending, notReady],
        }),
      ),
    ).toEqual({ status: 'Progressing', message: 'InterfacesReachable: not probed yet' });
    expect(
      health(
        card(1, {
          observedGeneration: 1,
          conditions: [ok('Accepted'), unsigned, ok('Published'), ok('Ready')],
        }),
      ),
    ).toEqual({ status: 'Healthy', message: 'Ready ok' });
  });

  it('is Degraded when an interface does not speak its binding', () => {
    const h = health(
      card(1, {
        observedGeneration: 1,
        conditions: [
          ok('Accepted'),
          ok('Signed'),
          ok('Published'),
          { type: 'InterfacesReachable', status: 'False', reason: 'Unreachable', message: '2/3 reachable' },
          { type: 'Ready', status: 'False', reason: 'InterfacesUnreachable', message: '2/3 reachable' },
        ],
      }),
    );
    expect(h).toEqual({ status: 'Degraded', message: 'InterfacesReachable: 2/3 reachable' });
  });
});

function catalog(kind: 'AgentCatalog' | 'ClusterAgentCatalog', generation: number, conditions?: Condition[]) {
  return {
    apiVersion: 'agentcard.dev/v1alpha1',
    kind,
    metadata: { name: 'c', generation },
    status: conditions ? { observedGeneration: generation, conditions } : undefined,
  };
}

describe.each(['AgentCatalog', 'ClusterAgentCatalog'] as const)('Argo CD health check for %s', (kind) => {
  it('is Progressing before the operator wrote any status', () => {
    expect(health(catalog(kind, 1), kind).status).toBe('Progressing');
  });

  it('is Healthy when published and Ready, signed or not', () => {
    const unsigned: Condition = {
      type: 'Signed',
      status: 'False',
      reason: 'SigningNotConfigured',
      message: 'unsigned (no spec.signing)',
    };
    expect(health(catalog(kind, 4, [ok('Accepted'), unsigned, ok('Published'), ok('Ready')]), kind)).toEqual({
      status: 'Healthy',
      message: 'Ready ok',
    });
  });

  it('is Degraded, naming the condition, when the catalog is too large to publish', () => {
    const h = health(
      catalog(kind, 2, [
        ok('Accepted'),
        ok('Signed'),
        { type: 'Published', status: 'False', reason: 'CatalogTooLarge', message: 'over 64 partitions' },
        { type: 'Ready', status: 'False', reason: 'CatalogTooLarge', message: 'not published' },
      ]),
      kind,
    );
    expect(h).toEqual({ status: 'Degraded', message: 'Published: over 64 partitions' });
  });

  it('is Progressing while the status describes an older generation', () => {
    const obj = catalog(kind, 3, [ok('Ready')]);
    obj.status!.observedGeneration = 2;
    expect(health(obj, kind)).toEqual({
      status: 'Progressing',
      message: 'Waiting for the operator to observe generation 3',
    });
  });
});
