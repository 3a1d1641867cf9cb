// The chart's nesting policy on the real API server: the ValidatingAdmissionPolicy that Helm
// renders from templates/nesting-policy.yaml refuses an over-deep AgentCard at `kubectl apply`,
// with the field and the limit in kubectl's error, at exactly the engine's boundary; a normal
// card passes; an AgentCard the policy cannot evaluate (its CEL cost limit) is admitted
// (failurePolicy Ignore) and the controller reports InvalidSpec. The binding is narrowed to this
// test's namespace (nestingPolicy.namespaceSelector): other tests share the control plane and
// store deep cards on purpose.
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { validateSpec } from '../../operator/card/validate.ts';
import { chartDir } from '../unit/helm/chart.ts';
import { kubeconfigPath } from '../support/cluster.ts';
import { runTool } from '../support/tools.ts';
import { agentCard, condition, sampleCard, waitFor, useOperatorInNamespace } from '../support/operator.ts';

let policyYaml = '';

const kubectl = (args: string[], input?: string) =>
  runTool('kubectl', args, { kubeconfig: kubeconfigPath(), ...(input === undefined ? {} : { input }) });

/** `levels` objects nested inside the params object itself (params is level 0). */
function nested(levels: number): Record<string, unknown> {
  let params: Record<string, unknown> = { leaf: 'x' };
  for (let i = 0; i < levels; i++) params = { a: params };
  return params;
}

/** A card whose second extension carries `params` (the first one is harmless). */
const specWith = (params: unknown) => ({
  card: {
    ...sampleCard('1.0.0'),
    capabilities: {
      extensions: [
        { uri: 'https://x.example/ok', params: { list: [1, { b: 'c' }] } as unknown },
        { uri: 'https://x.example/deep', params },
      ],
    },
  },
});

// create and replace, not apply: client-side apply would copy the card into an annotation
// (256 KiB at most), and server-side apply records every nested field in managedFields.
const applyCard = (name: string, spec: Record<string, unknown>) =>
  kubectl(['create', '-f', '-'], JSON.stringify(agentCard(ns.name, name, spec)));

/** kubectl replace of the spec (with the live resourceVersion: custom resources need one). */
async function replaceCard(name: string, spec: Record<string, unknown>) {
  for (let attempt = 0; ; attempt++) {
    const live = await api.getCard(ns.name, name);
    const body = agentCard(ns.name, name, spec);
    body.metadata = { ...body.metadata, resourceVersion: live!.metadata.resourceVersion };
    const result = await kubectl(['replace', '-f', '-'], JSON.stringify(body));
    // The operator's status write can move the resourceVersion in between (409): read again.
    if (!/the object has been modified/.test(result.stderr) || attempt >= 5) return result;
  }
}

const { api, ns } = useOperatorInNamespace('nesting-policy', {
  flags: ['--resync', '10m'],
  before: async () => {
    const release = `np-${ns.name.slice(-8)}`;
    const rendered = await runTool(
      'helm',
      [
        'template',
        release,
        chartDir,
        '--namespace',
        ns.name,
        '--show-only',
        'templates/nesting-policy.yaml',
        '--set-json',
        `nestingPolicy.namespaceSelector={"matchLabels":{"kubernetes.io/metadata.name":"${ns.name}"}}`,
      ],
      { kubeconfig: kubeconfigPath() },
    );
    expect(rendered.stderr).toBe('');
    policyYaml = rendered.stdout;
    // Stored before the policy exists (an upgrade from a release without it).
    expect((await applyCard('before', specWith(nested(40)))).code).toBe(0);
    const applied = await kubectl(['apply', '-f', '-'], policyYaml);
    expect(applied.stderr).toBe('');
    // A new policy takes effect once the API server's admission plugin has loaded it: until then
    // a deep card is stored, so try with fresh names until one is refused.
    let i = 0;
    await waitFor(
      'the nesting policy to take effect',
      async () => (await applyCard(`warmup-${i++}`, specWith(nested(1_500)))).code !== 0,
      30_000,
    );
  },
  after: async () => {
    if (policyYaml) await kubectl(['delete', '--ignore-not-found', '-f', '-'], policyYaml);
  },
});

describe('the chart renders the policy from the generated template', () => {
  it('a ValidatingAdmissionPolicy (failurePolicy Ignore) and its Deny binding, on AgentCard CREATE and UPDATE', () => {
    const docs = parseAllDocuments(policyYaml).map((d) => d.toJS() as { kind: string; spec: any }); // eslint-disable-line @typescript-eslint/no-explicit-any
    const policy = docs.find((d) => d.kind === 'ValidatingAdmissionPolicy')!;
    expect(policy.spec.failurePolicy).toBe('Ignore');
    expect(policy.spec.matchConstraints.resourceRules).toEqual([
      {
        apiGroups: ['agentcard.dev'],
        apiVersions: ['v1alpha1'],
        operations: ['CREATE', 'UPDATE'],
        resources: ['agentcards'],
      },
    ]);
    const binding = docs.find((d) => d.kind === 'ValidatingAdmissionPolicyBinding')!;
    expect(binding.spec.validationActions).toEqual(['Deny']);
  });
});

describe('kubectl create / replace of an AgentCard', () => {
  it('params nested 1,500 levels deep: refused by the API server, naming the field and the limit; nothing is stored', async () => {
    const result = await applyCard('deep', specWith(nested(1_500)));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(
      'spec.card.capabilities.extensions[1].params: nested more than 32 levels deep (objects and arrays, counted from spec; 27 inside this field); flatten it',
    );
    expect(result.stderr).not.toMatch(/cost|evaluat/i);
    expect(await api.getCard(ns.name, 'deep')).toBeUndefined();
  });

  it("the boundary is the engine's: 26 levels inside params pass both, 27 fail both", async () => {
    // The engine's verdict on the same specs (validate.ts, depth.ts).
    expect(validateSpec(specWith(nested(26))).problems.filter((p) => /nested more/.test(p.message))).toEqual(
      [],
    );
    expect(validateSpec(specWith(nested(27))).problems[0]?.message).toMatch(
      /^nested more than 32 levels deep/,
    );
    const at26 = await applyCard('edge-26', specWith(nested(26)));
    expect(at26.stderr).toBe('');
    expect(at26.code).toBe(0);
    const at27 = await applyCard('edge-27', specWith(nested(27)));
    expect(at27.code).not.toBe(0);
    expect(at27.stderr).toContain(
      'spec.card.capabilities.extensions[1].params: nested more than 32 levels deep',
    );
    // Arrays count as levels too.
    let list: unknown = 'x';
    for (let i = 0; i < 27; i++) list = [list];
    expect((await applyCard('edge-list', specWith({ l: list }))).code).not.toBe(0);
  });

  it('a normal card passes and is published', async () => {
    const result = await applyCard('normal', { card: sampleCard('1.0.0') });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    await waitFor('normal: Published', async () => {
      const card = await api.getCard(ns.name, 'normal');
      return condition(card, 'Published')?.status === 'True';
    });
  });

  it('an UPDATE that makes params too deep is refused; the stored spec stays', async () => {
    expect((await applyCard('grows', specWith({ shallow: true }))).code).toBe(0);
    const result = await replaceCard('grows', specWith(nested(40)));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('spec.card.capabilities.extensions[1].params: nested more than 32');
    const stored = await api.getCard(ns.name, 'grows');
    const extensions = (stored!.spec.card as { capabilities: { extensions: { params: unknown }[] } })
      .capabilities.extensions;
    expect(extensions[1]!.params).toEqual({ shallow: true });
  });

  it('a card stored before the policy can still be labelled (spec unchanged: not checked), but not changed while too deep', async () => {
    const labelled = await kubectl(['label', '--namespace', ns.name, 'agentcard', 'before', 'team=a']);
    expect(labelled.stderr).toBe('');
    expect(labelled.code).toBe(0);
    expect((await api.getCard(ns.name, 'before'))!.metadata).toMatchObject({ labels: { team: 'a' } });
    const changed = await replaceCard('before', specWith(nested(41)));
    expect(changed.code).not.toBe(0);
    expect(changed.stderr).toContain('spec.card.capabilities.extensions[1].params: nested more than 32');
  });

  it('a deep params the policy cannot afford to walk (its CEL cost limit) is admitted (Ignore); the controller reports InvalidSpec', async () => {
    // 20,000 wide entries in the first extension exceed the per-expression cost limit before
    // the walk (in list order) reaches the second one, nested 1,500 levels deep.
    const wide: Record<string, unknown> = {};
    for (let i = 0; i < 20_000; i++) wide[`k${i}`] = { v: [i] };
    const spec = specWith(nested(1_500));
    spec.card.capabilities.extensions[0]!.params = wide;
    const result = await applyCard('wide', spec);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const refused = await waitFor('wide: Accepted=False InvalidSpec', async () => {
      const card = await api.getCard(ns.name, 'wide');
      return condition(card, 'Accepted')?.reason === 'InvalidSpec' ? card : undefined;
    });
    expect(condition(refused, 'Accepted')!.message).toMatch(
      /^spec\.card\.capabilities\.extensions\[1\]\.params\.a[.a]*: nested more than 32 levels deep/,
    );
  });
});
