/**
 * The pure part of the policy controller: the facts a card's status gives the engine (only for its
 * current generation), the counts over the cards a policy selects, the generated admission
 * objects tied to their policy, drift that ignores the API server's defaults, and the status of a
 * valid and an invalid policy.
 */
import { describe, expect, it } from 'vitest';
import type { AgentCardObject } from '../../../../operator/api/objects.ts';
import {
  admissionDrift,
  cardFacts,
  cardFingerprint,
  cardSubject,
  containsDesired,
  desiredAdmission,
  invalidStatus,
  judgeCards,
  parsePolicyKey,
  policyKey,
  POLICY_REF_ANNOTATION,
  problemsMessage,
  statusChanged,
  validStatus,
} from '../../../../operator/controllers/policy/plan.ts';
import { parsePolicy } from '../../../../operator/policy/parse.ts';
import type { Policy } from '../../../../operator/policy/resource.ts';
import { sampleCard } from '../../../support/cards.ts';

const NOW = new Date('2026-01-01T00:00:00Z');

function policyOf(value: Record<string, unknown>): Policy {
  const parsed = parsePolicy({ apiVersion: 'agentcard.dev/v1alpha1', ...value });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed.policy;
}

const httpsOnly = (mode = 'Enforce', extra: Record<string, unknown> = {}) =>
  policyOf({
    kind: 'ClusterAgentPolicy',
    metadata: { name: 'platform' },
    spec: {
      mode,
      rules: [{ name: 'https-only', message: 'Use https', content: { allowedSchemes: ['https'] } }],
      ...extra,
    },
  });

function card(
  name: string,
  url: string,
  opts: { namespace?: string; labels?: Record<string, string>; status?: unknown; signing?: unknown } = {},
): AgentCardObject & { metadata: { labels?: Record<string, string> } } {
  return {
    metadata: {
      name,
      namespace: opts.namespace ?? 'team-a',
      uid: `uid-${name}`,
      generation: 2,
      resourceVersion: '10',
      ...(opts.labels ? { labels: opts.labels } : {}),
    },
    spec: {
      card: sampleCard('1.0.0', {
        supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      }),
      ...(opts.signing ? { signing: opts.signing } : {}),
    },
    ...(opts.status ? { status: opts.status } : {}),
  };
}

describe('keys', () => {
  it('name kind, namespace and name, and refuse anything else', () => {
    const ref = { kind: 'AgentPolicy' as const, namespace: 'team-a', name: 'a.b' };
    expect(parsePolicyKey(policyKey(ref))).toEqual(ref);
    expect(parsePolicyKey('ClusterAgentPolicy//platform')).toEqual({
      kind: 'ClusterAgentPolicy',
      namespace: '',
      name: 'platform',
    });
    expect(parsePolicyKey('AgentCard/team-a/x')).toBeUndefined();
    expect(parsePolicyKey('AgentPolicy/team-a')).toBeUndefined();
  });
});

describe('cardFacts', () => {
  const signing = { keys: [{ secretRef: { name: 'k' } }] };
  const published = (generation: number, extra: Record<string, unknown> = {}) => ({
    observedGeneration: generation,
    card: { digest: `sha256:${'0'.repeat(64)}`, bytes: 10, version: '1.0.0', configMap: 'x' },
    ...extra,
  });

  it('knows an unsigned card from its spec alone', () => {
    expect(cardFacts(card('a', 'https://a.example.com'))).toEqual({ signed: false });
  });

  const certificate = (identity: string, verified: boolean) => ({
    subject: '',
    issuer: '',
    identities: [identity, 'a.example.com'],
    ...(verified ? { verifiedIdentity: identity } : {}),
    notAfter: '2030-01-01T00:00:00Z',
  });

  it('takes signatures, proven identities, the source result and Ready from a current status', () => {
    const facts = cardFacts(
      card('a', 'https://a.example.com', {
        signing,
        status: published(2, {
          signatures: [
            {
              kid: 'k',
              alg: 'ES256',
              certificate: certificate('spiffe://example.org/ns/team-a/sa/default', true),
            },
          ],
          source: { signature: { result: 'Verified' } },
          conditions: [{ type: 'Ready', status: 'True', observedGeneration: 2 }],
        }),
      }),
    );
    expect(facts).toEqual({
      signed: true,
      signerIdentities: ['spiffe://example.org/ns/team-a/sa/default'],
      sourceSignature: 'Verified',
      ready: true,
    });
  });

  it('knows nothing more from a status of an older generation, nor from Ready=Unknown', () => {
    const old = card('a', 'https://a.example.com', {
      signing,
      status: published(1, {
        signatures: [{ kid: 'k', alg: 'ES256' }],
        conditions: [{ type: 'Ready', status: 'True', observedGeneration: 1 }],
      }),
    });
    expect(cardFacts(old)).toEqual({});
    const unknown = card('a', 'https://a.example.com', {
      signing,
      status: {
        observedGeneration: 2,
        conditions: [{ type: 'Ready', status: 'Unknown', observedGeneration: 2 }],
      },
    });
    expect(cardFacts(unknown)).toEqual({});
  });

  it('an identity its chain does not prove is not counted, and is reported as a claim', () => {
    const facts = cardFacts(
      card('a', 'https://a.example.com', {
        signing,
        status: published(2, {
          signatures: [
            {
              kid: 'k',
              alg: 'ES256',
              certificate: certificate('spiffe://example.org/ns/team-a/sa/default', false),
            },
          ],
        }),
      }),
    );
    expect(facts).toEqual({
      signed: true,
      signerIdentities: [],
      unverifiedSigners: [
        {
          kid: 'k',
          claimed: 'spiffe://example.org/ns/team-a/sa/default',
          reason: expect.stringContaining("its chain does not verify to its Secret's ca.crt"),
        },
      ],
    });
  });

  it('a signature without a certificate is signed with no identity', () => {
    const facts = cardFacts(
      card('a', 'https://a.example.com', {
        signing,
        status: published(2, { signatures: [{ kid: 'k', alg: 'ES256' }] }),
      }),
    );
    expect(facts).toEqual({ signed: true, signerIdentities: [] });
  });
});

describe('judgeCards', () => {
  it('counts the selected cards that comply, fail and cannot be judged, per rule', () => {
    const policy = policyOf({
      kind: 'AgentPolicy',
      metadata: { name: 'p', namespace: 'team-a' },
      spec: {
        selector: { matchLabels: { tier: 'prod' } },
        rules: [
          { name: 'https-only', message: 'Use https', content: { allowedSchemes: ['https'] } },
          { name: 'ready', message: 'Be ready', reachability: { readyBeforeListed: true } },
        ],
      },
    });
    const prod = { tier: 'prod' };
    const ready = {
      observedGeneration: 2,
      conditions: [{ type: 'Ready', status: 'True', observedGeneration: 2 }],
    };
    const subjects = [
      card('good', 'https://a.example.com', { labels: prod, status: ready }),
      card('bad', 'http://a.example.com', { labels: prod, status: ready }),
      card('unknown', 'https://a.example.com', { labels: prod }),
      card('other-label', 'http://a.example.com', { labels: { tier: 'dev' } }),
      card('other-ns', 'http://a.example.com', { labels: prod, namespace: 'team-b' }),
    ].map((c) => cardSubject(c, undefined));
    const counts = judgeCards(policy, subjects);
    expect(counts).toMatchObject({ matched: 3, compliant: 1, failing: 1, notEvaluated: 1 });
    expect([...counts.violationsByRule]).toEqual([
      ['https-only', 1],
      ['ready', 0],
    ]);
    expect(counts.findings).toEqual([
      {
        card: 'team-a/bad',
        rule: 'https-only',
        violations: ['spec.card.supportedInterfaces[0].url: scheme "http" is not allowed (allowed: https)'],
      },
    ]);
  });

  it('a ClusterAgentPolicy selects by namespace labels', () => {
    const policy = httpsOnly('Audit', { namespaceSelector: { matchLabels: { env: 'prod' } } });
    const c = card('bad', 'http://a.example.com');
    expect(judgeCards(policy, [cardSubject(c, { env: 'prod' })]).failing).toBe(1);
    expect(judgeCards(policy, [cardSubject(c, { env: 'dev' })]).matched).toBe(0);
  });

  it('an adopted card has no content to judge yet: not evaluated, never a pass', () => {
    const adopted: AgentCardObject = {
      metadata: { name: 'a', namespace: 'team-a', uid: 'u', generation: 1 },
      spec: { source: { url: 'http://agent:8080' } },
    };
    expect(judgeCards(httpsOnly(), [cardSubject(adopted, undefined)])).toMatchObject({
      matched: 1,
      compliant: 0,
      notEvaluated: 1,
    });
  });

  it('the fingerprint moves with what the engine reads, not with the rest of the status', () => {
    const a = card('a', 'https://a.example.com', {
      status: { observedGeneration: 2, reachableInterfaces: '1/1' },
    });
    const b = card('a', 'https://a.example.com', {
      status: { observedGeneration: 2, reachableInterfaces: '0/1' },
    });
    const c = card('a', 'https://a.example.com', { labels: { x: 'y' } });
    expect(cardFingerprint(a)).toBe(cardFingerprint(b));
    expect(cardFingerprint(a)).not.toBe(cardFingerprint(c));
  });
});

describe('the generated admission objects', () => {
  it('a ClusterAgentPolicy owns them; both name their policy in an annotation', () => {
    const want = desiredAdmission(httpsOnly(), {
      kind: 'ClusterAgentPolicy',
      name: 'platform',
      uid: 'uid-p',
    });
    expect(want.policy!.metadata).toMatchObject({
      name: 'clusteragentpolicy.platform.agentcard.dev',
      annotations: { [POLICY_REF_ANNOTATION]: 'ClusterAgentPolicy//platform' },
      ownerReferences: [
        {
          apiVersion: 'agentcard.dev/v1alpha1',
          kind: 'ClusterAgentPolicy',
          name: 'platform',
          uid: 'uid-p',
          controller: true,
        },
      ],
    });
    expect((want.binding!.spec as { validationActions: string[] }).validationActions).toEqual(['Deny']);
  });

  it('an AgentPolicy cannot own cluster-scoped objects: the annotation alone ties them', () => {
    const policy = policyOf({
      kind: 'AgentPolicy',
      metadata: { name: 'p', namespace: 'team-a' },
      spec: { rules: [{ name: 'r', message: 'm', content: { allowedSchemes: ['https'] } }] },
    });
    const want = desiredAdmission(policy, { kind: 'AgentPolicy', name: 'p', uid: 'u' });
    expect(want.binding!.metadata).not.toHaveProperty('ownerReferences');
    expect(want.binding!.metadata).toHaveProperty('annotations', {
      [POLICY_REF_ANNOTATION]: 'AgentPolicy/team-a/p',
    });
  });

  it('nothing is generated for a policy without a rule CEL can check', () => {
    const policy = policyOf({
      kind: 'ClusterAgentPolicy',
      metadata: { name: 'p' },
      spec: { rules: [{ name: 'r', message: 'm', reachability: { readyBeforeListed: true } }] },
    });
    expect(desiredAdmission(policy, { kind: 'ClusterAgentPolicy', name: 'p', uid: 'u' })).toEqual({
      policy: undefined,
      binding: undefined,
    });
  });

  it("drift ignores the API server's defaults but not a changed or added field", () => {
    const want = desiredAdmission(httpsOnly(), {
      kind: 'ClusterAgentPolicy',
      name: 'platform',
      uid: 'u',
    }).binding!;
    const live = structuredClone(want) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    live.metadata.uid = 'x';
    live.metadata.resourceVersion = '5';
    live.spec.matchResources = { matchPolicy: 'Equivalent', namespaceSelector: {}, objectSelector: {} };
    expect(admissionDrift(live, want)).toBe(false);
    live.spec.validationActions = ['Audit'];
    expect(admissionDrift(live, want)).toBe(true);
    expect(containsDesired({ a: [1, 2] }, { a: [1, 2, 3] })).toBe(false);
    expect(containsDesired({ a: {} }, {})).toBe(true);
  });
});

describe('status', () => {
  const input = { generation: 3, previous: undefined, now: NOW };

  it('an invalid policy: Accepted and Ready False naming the problems, no counts, what is kept', () => {
    const problems = [
      {
        path: 'spec.rules[0].trust.signerIdentities[0]',
        message: 'unknown variable {team}',
        severity: 'error' as const,
      },
    ];
    const status = invalidStatus(input, problems, ['clusteragentpolicy.p.agentcard.dev']);
    expect(status).not.toHaveProperty('matched');
    expect(status.conditions.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Accepted', 'False', 'InvalidPolicy'],
      ['Ready', 'False', 'InvalidPolicy'],
    ]);
    expect(status.conditions[0]!.message).toContain(
      'spec.rules[0].trust.signerIdentities[0]: unknown variable {team}',
    );
    expect(status.conditions[1]!.message).toContain('clusteragentpolicy.p.agentcard.dev');
    expect(invalidStatus(input, problems, []).conditions[1]!.message).toContain(
      'no admission policy is generated',
    );
  });

  it('lists at most ten problems and says how many more', () => {
    const problems = Array.from({ length: 12 }, (_, i) => ({
      path: `p${i}`,
      message: 'bad',
      severity: 'error' as const,
    }));
    const message = problemsMessage(problems);
    expect(message).toContain('12 problems');
    expect(message).toContain('p9: bad');
    expect(message).not.toContain('p10: bad');
    expect(message).toContain('and 2 more');
  });

  it('a valid policy: counts, and Ready from the admission outcome; unchanged status is not rewritten', () => {
    const policy = httpsOnly();
    const counts = judgeCards(policy, [cardSubject(card('bad', 'http://a.example.com'), undefined)]);
    const ok = validStatus(input, policy, { ok: true, names: ['n'] }, counts);
    expect(ok).toMatchObject({
      observedGeneration: 3,
      matched: 1,
      compliant: 0,
      failing: 1,
      notEvaluated: 0,
    });
    expect(ok.conditions.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Accepted', 'True', 'Valid'],
      ['Ready', 'True', 'AdmissionPolicyGenerated'],
    ]);
    const refused = validStatus(
      input,
      policy,
      { ok: false, reason: 'AdmissionPolicyNotWritten', message: 'forbidden' },
      counts,
    );
    expect(refused.conditions[1]).toMatchObject({ status: 'False', reason: 'AdmissionPolicyNotWritten' });
    expect(statusChanged(ok, ok)).toBe(false);
    expect(statusChanged(ok, refused)).toBe(true);
    // The transition time stays while the status does.
    const later = validStatus(
      { ...input, previous: ok, now: new Date('2026-02-01T00:00:00Z') },
      policy,
      { ok: true, names: ['n'] },
      counts,
    );
    expect(later.conditions[1]!.lastTransitionTime).toBe(ok.conditions[1]!.lastTransitionTime);
  });
});
