// The network controller on the real API server, with the operator in process
// (--policies --network-policies): an AgentPolicy in Enforce mode with a callers rule gets the
// agent a NetworkPolicy selecting its Pods by label, the card's ports open to everyone, the A2A
// port (an interface's Service port mapped to its targetPort) admitting only the allowed caller
// and the operator, every other port open; it follows the policy's changes, is put back when
// edited by hand, costs no write while nothing changes, goes with the policy (or in Audit
// mode), keeps its last valid version while the policy is invalid, and goes with the card.
// Quarantine: a card that fails a trust rule of a quarantine policy admits only the card's
// ports and the operator. (That a NetworkPolicy implementation enforces these is the node's test.)
import { CoreV1Api, NetworkingV1Api, type V1NetworkPolicy } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { kubeconfigPath } from '../support/cluster.ts';
import {
  agentCard,
  installPolicyCrds,
  metricValue,
  operatorMetrics,
  sampleCard,
  sleep,
  useOperatorInNamespace,
  waitFor,
} from '../support/operator.ts';
import { runTool } from '../support/tools.ts';

const OPERATOR_NS = 'agentcard-system';
const { kc, ns, op } = useOperatorInNamespace('netpol', {
  flags: [
    '--policies',
    '--network-policies',
    `--operator-namespace=${OPERATOR_NS}`,
    '--operator-pod-label=app.kubernetes.io/name=agentcard-operator',
  ],
  before: () => installPolicyCrds(kc),
});
const net = kc.makeApiClient(NetworkingV1Api);
const core = kc.makeApiClient(CoreV1Api);
const kubectl = (args: string[], input?: string) =>
  runTool('kubectl', args, { kubeconfig: kubeconfigPath(), ...(input === undefined ? {} : { input }) });
const apply = async (obj: unknown) => {
  const r = await kubectl(['apply', '--server-side', '--force-conflicts', '-f', '-'], JSON.stringify(obj));
  if (r.code !== 0) throw new Error(r.stderr);
};

const card = (name: string, url: string, labels: Record<string, string> = {}) => ({
  ...agentCard(ns.name, name, {
    card: sampleCard('1.0.0', {
      supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    }),
  }),
  metadata: { name, namespace: ns.name, labels },
});

const callersPolicy = (mode: string, callers: string[]) => ({
  apiVersion: 'agentcard.dev/v1alpha1',
  kind: 'AgentPolicy',
  metadata: { name: 'payments-callers', namespace: ns.name },
  spec: {
    mode,
    selector: { matchLabels: { tier: 'payments' } },
    rules: [
      {
        name: 'billing-only',
        message: 'Only billing may call payments',
        callers: { agentCards: callers.map((name) => ({ name })) },
      },
    ],
  },
});

const read = (name: string) =>
  net.readNamespacedNetworkPolicy({ name, namespace: ns.name }).then(
    (np) => np,
    () => undefined,
  );

/** The ingress rules as "from → ports" lines, easy to compare. */
function shape(np: V1NetworkPolicy | undefined): string[] {
  return (np?.spec?.ingress ?? []).map((rule) => {
    const from = (rule._from ?? [])
      .map((p) => {
        const nsName = p.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] ?? '*';
        const pods =
          p.podSelector?.matchExpressions?.map((e) => `${e.key} ${e.operator} ${e.values?.join('|')}`) ??
          Object.entries(p.podSelector?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
        return `${nsName}[${pods.join(',')}]`;
      })
      .join(' ');
    const ports = (rule.ports ?? [])
      .map((p) => `${p.protocol}/${p.port ?? '*'}${p.endPort ? `-${p.endPort}` : ''}`)
      .join(' ');
    return `${from || 'everyone'} → ${ports || 'all ports'}`;
  });
}

describe('NetworkPolicies from callers rules', () => {
  it('generates, updates, repairs and deletes the agent NetworkPolicy of an Enforce callers rule', async () => {
    await core.createNamespacedService({
      namespace: ns.name,
      body: {
        metadata: { name: 'payments' },
        spec: { selector: { app: 'payments' }, ports: [{ name: 'a2a', port: 8080, targetPort: 9000 }] },
      },
    });
    await apply(card('payments', `http://payments.${ns.name}.svc:8080/a2a`, { tier: 'payments' }));
    await apply(card('billing', 'http://billing:8080/a2a'));
    await apply(callersPolicy('Enforce', ['billing']));

    const np = await waitFor('the NetworkPolicy', () => read('agentcard-payments'), 30_000);
    expect(np.spec?.podSelector).toEqual({ matchLabels: { 'agentcard.dev/agent-card': 'payments' } });
    expect(np.spec?.policyTypes).toEqual(['Ingress']);
    expect(np.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'AgentCard', name: 'payments' });
    expect(np.metadata?.annotations?.['agentcard.dev/policies']).toBe(
      `AgentPolicy ${ns.name}/payments-callers`,
    );
    expect(shape(np)).toEqual([
      'everyone → TCP/8095 TCP/8096',
      `${OPERATOR_NS}[app.kubernetes.io/name=agentcard-operator] → all ports`,
      `${ns.name}[agentcard.dev/agent-card In billing] → TCP/9000`,
      'everyone → TCP/1-8999 TCP/9001-65535 UDP/*',
    ]);
    // billing itself is no callee of an Enforce callers rule: nothing generated for it.
    expect(await read('agentcard-billing')).toBeUndefined();

    // Steady state: no write while nothing changes.
    const writes = async () =>
      metricValue(await operatorMetrics(op.metricsPort()), 'agentcard_api_writes_total', {
        resource: 'network-networkpolicies',
      });
    const before = await writes();
    await sleep(3_000);
    expect(await writes()).toBe(before);
    expect((await read('agentcard-payments'))?.metadata?.resourceVersion).toBe(np.metadata?.resourceVersion);

    // The policy changes: a second allowed caller.
    await apply(callersPolicy('Enforce', ['billing', 'ledger']));
    await waitFor(
      'the NetworkPolicy to admit ledger',
      async () => shape(await read('agentcard-payments'))[2]?.includes('billing|ledger'),
      30_000,
    );

    // Edited by hand: put back.
    const hand = await kubectl([
      'patch',
      'networkpolicy',
      'agentcard-payments',
      '-n',
      ns.name,
      '--type=json',
      '-p',
      JSON.stringify([{ op: 'replace', path: '/spec/ingress', value: [{}] }]),
    ]);
    expect(hand.code).toBe(0);
    await waitFor(
      'the NetworkPolicy put back',
      async () => shape(await read('agentcard-payments')).length === 4,
      30_000,
    );

    // Audit mode generates nothing on the network.
    await apply(callersPolicy('Audit', ['billing']));
    await waitFor(
      'the NetworkPolicy to go in Audit mode',
      async () => !(await read('agentcard-payments')),
      30_000,
    );
    await apply(callersPolicy('Enforce', ['billing']));
    await waitFor('the NetworkPolicy again', () => read('agentcard-payments'), 30_000);

    // Made invalid (the CRD accepts it, the engine does not): its last valid version stays in force.
    const again = await read('agentcard-payments');
    const invalid = callersPolicy('Enforce', ['billing']);
    invalid.spec.rules.push({
      name: 'team',
      message: 'x',
      trust: { signerIdentities: ['spiffe://example.org/{team}/*'] },
    } as never);
    await apply(invalid);
    await sleep(2_000);
    expect((await read('agentcard-payments'))?.metadata?.resourceVersion).toBe(
      again?.metadata?.resourceVersion,
    );
    await apply(callersPolicy('Enforce', ['billing']));

    // Deleting the policy deletes it.
    expect((await kubectl(['delete', 'agentpolicy', 'payments-callers', '-n', ns.name])).code).toBe(0);
    await waitFor(
      'the NetworkPolicy to go with the policy',
      async () => !(await read('agentcard-payments')),
      30_000,
    );

    // Deleting the card deletes it.
    await apply(callersPolicy('Enforce', ['billing']));
    await waitFor('the NetworkPolicy once more', () => read('agentcard-payments'), 30_000);
    expect((await kubectl(['delete', 'agentcard', 'payments', '-n', ns.name])).code).toBe(0);
    await waitFor(
      'the NetworkPolicy to go with the card',
      async () => !(await read('agentcard-payments')),
      30_000,
    );
    expect((await kubectl(['delete', 'agentpolicy', 'payments-callers', '-n', ns.name])).code).toBe(0);
    expect(op.logs.filter((l) => /\b403\b|forbidden/i.test(l))).toEqual([]);
  }, 120_000);

  it('quarantines a card that fails a trust rule of an Enforce quarantine policy', async () => {
    // The card exists before the policy: in Enforce mode its admission policy refuses an unsigned
    // card's creation, not one already there.
    await apply(card('rogue', 'http://rogue:8080/a2a', { tier: 'untrusted' }));
    await apply({
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'AgentPolicy',
      metadata: { name: 'signed-or-quarantined', namespace: ns.name },
      spec: {
        mode: 'Enforce',
        quarantine: true,
        selector: { matchLabels: { tier: 'untrusted' } },
        rules: [{ name: 'signed', message: 'Cards must be signed', trust: { signed: true } }],
      },
    });
    const np = await waitFor('the quarantine NetworkPolicy', () => read('agentcard-rogue'), 30_000);
    expect(shape(np)).toEqual([
      'everyone → TCP/8095 TCP/8096',
      `${OPERATOR_NS}[app.kubernetes.io/name=agentcard-operator] → all ports`,
    ]);
    await waitFor(
      'the quarantine metric',
      async () => metricValue(await operatorMetrics(op.metricsPort()), 'agentcard_quarantined_agents') === 1,
      10_000,
    );
    const events = await waitFor(
      'the Quarantined Event',
      async () => {
        const r = await kubectl([
          'get',
          'events',
          '-n',
          ns.name,
          '--field-selector',
          'reason=Quarantined',
          '-o',
          'json',
        ]);
        const items = (
          JSON.parse(r.stdout) as {
            items: Array<{ regarding?: { name?: string }; involvedObject?: { name?: string } }>;
          }
        ).items;
        return items.length ? items : undefined;
      },
      15_000,
    );
    expect(events[0]?.involvedObject?.name ?? events[0]?.regarding?.name).toBe('rogue');

    expect((await kubectl(['delete', 'agentpolicy', 'signed-or-quarantined', '-n', ns.name])).code).toBe(0);
    await waitFor('the quarantine to be lifted', async () => !(await read('agentcard-rogue')), 30_000);
  }, 90_000);
});
