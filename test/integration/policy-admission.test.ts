// A policy's CEL on the real API server: the ValidatingAdmissionPolicy and binding generated from
// an AgentPolicy (operator/policy/cel.ts) refuse, at `kubectl create`, an AgentCard with an http
// interface with the rule's message and the field's path, as the engine does; an https card is
// stored. The policy's mode is the binding's validationActions: Warn admits the card with
// kubectl's "Warning:" line carrying the message, Audit admits it silently. The policy is the
// namespaced kind, so its binding is narrowed to this test's namespace: other tests share the
// control plane. Last, the generated policy CRDs are accepted by the API server, which refuses an
// invalid policy with the field named.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateSpec } from '../../operator/card/validate.ts';
import { admissionObjects } from '../../operator/policy/cel.ts';
import { buildPolicyCrd } from '../../operator/policy/crd.ts';
import { evaluatePolicy } from '../../operator/policy/evaluate.ts';
import { parsePolicy } from '../../operator/policy/parse.ts';
import type { Mode, Policy } from '../../operator/policy/resource.ts';
import { specCardViews } from '../../operator/policy/subject.ts';
import { waitForCrdEstablished } from '../support/apply.ts';
import { kubeConfig, kubeconfigPath, useTestNamespace } from '../support/cluster.ts';
import { agentCard, installCrd, sampleCard, waitFor } from '../support/operator.ts';
import { runTool } from '../support/tools.ts';

const ns = useTestNamespace('policy-admission');

const kubectl = (args: string[], input?: string) =>
  runTool('kubectl', args, { kubeconfig: kubeconfigPath(), ...(input === undefined ? {} : { input }) });

const HTTPS_MESSAGE = 'Every A2A interface must use https';
const HOSTS_MESSAGE = 'Interfaces must be served under example.com';

function policy(mode: Mode): Policy {
  const parsed = parsePolicy({
    apiVersion: 'agentcard.dev/v1alpha1',
    kind: 'AgentPolicy',
    metadata: { name: 'transport', namespace: ns.name },
    spec: {
      mode,
      rules: [
        { name: 'https-only', message: HTTPS_MESSAGE, content: { allowedSchemes: ['https'] } },
        { name: 'hosts', message: HOSTS_MESSAGE, content: { allowedHostSuffixes: ['example.com'] } },
      ],
    },
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed.policy;
}

/** kubectl apply of the generated ValidatingAdmissionPolicy and binding. */
async function applyPolicy(mode: Mode) {
  const { policy: vap, binding } = admissionObjects(policy(mode));
  const result = await kubectl(
    ['apply', '-f', '-'],
    JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [vap, binding] }),
  );
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
}

const withUrl = (url: string) =>
  sampleCard('1.0.0', {
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
  });

let n = 0;
/** kubectl create of an AgentCard with a fresh name. */
const create = (spec: Record<string, unknown>, name = `card-${n++}`) =>
  kubectl(['create', '-f', '-'], JSON.stringify(agentCard(ns.name, name, spec))).then((r) => ({
    ...r,
    name,
  }));

const exists = async (name: string) =>
  (await kubectl(['get', 'agentcard', '--namespace', ns.name, name, '-o', 'name'])).code === 0;

/** Waits until a binding change is in effect: an http card gets the outcome `done` expects. */
const settle = (what: string, done: (r: { code: number; stderr: string }) => boolean) =>
  waitFor(what, async () => done(await create({ card: withUrl('http://weather.example.com/a2a') })), 30_000);

beforeAll(async () => {
  await installCrd(kubeConfig());
  await applyPolicy('Enforce');
  // A new policy takes effect once the API server's admission plugin has loaded it.
  await settle('the Enforce policy to take effect', (r) => r.code !== 0);
});

afterAll(async () => {
  const { policy: vap, binding } = admissionObjects(policy('Enforce'));
  await kubectl(
    ['delete', '--ignore-not-found', '-f', '-'],
    JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [binding, vap] }),
  );
});

describe('Enforce: validationActions [Deny]', () => {
  it("an http interface is refused with the rule's message and path, as the engine says; nothing is stored", async () => {
    const spec = { card: withUrl('http://weather.example.com/a2a') };
    const result = await create(spec, 'plain-http');
    expect(result.code).not.toBe(0);
    const expected = `spec.card.supportedInterfaces[0].url: ${HTTPS_MESSAGE} (AgentPolicy ${ns.name}/transport, rule https-only)`;
    expect(result.stderr).toContain(expected);
    expect(result.stderr).not.toContain(HOSTS_MESSAGE);
    expect(await exists('plain-http')).toBe(false);
    // The engine's verdict on the same spec: the same rule, path and message.
    const v = validateSpec(spec);
    const judged = evaluatePolicy(policy('Enforce'), {
      name: 'plain-http',
      namespace: ns.name,
      adopted: false,
      cards: specCardViews(v.spec!, v.card!),
      facts: {},
    });
    const failing = judged.rules.filter((r) => r.verdict === 'Fail');
    expect(failing.map((r) => [r.rule, r.message, r.violations.map((x) => x.path)])).toEqual([
      ['https-only', HTTPS_MESSAGE, ['spec.card.supportedInterfaces[0].url']],
    ]);
  });

  it('an https interface under the allowed host suffix is stored', async () => {
    const result = await create({ card: withUrl('https://weather.example.com/a2a') }, 'plain-https');
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(await exists('plain-https')).toBe(true);
  });

  it('a host outside the suffix (at a label boundary) and an http audience baseURL are refused, each naming its field', async () => {
    const host = await create({ card: withUrl('https://weather.badexample.com/a2a') });
    expect(host.code).not.toBe(0);
    expect(host.stderr).toContain(`spec.card.supportedInterfaces[0].url: ${HOSTS_MESSAGE}`);
    const audience = await create({
      card: withUrl('https://weather.example.com/a2a'),
      audiences: [{ name: 'internal', hosts: ['weather.internal'], baseURL: 'http://weather.example.com' }],
    });
    expect(audience.code).not.toBe(0);
    expect(audience.stderr).toContain(`spec.audiences[0].baseURL: ${HTTPS_MESSAGE}`);
  });
});

describe('Warn and Audit: the card is admitted', () => {
  it("Warn ([Warn]): kubectl prints the rule's message as a warning and the card is stored", async () => {
    await applyPolicy('Warn');
    const admitted = await waitFor(
      'the Warn binding to take effect',
      async () => {
        const r = await create({ card: withUrl('http://weather.example.com/a2a') });
        return r.code === 0 ? r : undefined;
      },
      30_000,
    );
    expect(admitted.stderr).toMatch(/^Warning: /m);
    expect(admitted.stderr).toContain(
      `spec.card.supportedInterfaces[0].url: ${HTTPS_MESSAGE} (AgentPolicy ${ns.name}/transport, rule https-only)`,
    );
    expect(await exists(admitted.name)).toBe(true);
  });

  it('Audit ([Audit]): stored without a warning', async () => {
    await applyPolicy('Audit');
    const admitted = await waitFor(
      'the Audit binding to take effect',
      async () => {
        const r = await create({ card: withUrl('http://weather.example.com/a2a') });
        return r.code === 0 && !r.stderr.includes('Warning') ? r : undefined;
      },
      30_000,
    );
    expect(admitted.stderr).toBe('');
    expect(await exists(admitted.name)).toBe(true);
  });
});

describe('the generated policy CRDs on the API server', () => {
  const kinds = ['AgentPolicy', 'ClusterAgentPolicy'] as const;
  const crds = kinds.map((k) => buildPolicyCrd(k));

  beforeAll(async () => {
    const result = await kubectl(
      ['apply', '--server-side', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: crds }),
    );
    expect(result.stderr).toBe('');
    for (const crd of crds)
      await waitForCrdEstablished((crd.metadata as { name: string }).name, 30_000, kubeConfig());
  });
  afterAll(async () => {
    await kubectl(
      ['delete', '--ignore-not-found', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items: crds }),
    );
  });

  const agentPolicy = (rules: unknown[], extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'AgentPolicy',
      metadata: { name: `p-${n++}`, namespace: ns.name },
      spec: { rules, ...extra },
    });

  it('a valid AgentPolicy is stored, with mode defaulted to Audit', async () => {
    const created = await kubectl(
      ['create', '-o', 'json', '-f', '-'],
      agentPolicy([{ name: 'r', message: 'm', content: { allowedSchemes: ['https'] } }]),
    );
    expect(created.stderr).toBe('');
    expect(JSON.parse(created.stdout).spec.mode).toBe('Audit');
  });

  it('a rule with two kinds, and an AgentPolicy with a namespaceSelector, are refused naming the field', async () => {
    const twoKinds = await kubectl(
      ['create', '-f', '-'],
      agentPolicy([
        {
          name: 'r',
          message: 'm',
          content: { allowedSchemes: ['https'] },
          reachability: { readyBeforeListed: true },
        },
      ]),
    );
    expect(twoKinds.code).not.toBe(0);
    expect(twoKinds.stderr).toContain(
      'spec.rules[0]: Invalid value: set exactly one of trust, content, reachability, callers',
    );
    const selector = await kubectl(
      ['create', '--validate=strict', '-f', '-'],
      agentPolicy([{ name: 'r', message: 'm', content: { allowedSchemes: ['https'] } }], {
        namespaceSelector: {},
      }),
    );
    expect(selector.code).not.toBe(0);
    expect(selector.stderr).toMatch(/unknown field "spec\.namespaceSelector"/);
  });
});
