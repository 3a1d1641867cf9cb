/**
 * The policies in an AgentCard's reconcile (policy-gate.ts through planReconcile): the
 * PolicyCompliant condition, the Events, and the Enforce hold that keeps the last good card.
 */
import { describe, expect, it } from 'vitest';
import { generateSigningJwk } from '../../../../operator/card/keygen.ts';
import { planReconcile, type PlanInput } from '../../../../operator/controllers/agentcard/plan.ts';
import {
  enforceHold,
  judgeCard,
  MAX_POLICY_MESSAGE,
  policyCondition,
  publishSubject,
} from '../../../../operator/controllers/agentcard/policy-gate.ts';
import { disabledVerdict } from '../../../../operator/controllers/agentcard/probes.ts';
import type { AgentCardObject } from '../../../../operator/api/objects.ts';
import { parsePolicy } from '../../../../operator/policy/parse.ts';
import type { Mode, Policy } from '../../../../operator/policy/resource.ts';
import type { SecretView } from '../../../../operator/signing/keys.ts';
import { sampleCard } from '../../../support/cards.ts';
import { createRoot, issueLeaf, keyPem, tlsSecretEntries } from '../../../support/signing-certs.ts';

const now = new Date('2030-01-01T00:00:00Z');

function clusterPolicy(name: string, mode: Mode, rules: unknown[], selector?: unknown): Policy {
  const parsed = parsePolicy({
    apiVersion: 'agentcard.dev/v1alpha1',
    kind: 'ClusterAgentPolicy',
    metadata: { name },
    spec: { mode, rules, ...(selector ? { selector } : {}) },
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return parsed.policy;
}

const small = { name: 'small', message: 'Cards stay small', content: { maxCardBytes: 256 } };
const https = { name: 'https-only', message: 'Use https', content: { allowedSchemes: ['https'] } };
const ready = { name: 'ready', message: 'Ready first', reachability: { readyBeforeListed: true } };
const callers = { name: 'callers', message: 'Only team', callers: { agentCards: [{ name: 'x' }] } };

const key = async (): Promise<SecretView> => ({
  data: { jwk: Buffer.from(JSON.stringify(await generateSigningJwk('ES256', 'k1'))).toString('base64') },
  labelled: true,
});

const resource = (
  card: Record<string, unknown>,
  status?: unknown,
  labels: Record<string, string> = {},
): AgentCardObject =>
  ({
    metadata: { name: 'weather', namespace: 'agents', uid: 'u1', generation: 1, labels },
    spec: { card, signing: { keys: [{ secretRef: { name: 'key', key: 'jwk' } }] } },
    status,
  }) as AgentCardObject;

const input = (
  res: AgentCardObject,
  secret: SecretView,
  policies: Policy[] | undefined,
  live?: PlanInput['liveConfigMap'],
): PlanInput => ({
  resource: res,
  secrets: new Map([['key', secret]]),
  liveConfigMap: live,
  interfaces: () => disabledVerdict(1, 'probes are off'),
  now,
  ...(policies ? { policy: { policies } } : {}),
});

const condition = (plan: { status: { conditions?: Array<{ type: string }> } }, type: string) =>
  plan.status.conditions?.find((c) => c.type === type) as
    { type: string; status: string; reason: string; message: string } | undefined;

describe('planReconcile with policies', () => {
  it('without --policies nothing changes: no condition, published as before', async () => {
    const secret = await key();
    const plan = await planReconcile(input(resource(sampleCard('1.0.0')), secret, undefined));
    expect(condition(plan, 'PolicyCompliant')).toBeUndefined();
    expect(plan.configMap).toBeDefined();
  });

  it('a card no policy selects has no condition', async () => {
    const secret = await key();
    const other = clusterPolicy('p', 'Enforce', [small], { matchLabels: { team: 'other' } });
    const plan = await planReconcile(input(resource(sampleCard('1.0.0')), secret, [other]));
    expect(condition(plan, 'PolicyCompliant')).toBeUndefined();
    expect(plan.configMap).toBeDefined();
  });

  it('Audit: published, PolicyCompliant=False naming the rule, one Event, not repeated', async () => {
    const secret = await key();
    const audit = clusterPolicy('platform', 'Audit', [small]);
    const first = await planReconcile(input(resource(sampleCard('1.0.0')), secret, [audit]));
    expect(first.configMap).toBeDefined();
    expect(condition(first, 'Published')).toMatchObject({ status: 'True' });
    const compliant = condition(first, 'PolicyCompliant')!;
    expect(compliant).toMatchObject({ status: 'False', reason: 'PolicyViolation' });
    expect(compliant.message).toContain('ClusterAgentPolicy platform, rule small (Audit): Cards stay small');
    expect(compliant.message).toMatch(/the card is \d+ bytes; the limit is 256/);
    expect(first.events.filter((e) => e.reason === 'PolicyViolation')).toHaveLength(1);
    expect(first.ready).toBe('True');

    const again = await planReconcile(
      input(resource(sampleCard('1.0.0'), first.status), secret, [audit], first.configMap),
    );
    expect(again.events.filter((e) => e.reason === 'PolicyViolation')).toEqual([]);
    expect(again.statusChanged).toBe(false);

    // The policy deleted: the condition goes; --policies off: it goes too.
    for (const policies of [[], undefined]) {
      const gone = await planReconcile(
        input(resource(sampleCard('1.0.0'), first.status), secret, policies, first.configMap),
      );
      expect(condition(gone, 'PolicyCompliant')).toBeUndefined();
    }
  });

  it('Enforce: the failing card is held, the last good card stays published', async () => {
    const secret = await key();
    const first = await planReconcile(input(resource(sampleCard('1.0.0')), secret, []));
    expect(first.configMap).toBeDefined();
    const enforce = clusterPolicy('platform', 'Enforce', [small]);
    const held = await planReconcile(
      input(resource(sampleCard('1.1.0'), first.status), secret, [enforce], first.configMap),
    );
    expect(held.configMap).toBeUndefined();
    expect(held.status.card).toEqual(first.status.card);
    const published = condition(held, 'Published')!;
    expect(published).toMatchObject({ status: 'False', reason: 'PolicyViolation' });
    expect(published.message).toContain('rule small (Enforce)');
    expect(published.message).toContain('the last good card stays published');
    expect(held.ready).toBe('False');
    expect(condition(held, 'PolicyCompliant')).toMatchObject({ status: 'False', reason: 'PolicyEnforced' });
    expect(held.events.map((e) => `${e.type} ${e.reason}`)).toEqual([
      'Warning PolicyViolation',
      'Warning PolicyViolation',
    ]);
  });

  it('Enforce: a certificate identity its chain does not prove is held, and the report says so', async () => {
    // The Secret is valid for signing (no ca.crt: nothing to check the chain against), and its
    // leaf claims the card's own namespace; a certificate issued to the Secret's CA is accepted.
    const self = await createRoot('self');
    const claimed = await issueLeaf(self, { uri: 'spiffe://example.org/ns/agents/sa/default' });
    const tls = (entries: Record<string, string>): SecretView => ({
      data: Object.fromEntries(
        Object.entries(entries).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
      ),
      labelled: true,
    });
    const own = {
      name: 'own-namespace',
      message: 'Signed by its own namespace',
      trust: { signerIdentities: ['spiffe://example.org/ns/{namespace}/*'] },
    };
    const certCard = {
      metadata: { name: 'weather', namespace: 'agents', uid: 'u1', generation: 1 },
      spec: { card: sampleCard('1.0.0'), signing: { keys: [{ certificate: { secretName: 'tls' } }] } },
    } as AgentCardObject;
    const plan = async (secret: SecretView) =>
      planReconcile({
        ...input(certCard, secret, [clusterPolicy('p', 'Enforce', [own])]),
        secrets: new Map([['tls', secret]]),
        now: new Date(),
      });

    const held = await plan(
      tls({ 'tls.crt': claimed.cert.toString('pem'), 'tls.key': await keyPem(claimed.keys) }),
    );
    expect(condition(held, 'Signed')).toMatchObject({ status: 'True' });
    expect(held.configMap).toBeUndefined();
    const compliant = condition(held, 'PolicyCompliant')!;
    expect(compliant).toMatchObject({ status: 'False', reason: 'PolicyEnforced' });
    expect(compliant.message).toContain('rule own-namespace (Enforce)');
    expect(compliant.message).toContain('signed by no verified certificate identity');
    expect(compliant.message).toContain('its Secret has no ca.crt');

    const issued = await tlsSecretEntries({ uri: 'spiffe://example.org/ns/agents/sa/default' });
    const published = await plan(
      tls({ 'tls.crt': issued['tls.crt'], 'tls.key': issued['tls.key'], 'ca.crt': issued['ca.crt'] }),
    );
    expect(published.configMap).toBeDefined();
    expect(condition(published, 'PolicyCompliant')).toMatchObject({ status: 'True' });
    // The status says which identity is proven: the policy controller's counts judge by it.
    expect(published.status.signatures?.[0]?.certificate).toMatchObject({
      identities: ['spiffe://example.org/ns/agents/sa/default'],
      verifiedIdentity: 'spiffe://example.org/ns/agents/sa/default',
    });
  });

  it('Enforce on a compliant card: published, PolicyCompliant=True', async () => {
    const secret = await key();
    const enforce = clusterPolicy('platform', 'Enforce', [https]);
    const plan = await planReconcile(input(resource(sampleCard('1.0.0')), secret, [enforce]));
    expect(plan.configMap).toBeDefined();
    expect(condition(plan, 'PolicyCompliant')).toMatchObject({
      status: 'True',
      reason: 'Compliant',
      message: 'complies with ClusterAgentPolicy platform',
    });
  });

  it('the strictest mode wins: a rule failing in Audit and in Enforce holds the card', async () => {
    const secret = await key();
    const plan = await planReconcile(
      input(resource(sampleCard('1.0.0')), secret, [
        clusterPolicy('audit', 'Audit', [small]),
        clusterPolicy('enforce', 'Enforce', [small]),
      ]),
    );
    expect(plan.configMap).toBeUndefined();
    expect(condition(plan, 'PolicyCompliant')!.message).toContain(
      'ClusterAgentPolicy enforce, rule small (Enforce)',
    );
  });

  it('readyBeforeListed never holds publishing; it is judged with the Ready this reconcile derives', async () => {
    const secret = await key();
    const enforce = clusterPolicy('platform', 'Enforce', [ready, callers]);
    const plan = await planReconcile(input(resource(sampleCard('1.0.0')), secret, [enforce]));
    expect(plan.configMap).toBeDefined();
    expect(plan.ready).toBe('True');
    // Ready=True, and the callers rule is not about the card: compliant.
    expect(condition(plan, 'PolicyCompliant')).toMatchObject({ status: 'True' });

    // Not Ready (the probes found an interface down): published all the same, and withheld
    // from catalogs (PolicyEnforced).
    const down = await planReconcile({
      ...input(resource(sampleCard('1.0.0')), secret, [enforce]),
      interfaces: () => ({
        condition: {
          status: 'False',
          reason: 'ConnectionFailed',
          message: '0/1 reachable',
          observedGeneration: 1,
        },
      }),
    });
    expect(down.configMap).toBeDefined();
    expect(down.ready).toBe('False');
    expect(condition(down, 'PolicyCompliant')).toMatchObject({ status: 'False', reason: 'PolicyEnforced' });
    expect(condition(down, 'PolicyCompliant')!.message).toContain('rule ready (Enforce)');
  });
});

describe('policy-gate', () => {
  // Any policy that selects the card has its cards rendered for the engine.
  const subject = (facts = {}) =>
    publishSubject([clusterPolicy('any', 'Audit', [https])], {
      name: 'weather',
      namespace: 'agents',
      adopted: false,
      spec: { card: sampleCard('1.0.0') } as never,
      card: sampleCard('1.0.0') as never,
      bytes: 10_000,
      facts,
    }).subject;

  it('renders nothing and judges nothing when no policy selects the card', () => {
    const other = clusterPolicy('p', 'Enforce', [small], { matchLabels: { team: 'other' } });
    const judged = publishSubject([other], {
      name: 'weather',
      namespace: 'agents',
      adopted: false,
      spec: { card: sampleCard('1.0.0') } as never,
      card: sampleCard('1.0.0') as never,
      bytes: 10_000,
      facts: {},
    });
    expect(judged.policies).toEqual([]);
    expect(judged.subject.cards).toBeUndefined();
  });

  it('a fact not known is Unknown, never a pass; callers rules are left out', () => {
    const results = judgeCard([clusterPolicy('p', 'Enforce', [ready, callers])], subject());
    expect(results[0]!.rules.map((r) => r.rule)).toEqual(['ready']);
    expect(policyCondition(results)).toMatchObject({ status: 'Unknown', reason: 'RulesNotEvaluated' });
    expect(policyCondition(results)!.message).toContain('ClusterAgentPolicy p, rule ready:');
    expect(enforceHold(results)).toBeUndefined();
  });

  it('a signer identity outside the namespace fails an Enforce trust rule', () => {
    const own = {
      name: 'own-namespace',
      message: 'Signed in its own namespace',
      trust: { signerIdentities: ['spiffe://example.org/ns/{namespace}/*'] },
    };
    const policies = [clusterPolicy('p', 'Enforce', [own])];
    const bad = judgeCard(
      policies,
      subject({ signed: true, signerIdentities: ['spiffe://example.org/ns/other/sa/x'] }),
    );
    expect(enforceHold(bad)).toContain('rule own-namespace (Enforce)');
    const good = judgeCard(
      policies,
      subject({ signed: true, signerIdentities: ['spiffe://example.org/ns/agents/sa/x'] }),
    );
    expect(enforceHold(good)).toBeUndefined();
    expect(policyCondition(good)).toMatchObject({ status: 'True' });
  });

  it('bounds the message', () => {
    const rules = Array.from({ length: 40 }, (_, i) => ({
      ...small,
      name: `small-${i}`,
      message: 'x'.repeat(200),
    }));
    const results = judgeCard([clusterPolicy('p', 'Audit', rules)], subject());
    const message = policyCondition(results)!.message;
    expect(message.length).toBeLessThanOrEqual(MAX_POLICY_MESSAGE);
    expect(message).toMatch(/^fails 40 rules: /);
  });
});
