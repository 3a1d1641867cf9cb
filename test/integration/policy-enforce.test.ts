// Policies in the AgentCard's own reconcile, on the real API server with the operator in process
// (--policies): a ClusterAgentPolicy in Enforce mode with a rule only the operator judges
// (maxCardBytes: CEL cannot serialize a card, so admission lets the card in) keeps the card from
// ever being published, and its PolicyCompliant condition names the rule; switched to Audit,
// the policy change alone wakes the card: it is published, the condition stays False, and a
// Warning Event on the AgentCard names the rule. An AgentCatalog (requireReady: false) leaves the
// card out while the Enforce policy fails it, and lists it under Audit. The policy is narrowed to
// this file's namespace.
import { CustomObjectsApi } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { configMapName } from '../../operator/api/names.ts';
import { kubeconfigPath } from '../support/cluster.ts';
import {
  condition,
  installPolicyCrds,
  sampleCard,
  useOperatorInNamespace,
  waitFor,
} from '../support/operator.ts';
import { runTool } from '../support/tools.ts';
import { useClusterLock } from '../support/cluster-lock.ts';

// Beside any file but the others of its family: see vitest.config.ts.
useClusterLock('cluster-policies');

const { kc, api, ns } = useOperatorInNamespace('policy-enf', {
  catalogs: true,
  flags: ['--policies', '--cluster-policies'],
  before: () => installPolicyCrds(kc),
  after: () => deletePolicy(),
});
const custom = kc.makeApiClient(CustomObjectsApi);
const GROUP = { group: 'agentcard.dev', version: 'v1alpha1' };
const MESSAGE = 'A card stays under 256 bytes';

const policyName = () => `pe-${ns.name}`.slice(0, 63);
const policy = (mode: string) => ({
  apiVersion: 'agentcard.dev/v1alpha1',
  kind: 'ClusterAgentPolicy',
  metadata: { name: policyName() },
  spec: {
    mode,
    namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns.name } },
    rules: [{ name: 'small', message: MESSAGE, content: { maxCardBytes: 256 } }],
  },
});
const apply = (obj: unknown) =>
  runTool('kubectl', ['apply', '--server-side', '-f', '-'], {
    kubeconfig: kubeconfigPath(),
    input: JSON.stringify(obj),
  });

async function deletePolicy(): Promise<void> {
  await custom
    .deleteClusterCustomObject({ ...GROUP, plural: 'clusteragentpolicies', name: policyName() })
    .catch(() => undefined);
}

/** The policy as the operator's cache sees it: Accepted for its current generation. */
async function accepted(): Promise<void> {
  await waitFor('the policy to be Accepted', async () => {
    const p = (await custom.getClusterCustomObject({
      ...GROUP,
      plural: 'clusteragentpolicies',
      name: policyName(),
    })) as {
      metadata: { generation: number };
      status?: { observedGeneration?: number; conditions?: Array<{ type: string; status: string }> };
    };
    return p.status?.observedGeneration === p.metadata.generation &&
      p.status.conditions?.some((c) => c.type === 'Accepted' && c.status === 'True')
      ? true
      : undefined;
  });
}

interface CatalogStatus {
  entries?: number;
  skipped?: string[];
}
const catalogStatus = async () =>
  (
    (await custom.getNamespacedCustomObject({
      ...GROUP,
      plural: 'agentcatalogs',
      namespace: ns.name,
      name: 'all',
    })) as { status?: CatalogStatus }
  ).status ?? {};

describe('a policy in the AgentCard reconcile', () => {
  it('Enforce: never published, the condition names the rule; Audit: published, with an Event', async () => {
    const catalog = {
      apiVersion: 'agentcard.dev/v1alpha1',
      kind: 'AgentCatalog',
      metadata: { name: 'all', namespace: ns.name },
      spec: { publisher: 'example.com', requireReady: false },
    };
    expect((await apply(catalog)).code).toBe(0);
    expect((await apply(policy('Enforce'))).code).toBe(0);
    await accepted();
    await api.createCard(ns.name, 'big', { card: sampleCard('1.0.0') });

    const held = await waitFor('the card held by the policy', async () => {
      const card = await api.getCard(ns.name, 'big');
      return condition(card, 'Published')?.reason === 'PolicyViolation' ? card : undefined;
    });
    expect(condition(held, 'Published')).toMatchObject({ status: 'False' });
    expect(condition(held, 'Published')!.message).toContain('nothing is published yet');
    expect(condition(held, 'Ready')?.status).toBe('False');
    const compliant = condition(held, 'PolicyCompliant')!;
    expect(compliant).toMatchObject({ status: 'False', reason: 'PolicyEnforced' });
    expect(compliant.message).toContain(
      `ClusterAgentPolicy ${policyName()}, rule small (Enforce): ${MESSAGE}`,
    );
    expect(await api.getConfigMap(ns.name, configMapName('big'))).toBeUndefined();
    const withheld = await waitFor('the catalog to leave the card out', async () => {
      const status = await catalogStatus();
      return status.skipped?.some((s) => s.startsWith(`${ns.name}/big: withheld by policy`))
        ? status
        : undefined;
    });
    expect(withheld.entries ?? 0).toBe(0);

    // Only the policy changes: the card is judged again, published, and still reported.
    expect((await apply(policy('Audit'))).code).toBe(0);
    const published = await waitFor('the card published under Audit', async () => {
      const card = await api.getCard(ns.name, 'big');
      return condition(card, 'Published')?.status === 'True' ? card : undefined;
    });
    expect(condition(published, 'PolicyCompliant')).toMatchObject({
      status: 'False',
      reason: 'PolicyViolation',
    });
    expect(condition(published, 'PolicyCompliant')!.message).toContain('rule small (Audit)');
    expect(await api.getConfigMap(ns.name, configMapName('big'))).toBeDefined();
    const events = await waitFor('the PolicyViolation Event', async () => {
      const list = await api.events(ns.name, 'big');
      return list.some((e) => e.reason === 'PolicyViolation') ? list : undefined;
    });
    await waitFor('the catalog to list the card', async () => (await catalogStatus()).entries === 1);
    const violation = events.find((e) => e.reason === 'PolicyViolation')!;
    expect(violation.type).toBe('Warning');
    expect(violation.message).toContain('rule small');
  });
});
