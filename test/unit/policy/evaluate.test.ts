/* eslint-disable @typescript-eslint/no-explicit-any -- the tests edit cards as loosely typed JSON */
// The policy engine: selection, each rule kind's verdicts with their JSON paths, facts that are
// not known reported as NotEvaluated (never Pass), and the merge of several policies.
import { describe, expect, it } from 'vitest';
import { validateSpec } from '../../../operator/card/validate.ts';
import {
  evaluatePolicies,
  evaluatePolicy,
  isAllowedCaller,
  mergeResults,
  selects,
  type Facts,
  type Subject,
} from '../../../operator/policy/evaluate.ts';
import { parsePolicy } from '../../../operator/policy/parse.ts';
import type { Mode, Policy } from '../../../operator/policy/resource.ts';
import { bareCardViews, specCardViews } from '../../../operator/policy/subject.ts';
import { minimalCard } from '../../support/cards.ts';

function policy(
  rules: unknown[],
  opts: { mode?: Mode; name?: string; namespace?: string; spec?: object } = {},
): Policy {
  const parsed = parsePolicy({
    apiVersion: 'agentcard.dev/v1alpha1',
    kind: opts.namespace ? 'AgentPolicy' : 'ClusterAgentPolicy',
    metadata: { name: opts.name ?? 'p', ...(opts.namespace ? { namespace: opts.namespace } : {}) },
    spec: { mode: opts.mode ?? 'Enforce', rules, ...opts.spec },
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed.policy;
}

/** An AgentCard in namespace `payments` with the spec given (validated as the CLI does). */
function subject(spec: Record<string, any>, facts: Facts = {}, extra: Partial<Subject> = {}): Subject {
  const v = validateSpec(spec);
  if (!v.spec || !v.card) throw new Error(JSON.stringify(v.problems));
  return {
    name: 'pay',
    namespace: 'payments',
    adopted: false,
    cards: specCardViews(v.spec, v.card),
    facts,
    ...extra,
  };
}
const card = (patch: (c: any) => void = () => {}) => {
  const c = minimalCard() as any;
  patch(c);
  return c;
};
const httpCard = card((c) => (c.supportedInterfaces[0].url = 'http://recipes.example.com/a2a'));

const rule = (name: string, kind: Record<string, unknown>) => ({ name, message: `${name} message`, ...kind });
const verdicts = (p: Policy, s: Subject) =>
  evaluatePolicy(p, s).rules.map((r) => ({ rule: r.rule, verdict: r.verdict, violations: r.violations }));

describe('selection', () => {
  const s = subject({ card: card() }, {}, { labels: { tier: 'prod' }, namespaceLabels: { team: 'pay' } });
  it('an AgentPolicy selects its own namespace only', () => {
    expect(
      selects(
        policy([rule('r', { reachability: { readyBeforeListed: true } })], { namespace: 'payments' }),
        s,
      ),
    ).toBe(true);
    expect(
      selects(policy([rule('r', { reachability: { readyBeforeListed: true } })], { namespace: 'other' }), s),
    ).toBe(false);
  });
  it('a ClusterAgentPolicy selects by namespace labels (the name label included) and card labels', () => {
    const r = [rule('r', { reachability: { readyBeforeListed: true } })];
    expect(selects(policy(r), s)).toBe(true);
    expect(selects(policy(r, { spec: { namespaceSelector: { matchLabels: { team: 'pay' } } } }), s)).toBe(
      true,
    );
    expect(selects(policy(r, { spec: { namespaceSelector: { matchLabels: { team: 'web' } } } }), s)).toBe(
      false,
    );
    expect(
      selects(
        policy(r, {
          spec: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'payments' } } },
        }),
        s,
      ),
    ).toBe(true);
    expect(selects(policy(r, { spec: { selector: { matchLabels: { tier: 'dev' } } } }), s)).toBe(false);
  });
  it('evaluatePolicies leaves out the policies that do not select the card', () => {
    const r = [rule('r', { reachability: { readyBeforeListed: true } })];
    const results = evaluatePolicies(
      [policy(r, { name: 'a' }), policy(r, { name: 'b', namespace: 'other' })],
      s,
    );
    expect(results.map((x) => x.policy)).toEqual(['ClusterAgentPolicy a']);
  });
});

describe('content rules', () => {
  const https = policy([rule('https-only', { content: { allowedSchemes: ['https'] } })]);

  it('an http interface fails at its JSON path; https passes', () => {
    expect(verdicts(https, subject({ card: httpCard }))).toEqual([
      {
        rule: 'https-only',
        verdict: 'Fail',
        violations: [
          {
            path: 'spec.card.supportedInterfaces[0].url',
            detail: 'scheme "http" is not allowed (allowed: https)',
          },
        ],
      },
    ]);
    expect(verdicts(https, subject({ card: card() }))[0]!.verdict).toBe('Pass');
    const result = evaluatePolicy(https, subject({ card: httpCard }));
    expect(result).toMatchObject({ policy: 'ClusterAgentPolicy p', mode: 'Enforce', verdict: 'Fail' });
    expect(result.rules[0]!.message).toBe('https-only message');
  });

  it("judges each audience's card and names the field the user wrote", () => {
    const spec = {
      card: card(),
      audiences: [
        { name: 'internal', hosts: ['pay.internal'], baseURL: 'http://pay.payments.svc:8080' },
        {
          name: 'partner',
          hosts: ['pay.partner.example'],
          supportedInterfaces: [
            { url: 'https://pay.partner.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
            { url: 'http://pay.partner.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
          ],
        },
      ],
    };
    expect(verdicts(https, subject(spec))[0]!.violations.map((v) => v.path)).toEqual([
      'spec.audiences[0].baseURL',
      'spec.audiences[1].supportedInterfaces[1].url',
    ]);
  });

  it("a baseURL audience: a binding problem is spec.card's (reported once), a URL problem the baseURL's", () => {
    const p = policy([
      rule('bindings', { content: { allowedBindings: ['GRPC'] } }),
      rule('hosts', { content: { allowedHostSuffixes: ['example.com'] } }),
    ]);
    const s = subject({
      card: card(),
      audiences: [{ name: 'internal', hosts: ['pay.internal'], baseURL: 'https://pay.internal' }],
    });
    expect(verdicts(p, s).map((r) => r.violations.map((v) => v.path))).toEqual([
      ['spec.card.supportedInterfaces[0].protocolBinding'],
      ['spec.audiences[0].baseURL'],
    ]);
  });

  it('host suffixes match at a label boundary; bindings are matched exactly', () => {
    const p = policy([
      rule('hosts', { content: { allowedHostSuffixes: ['example.com'] } }),
      rule('bindings', { content: { allowedBindings: ['JSONRPC', 'GRPC'] } }),
    ]);
    const s = subject({
      card: card((c) => {
        c.supportedInterfaces = [
          { url: 'https://A.Example.COM./x', protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
          { url: 'https://example.com:8443', protocolBinding: 'GRPC', protocolVersion: '1.0' },
          { url: 'https://user@badexample.com/a2a', protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
        ];
      }),
    });
    expect(verdicts(p, s)).toEqual([
      {
        rule: 'hosts',
        verdict: 'Fail',
        violations: [
          {
            path: 'spec.card.supportedInterfaces[2].url',
            detail: 'host "badexample.com" is not under an allowed suffix (example.com)',
          },
        ],
      },
      {
        rule: 'bindings',
        verdict: 'Fail',
        violations: [
          {
            path: 'spec.card.supportedInterfaces[2].protocolBinding',
            detail: 'binding "HTTP+JSON" is not allowed (allowed: JSONRPC, GRPC)',
          },
        ],
      },
    ]);
  });

  it('required fields (missing or empty), capabilities and extensions', () => {
    const p = policy([
      rule('complete', {
        content: {
          requiredFields: [
            'provider.organization',
            'documentationUrl',
            'securitySchemes',
            'capabilities.streaming',
          ],
          requiredCapabilities: ['streaming', 'pushNotifications'],
          requiredExtensions: ['https://ext.example/trace'],
        },
      }),
    ]);
    const s = subject({ card: card((c) => (c.provider = { organization: '', url: 'https://example.com' })) });
    expect(verdicts(p, s)[0]!.violations).toEqual([
      { path: 'spec.card.provider.organization', detail: 'required field is empty' },
      { path: 'spec.card.documentationUrl', detail: 'required field is missing' },
      { path: 'spec.card.securitySchemes', detail: 'required field is missing' },
      // capabilities.streaming is false: a value, present (the capability check is what fails).
      { path: 'spec.card.capabilities.streaming', detail: 'capability streaming is false' },
      {
        path: 'spec.card.capabilities.pushNotifications',
        detail: 'capability pushNotifications is not declared',
      },
      {
        path: 'spec.card.capabilities.extensions',
        detail: 'extension "https://ext.example/trace" is not declared',
      },
    ]);
  });

  it('the largest card in bytes, and instructions-like text', () => {
    const prompt =
      'You are the payments agent. You must never reveal card numbers. Always respond in JSON. Do not mention refunds.';
    const p = policy([
      rule('small', { content: { maxCardBytes: 600 } }),
      rule('no-prompts', { content: { forbiddenInstructions: { minLength: 80 } } }),
    ]);
    const big = subject({ card: card((c) => (c.skills[0].description = prompt + ' x'.repeat(300))) });
    const [small, prompts] = verdicts(p, big);
    expect(small!.violations).toEqual([
      { path: 'spec.card', detail: expect.stringMatching(/^the card is \d+ bytes; the limit is 600$/) },
    ]);
    expect(prompts!.violations).toEqual([
      {
        path: 'spec.card.skills[0].description',
        detail: expect.stringMatching(
          /^instructions-like text of 7\d\d characters \("you are", "you must", .*\); a card is public$/,
        ),
      },
    ]);
    expect(verdicts(p, subject({ card: card() })).map((r) => r.verdict)).toEqual(['Pass', 'Pass']);
  });

  it('an adopted card whose card is not known: NotEvaluated, not Pass', () => {
    const s: Subject = { name: 'a', namespace: 'payments', adopted: true, facts: {} };
    const [r] = evaluatePolicy(https, s).rules;
    expect(r).toMatchObject({ verdict: 'NotEvaluated', notEvaluated: expect.stringMatching(/spec\.source/) });
  });

  it('a bare card: paths from its root', () => {
    const s: Subject = {
      name: 'x',
      namespace: 'default',
      adopted: false,
      cards: bareCardViews(httpCard),
      facts: {},
    };
    expect(verdicts(https, s)[0]!.violations[0]!.path).toBe('supportedInterfaces[0].url');
  });
});

describe('trust rules', () => {
  const signedBy = policy([
    rule('own-namespace', {
      trust: { signed: true, signerIdentities: ['spiffe://example.org/ns/{namespace}/*'] },
    }),
  ]);

  it('unknown signature facts are NotEvaluated, never Pass', () => {
    const [r] = evaluatePolicy(signedBy, subject({ card: card() }, {})).rules;
    expect(r!.verdict).toBe('NotEvaluated');
    expect(r!.notEvaluated).toMatch(/signer's identity/);
  });

  it('an unsigned card fails both checks at spec.signing', () => {
    expect(verdicts(signedBy, subject({ card: card() }, { signed: false }))[0]).toEqual({
      rule: 'own-namespace',
      verdict: 'Fail',
      violations: [
        { path: 'spec.signing', detail: 'the card is not signed' },
        { path: 'spec.signing', detail: 'the card is not signed, so it has no signer identity' },
      ],
    });
  });

  it("{namespace} is the AgentCard's namespace: its own passes, another namespace's fails", () => {
    const own = subject(
      { card: card() },
      { signed: true, signerIdentities: ['spiffe://example.org/ns/payments/sa/pay'] },
    );
    expect(verdicts(signedBy, own)[0]!.verdict).toBe('Pass');
    const other = subject(
      { card: card() },
      { signed: true, signerIdentities: ['spiffe://example.org/ns/web/sa/pay'] },
    );
    expect(verdicts(signedBy, other)[0]!.violations).toEqual([
      {
        path: 'spec.signing',
        detail:
          'signed by "spiffe://example.org/ns/web/sa/pay"; expected "spiffe://example.org/ns/payments/*"',
      },
    ]);
  });

  it("an adopted card's source signature: Verified passes, anything else fails, unknown is NotEvaluated", () => {
    const p = policy([rule('source', { trust: { sourceSignature: 'Verified' } })]);
    const adopted = (facts: Facts): Subject => ({ name: 'a', namespace: 'n', adopted: true, facts });
    expect(verdicts(p, adopted({ sourceSignature: 'Verified' }))[0]!.verdict).toBe('Pass');
    expect(verdicts(p, adopted({ sourceSignature: 'Unsigned' }))[0]!.violations).toEqual([
      {
        path: 'spec.source.verification',
        detail: "the agent's own card signature is Unsigned, not Verified",
      },
    ]);
    expect(verdicts(p, adopted({}))[0]!.verdict).toBe('NotEvaluated');
    // A written card is not adopted: nothing to require.
    expect(verdicts(p, subject({ card: card() }))[0]!.verdict).toBe('Pass');
  });
});

describe('reachability and callers', () => {
  it('Ready: unknown is NotEvaluated, False fails, True passes', () => {
    const p = policy([rule('ready', { reachability: { readyBeforeListed: true } })]);
    expect(verdicts(p, subject({ card: card() }))[0]!.verdict).toBe('NotEvaluated');
    expect(verdicts(p, subject({ card: card() }, { ready: false }))[0]!.verdict).toBe('Fail');
    expect(verdicts(p, subject({ card: card() }, { ready: true }))[0]!.verdict).toBe('Pass');
  });

  it('a callers rule is never judged on the card', () => {
    const p = policy([
      rule('billing-only', { callers: { namespaceSelector: { matchLabels: { team: 'billing' } } } }),
    ]);
    expect(verdicts(p, subject({ card: card() }, { ready: true, signed: true }))[0]!.verdict).toBe(
      'NotEvaluated',
    );
  });

  it('isAllowedCaller: by AgentCard (namespace defaulting to the target), namespace selector, signer identity', () => {
    const rule = {
      agentCards: [{ name: 'billing' }, { name: 'audit', namespace: 'compliance' }],
      namespaceSelector: { matchLabels: { team: 'finance' } },
      signerIdentities: ['spiffe://example.org/ns/{namespace}/sa/gateway'],
    };
    const allowed = (caller: Parameters<typeof isAllowedCaller>[1]) =>
      isAllowedCaller(rule, caller, 'payments');
    expect(allowed({ name: 'billing', namespace: 'payments' })).toBe(true);
    expect(allowed({ name: 'billing', namespace: 'web' })).toBe(false);
    expect(allowed({ name: 'audit', namespace: 'compliance' })).toBe(true);
    expect(allowed({ name: 'x', namespace: 'ledger', namespaceLabels: { team: 'finance' } })).toBe(true);
    expect(
      allowed({
        name: 'x',
        namespace: 'web',
        signerIdentities: ['spiffe://example.org/ns/payments/sa/gateway'],
      }),
    ).toBe(true);
    expect(
      allowed({ name: 'x', namespace: 'web', signerIdentities: ['spiffe://example.org/ns/web/sa/gateway'] }),
    ).toBe(false);
  });
});

describe('mergeResults: the strictest mode wins per failing rule', () => {
  const https = (mode: Mode, name: string) =>
    policy([rule('https-only', { content: { allowedSchemes: ['https'] } })], { mode, name });

  it('the same failing rule in an Audit and an Enforce policy is Enforce', () => {
    const s = subject({ card: httpCard });
    const merged = mergeResults(evaluatePolicies([https('Audit', 'audit'), https('Enforce', 'enforce')], s));
    expect(merged.action).toBe('Enforce');
    expect(merged.failures).toHaveLength(1);
    expect(merged.failures[0]).toMatchObject({
      rule: 'https-only',
      mode: 'Enforce',
      failures: [
        { policy: 'ClusterAgentPolicy audit', mode: 'Audit' },
        { policy: 'ClusterAgentPolicy enforce', mode: 'Enforce' },
      ],
    });
    // The order of the policies does not matter.
    expect(
      mergeResults(evaluatePolicies([https('Enforce', 'enforce'), https('Warn', 'warn')], s)).action,
    ).toBe('Enforce');
  });

  it('a policy that allows http does not excuse the card from one that refuses it', () => {
    const lax = policy([rule('schemes', { content: { allowedSchemes: ['http', 'https'] } })], {
      mode: 'Enforce',
      name: 'lax',
    });
    const strict = policy([rule('schemes', { content: { allowedSchemes: ['https'] } })], {
      mode: 'Warn',
      name: 'strict',
    });
    const merged = mergeResults(evaluatePolicies([lax, strict], subject({ card: httpCard })));
    expect(merged.action).toBe('Warn');
    expect(merged.failures.map((f) => [f.rule, f.mode, f.failures.map((x) => x.policy)])).toEqual([
      ['schemes', 'Warn', ['ClusterAgentPolicy strict']],
    ]);
  });

  it('per rule: an Enforce failure and a separate Audit failure keep their own modes; the card takes the strictest', () => {
    const a = policy([rule('https-only', { content: { allowedSchemes: ['https'] } })], {
      mode: 'Enforce',
      name: 'a',
    });
    const b = policy([rule('docs', { content: { requiredFields: ['documentationUrl'] } })], {
      mode: 'Audit',
      name: 'b',
    });
    const merged = mergeResults(evaluatePolicies([b, a], subject({ card: httpCard })));
    expect(merged.failures.map((f) => [f.rule, f.mode])).toEqual([
      ['https-only', 'Enforce'],
      ['docs', 'Audit'],
    ]);
    expect(merged.action).toBe('Enforce');
  });

  it('nothing fails: no action; rules not evaluated are listed, not counted as failures', () => {
    const p = policy([rule('ready', { reachability: { readyBeforeListed: true } })], { mode: 'Enforce' });
    const merged = mergeResults(evaluatePolicies([p, https('Enforce', 'h')], subject({ card: card() })));
    expect(merged.action).toBeUndefined();
    expect(merged.failures).toEqual([]);
    expect(merged.notEvaluated).toEqual([
      {
        policy: 'ClusterAgentPolicy p',
        mode: 'Enforce',
        rule: 'ready',
        reason: expect.stringMatching(/Ready is known only/),
      },
    ]);
  });
});
