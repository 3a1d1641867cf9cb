import { describe, expect, it } from 'vitest';
import {
  allowedCallers,
  closedReason,
  networkPolicyDrift,
  networkPolicyName,
  planNetworkPolicy,
  portRangesExcept,
  resolveA2aPorts,
  serviceOfHost,
  type AgentInput,
  type KeyedPolicy,
  type ServiceView,
} from '../../../../operator/controllers/network/plan.ts';
import type { Caller, Facts, Subject } from '../../../../operator/policy/evaluate.ts';
import type { Policy, PolicySpec, Rule } from '../../../../operator/policy/resource.ts';

const svc = (name: string, ports: ServiceView['ports'], extra: Partial<ServiceView> = {}): ServiceView => ({
  name,
  hasSelector: true,
  headless: false,
  ports,
  ...extra,
});

function subject(urls: string[], facts: Facts = {}, labels: Record<string, string> = {}): Subject {
  return {
    name: 'payments',
    namespace: 'pay',
    labels,
    adopted: false,
    facts,
    cards: [
      {
        audience: 'default',
        card: { supportedInterfaces: urls.map((url) => ({ url, protocolBinding: 'JSONRPC' })) },
        path: () => '',
      },
    ],
  };
}

let n = 0;
function policy(mode: PolicySpec['mode'], rules: Rule[], extra: Partial<PolicySpec> = {}): KeyedPolicy {
  n += 1;
  const p: Policy = {
    kind: 'ClusterAgentPolicy',
    name: `p${n}`,
    spec: { mode, rules, ...extra },
  };
  return { key: `ClusterAgentPolicy//p${n}`, policy: p };
}

const callersRule = (callers: Rule['callers'], name = 'callers'): Rule => ({
  name,
  message: 'who may call',
  callers,
});

const known: Caller[] = [
  { name: 'billing', namespace: 'pay' },
  { name: 'ledger', namespace: 'pay' },
  { name: 'billing', namespace: 'finance', namespaceLabels: { team: 'finance' } },
  {
    name: 'audit',
    namespace: 'finance',
    namespaceLabels: { team: 'finance' },
    signerIdentities: ['spiffe://example.org/ns/pay/sa/auditor'],
  },
];

function input(over: Partial<AgentInput> = {}): AgentInput {
  return {
    subject: subject(['http://payments:8080/a2a']),
    uid: 'uid-1',
    policies: [],
    services: [svc('payments', [{ port: 8080, targetPort: 9000 }])],
    callers: known,
    operator: { namespace: 'agentcard-system', labels: { 'app.kubernetes.io/name': 'agentcard-operator' } },
    ...over,
  };
}

/** The ingress rules as "from → ports" lines. */
function shape(plan: ReturnType<typeof planNetworkPolicy>): string[] {
  return (plan.policy?.spec.ingress ?? []).map((rule) => {
    const from = (rule.from ?? [])
      .map((p) => {
        const ns = p.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] ?? '*';
        const pods =
          p.podSelector?.matchExpressions?.map((e) => `${e.operator} ${e.values?.join('|')}`) ??
          Object.entries(p.podSelector?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
        return `${ns}[${pods.join(',')}]`;
      })
      .join(' ');
    const ports = (rule.ports ?? [])
      .map((p) => `${p.protocol}/${p.port ?? '*'}${p.endPort ? `-${p.endPort}` : ''}`)
      .join(' ');
    return `${from || 'everyone'} → ${ports || 'all ports'}`;
  });
}

const CARD = 'everyone → TCP/8095 TCP/8096';
const OPERATOR = 'agentcard-system[app.kubernetes.io/name=agentcard-operator] → all ports';

describe('serviceOfHost', () => {
  it('knows the four names of a Service of the namespace', () => {
    for (const host of [
      'payments',
      'payments.pay',
      'payments.pay.svc',
      'payments.pay.svc.cluster.local',
      'PAYMENTS.pay.svc.',
    ])
      expect(serviceOfHost(host, 'pay')).toBe('payments');
  });

  it('refuses other namespaces, outside names and addresses', () => {
    for (const host of [
      'payments.other',
      'payments.other.svc',
      'agents.example.com',
      '10.0.0.1',
      'payments.pay.svc.example.org',
    ])
      expect(serviceOfHost(host, 'pay')).toBeUndefined();
  });
});

describe('resolveA2aPorts', () => {
  it('maps a Service port to its targetPort, a number or a name, or the port itself', () => {
    const services = [
      svc('a', [{ port: 8080, targetPort: 9000 }]),
      svc('b', [{ port: 80, targetPort: 'a2a' }]),
      svc('c', [{ port: 7000 }]),
      svc('d', [{ port: 443, targetPort: '8443' }]),
    ];
    const r = resolveA2aPorts(
      ['http://a:8080/x', 'http://b.pay.svc/x', 'grpc://c.pay:7000', 'https://d.pay.svc.cluster.local/x'],
      'pay',
      services,
    );
    expect(r.unresolved).toEqual([]);
    expect(r.ports).toEqual([
      { protocol: 'TCP', port: 7000 },
      { protocol: 'TCP', port: 8443 },
      { protocol: 'TCP', port: 9000 },
      { protocol: 'TCP', port: 'a2a' },
    ]);
  });

  it("uses a headless Service's port as the Pod's, and keeps the Service port's protocol", () => {
    const r = resolveA2aPorts(['http://h:8080/', 'http://u:5000/'], 'pay', [
      svc('h', [{ port: 8080, targetPort: 9999 }], { headless: true }),
      svc('u', [{ port: 5000, protocol: 'UDP' }]),
    ]);
    expect(r.ports).toEqual([
      { protocol: 'TCP', port: 8080 },
      { protocol: 'UDP', port: 5000 },
    ]);
  });

  it('reports a Service, a port or a selector not found, and leaves outside hosts out', () => {
    const r = resolveA2aPorts(
      [
        'https://agents.example.com/pay',
        'http://missing:8080/',
        'http://a:9/',
        'http://nosel:80/',
        'foo://a/',
        'not a url',
      ],
      'pay',
      [svc('a', [{ port: 8080 }]), svc('nosel', [{ port: 80 }], { hasSelector: false })],
    );
    expect(r.ports).toEqual([]);
    expect(r.unresolved).toEqual([
      'http://missing:8080/: Service pay/missing not found',
      'http://a:9/: Service pay/a has no port 9',
      'http://nosel:80/: Service pay/nosel has no selector',
      'foo://a/: no port, and scheme foo has no default port',
      'not a url: not an absolute URL',
    ]);
  });
});

describe('portRangesExcept', () => {
  it('covers every other port, in ranges, single ports without endPort', () => {
    expect(portRangesExcept('TCP', [])).toEqual([{ protocol: 'TCP', port: 1, endPort: 65535 }]);
    expect(portRangesExcept('TCP', [9000, 80, 81, 9000])).toEqual([
      { protocol: 'TCP', port: 1, endPort: 79 },
      { protocol: 'TCP', port: 82, endPort: 8999 },
      { protocol: 'TCP', port: 9001, endPort: 65535 },
    ]);
    expect(portRangesExcept('UDP', [1, 3, 65535])).toEqual([
      { protocol: 'UDP', port: 2 },
      { protocol: 'UDP', port: 4, endPort: 65534 },
    ]);
  });
});

describe('allowedCallers', () => {
  it("allows by name (default namespace: the called agent's), even a card not seen yet", () => {
    const got = allowedCallers(
      [{ agentCards: [{ name: 'billing' }, { name: 'new', namespace: 'x' }] }],
      known,
      'pay',
    );
    expect(got.map((c) => `${c.namespace}/${c.name}`)).toEqual(['pay/billing', 'x/new']);
  });

  it('allows by namespace selector and by signer identity with {namespace}', () => {
    const byNs = allowedCallers([{ namespaceSelector: { matchLabels: { team: 'finance' } } }], known, 'pay');
    expect(byNs.map((c) => `${c.namespace}/${c.name}`)).toEqual(['finance/audit', 'finance/billing']);
    const byId = allowedCallers(
      [{ signerIdentities: ['spiffe://example.org/ns/{namespace}/*'] }],
      known,
      'pay',
    );
    expect(byId.map((c) => `${c.namespace}/${c.name}`)).toEqual(['finance/audit']);
  });

  it('keeps only the callers every rule allows (strictest wins)', () => {
    const got = allowedCallers(
      [
        { namespaceSelector: { matchLabels: { team: 'finance' } } },
        { agentCards: [{ name: 'billing', namespace: 'finance' }, { name: 'billing' }] },
      ],
      known,
      'pay',
    );
    expect(got.map((c) => `${c.namespace}/${c.name}`)).toEqual(['finance/billing']);
  });
});

describe('planNetworkPolicy', () => {
  const billingOnly = callersRule({ agentCards: [{ name: 'billing' }] });

  it('generates nothing without an Enforce policy with a callers rule', () => {
    expect(planNetworkPolicy(input()).policy).toBeUndefined();
    for (const mode of ['Audit', 'Warn'] as const)
      expect(planNetworkPolicy(input({ policies: [policy(mode, [billingOnly])] })).policy).toBeUndefined();
    const content: Rule = { name: 'https', message: 'https', content: { allowedSchemes: ['https'] } };
    expect(planNetworkPolicy(input({ policies: [policy('Enforce', [content])] })).policy).toBeUndefined();
    const notSelecting = policy('Enforce', [billingOnly], { selector: { matchLabels: { tier: 'x' } } });
    expect(planNetworkPolicy(input({ policies: [notSelecting] })).policy).toBeUndefined();
  });

  it('opens the card ports to everyone, the A2A port to the callers and the operator, the rest to everyone', () => {
    const p = policy('Enforce', [billingOnly]);
    const plan = planNetworkPolicy(
      input({ policies: [p, policy('Audit', [callersRule({ agentCards: [{ name: 'ledger' }] })])] }),
    );
    expect(plan.closed).toBe(false);
    expect(plan.callersFrom).toEqual([`ClusterAgentPolicy ${p.policy.name}`]);
    expect(shape(plan)).toEqual([
      CARD,
      OPERATOR,
      'pay[In billing] → TCP/9000',
      'everyone → TCP/1-8999 TCP/9001-65535 UDP/*',
    ]);
    const np = plan.policy!;
    expect(np.metadata).toMatchObject({
      name: 'agentcard-payments',
      namespace: 'pay',
      labels: {
        'app.kubernetes.io/managed-by': 'agentcard-operator',
        'agentcard.dev/network-policy': 'true',
      },
      annotations: {
        'agentcard.dev/agent-card-ref': 'pay/payments',
        'agentcard.dev/policies': `ClusterAgentPolicy ${p.policy.name}`,
      },
      ownerReferences: [
        {
          apiVersion: 'agentcard.dev/v1alpha1',
          kind: 'AgentCard',
          name: 'payments',
          uid: 'uid-1',
          controller: true,
        },
      ],
    });
    expect(np.spec.podSelector).toEqual({ matchLabels: { 'agentcard.dev/agent-card': 'payments' } });
    expect(np.spec.policyTypes).toEqual(['Ingress']);
  });

  it('intersects the callers of several Enforce policies (strictest wins), one peer per namespace', () => {
    const a = policy('Enforce', [callersRule({ namespaceSelector: {} })]);
    const b = policy('Enforce', [
      callersRule({
        agentCards: [{ name: 'billing' }, { name: 'ledger' }, { name: 'billing', namespace: 'finance' }],
      }),
    ]);
    expect(shape(planNetworkPolicy(input({ policies: [a] })))[2]).toBe(
      'finance[In audit|billing] pay[In billing|ledger] → TCP/9000',
    );
    const both = planNetworkPolicy(input({ policies: [a, b] }));
    expect(shape(both)[2]).toBe('finance[In billing] pay[In billing|ledger] → TCP/9000');
    const c = policy('Enforce', [
      callersRule({ signerIdentities: ['spiffe://example.org/ns/{namespace}/*'] }),
    ]);
    const none = planNetworkPolicy(input({ policies: [b, c] }));
    // No caller passes both: only the operator reaches the A2A port.
    expect(shape(none)).toEqual([CARD, OPERATOR, 'everyone → TCP/1-8999 TCP/9001-65535 UDP/*']);
    expect(none.policy!.metadata.annotations['agentcard.dev/policies']?.split(', ')).toHaveLength(2);
  });

  it('admits callers resolved by verified signer identity', () => {
    const p = policy('Enforce', [
      callersRule({ signerIdentities: ['spiffe://example.org/ns/{namespace}/sa/auditor'] }),
    ]);
    expect(shape(planNetworkPolicy(input({ policies: [p] })))[2]).toBe('finance[In audit] → TCP/9000');
  });

  it('fails closed when an A2A port is a name or no interface resolves', () => {
    const p = policy('Enforce', [billingOnly]);
    const named = planNetworkPolicy(
      input({ policies: [p], services: [svc('payments', [{ port: 8080, targetPort: 'a2a' }])] }),
    );
    expect(named.closed).toBe(true);
    expect(shape(named)).toEqual([CARD, OPERATOR, 'pay[In billing] → all ports']);
    const outside = planNetworkPolicy(
      input({ policies: [p], subject: subject(['https://agents.example.com/pay']) }),
    );
    expect(shape(outside)).toEqual([CARD, OPERATOR, 'pay[In billing] → all ports']);
    expect(outside.ports?.ports).toEqual([]);
  });

  it('fails closed when an interface names a Service of the namespace whose port is not found, and says why', () => {
    const p = policy('Enforce', [billingOnly]);
    const plan = planNetworkPolicy(
      input({ policies: [p], subject: subject(['http://payments:8080/a2a', 'http://admin:7000/a2a']) }),
    );
    expect(plan.ports?.ports).toEqual([{ protocol: 'TCP', port: 9000 }]);
    expect(shape(plan)).toEqual([CARD, OPERATOR, 'pay[In billing] → all ports']);
    expect(closedReason(plan)).toBe(
      "http://admin:7000/a2a: Service pay/admin not found: every port of the agent's Pods but the card's admits only the allowed callers and the operator",
    );
    const named = planNetworkPolicy(
      input({ policies: [p], services: [svc('payments', [{ port: 8080, targetPort: 'a2a' }])] }),
    );
    expect(closedReason(named)).toMatch(/^the A2A port a2a is a name/);
    const outside = planNetworkPolicy(
      input({ policies: [p], subject: subject(['https://agents.example.com/x']) }),
    );
    expect(closedReason(outside)).toMatch(/^no interface URL names a Service of the namespace:/);
    expect(closedReason(planNetworkPolicy(input({ policies: [p] })))).toBeUndefined();
  });

  it('keeps a card port public even when an interface names it', () => {
    const p = policy('Enforce', [billingOnly]);
    const plan = planNetworkPolicy(
      input({
        policies: [p],
        subject: subject(['http://payments:8080/a2a', 'http://payments:8095/']),
        services: [svc('payments', [{ port: 8080, targetPort: 9000 }, { port: 8095 }])],
      }),
    );
    expect(shape(plan)[2]).toBe('pay[In billing] → TCP/9000');
  });

  it('admits every Pod of the operator namespace when no operator label is known', () => {
    const plan = planNetworkPolicy(
      input({ policies: [policy('Enforce', [billingOnly])], operator: { namespace: 'ops', labels: {} } }),
    );
    expect(plan.policy!.spec.ingress[1]).toEqual({
      from: [
        { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ops' } }, podSelector: {} },
      ],
    });
  });

  describe('quarantine', () => {
    const signed: Rule = { name: 'signed', message: 'sign it', trust: { signed: true } };

    it('admits only the card ports and the operator when a trust rule fails, whatever the callers', () => {
      const q = policy('Enforce', [signed], { quarantine: true });
      const plan = planNetworkPolicy(
        input({
          policies: [q, policy('Enforce', [billingOnly])],
          subject: subject(['http://payments:8080/a2a'], { signed: false }),
        }),
      );
      expect(plan.quarantinedBy).toEqual([`ClusterAgentPolicy ${q.policy.name}`]);
      expect(plan.closed).toBe(true);
      expect(shape(plan)).toEqual([CARD, OPERATOR]);
      expect(closedReason(plan)).toBeUndefined();
    });

    it('quarantines nothing that passes, is not judged yet, is not Enforce, or did not opt in', () => {
      const unsigned = subject(['http://payments:8080/a2a'], { signed: false });
      for (const [p, s] of [
        [
          policy('Enforce', [signed], { quarantine: true }),
          subject(['http://payments:8080/a2a'], { signed: true }),
        ],
        [policy('Enforce', [signed], { quarantine: true }), subject(['http://payments:8080/a2a'], {})],
        [policy('Warn', [signed], { quarantine: true }), unsigned],
        [policy('Enforce', [signed]), unsigned],
      ] as const) {
        const plan = planNetworkPolicy(input({ policies: [p], subject: s }));
        expect(plan.quarantinedBy).toEqual([]);
        expect(plan.policy).toBeUndefined();
      }
    });
  });
});

describe('networkPolicyDrift and networkPolicyName', () => {
  const want = planNetworkPolicy(
    input({ policies: [policy('Enforce', [callersRule({ agentCards: [{ name: 'billing' }] })])] }),
  ).policy!;

  it('sees no drift in what the API server adds, and drift in what a hand adds or removes', () => {
    const live = structuredClone(want) as unknown as {
      metadata: Record<string, unknown>;
      spec: { ingress: unknown[] };
    };
    live.metadata.resourceVersion = '7';
    live.metadata.labels = { ...(live.metadata.labels as object), extra: 'x' };
    expect(networkPolicyDrift(live, want)).toBe(false);
    expect(
      networkPolicyDrift({ ...live, spec: { ...live.spec, ingress: [...live.spec.ingress, {}] } }, want),
    ).toBe(true);
    expect(
      networkPolicyDrift({ ...live, spec: { ...live.spec, ingress: live.spec.ingress.slice(1) } }, want),
    ).toBe(true);
    expect(networkPolicyDrift({ ...live, metadata: { ...live.metadata, annotations: {} } }, want)).toBe(true);
  });

  it('names the policy after the card, hashed when too long', () => {
    expect(networkPolicyName('payments')).toBe('agentcard-payments');
    const long = networkPolicyName('a'.repeat(253));
    expect(long.length).toBeLessThanOrEqual(253);
    expect(long).toMatch(/-[0-9a-f]{16}$/);
    expect(networkPolicyName('a'.repeat(253))).toBe(long);
  });
});
