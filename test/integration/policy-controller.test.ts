// The policy controller on the real API server, with the operator in process (--policies):
// - a ClusterAgentPolicy in Enforce mode with an https-only rule: the operator generates its
//   ValidatingAdmissionPolicy and binding, and `kubectl create` of an AgentCard with an http
//   interface is refused with the rule's message;
// - the same policy in Audit mode: the card is admitted, and the policy's status counts it
//   failing (and agentcard_policy_violations says so);
// - deleting the policy deletes what was generated;
// - an AgentPolicy the CRD accepts but the engine refuses ({team} is not a variable) gets
//   Accepted=False naming the field and generates nothing; fixed, it generates its admission
//   policy; made invalid again, that one is kept; deleted (it cannot own a cluster-scoped object),
//   the operator deletes it.
// Every policy is narrowed to this file's namespace: the control plane is shared.
import { AdmissionregistrationV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { kubeconfigPath } from '../support/cluster.ts';
import {
  agentCard,
  installPolicyCrds,
  sampleCard,
  useOperatorInNamespace,
  waitFor,
} from '../support/operator.ts';
import { runTool } from '../support/tools.ts';
import { useClusterLock } from '../support/cluster-lock.ts';

// Beside any file but the others of its family: see vitest.config.ts.
useClusterLock('cluster-policies');

const { kc, ns, op } = useOperatorInNamespace('policy-ctl', {
  flags: ['--policies', '--cluster-policies'],
  before: () => installPolicyCrds(kc),
});
const custom = kc.makeApiClient(CustomObjectsApi);
const admission = kc.makeApiClient(AdmissionregistrationV1Api);

const kubectl = (args: string[], input?: string) =>
  runTool('kubectl', args, { kubeconfig: kubeconfigPath(), ...(input === undefined ? {} : { input }) });

const MESSAGE = 'Every A2A interface must use https';
const GROUP = { group: 'agentcard.dev', version: 'v1alpha1' };

interface PolicyLive {
  metadata: { generation: number; uid: string };
  status?: {
    observedGeneration?: number;
    matched?: number;
    compliant?: number;
    failing?: number;
    conditions?: Array<{ type: string; status: string; reason: string; message: string }>;
  };
}

const clusterName = () => `pc-${ns.name}`.slice(0, 63);
const clusterVap = () => `clusteragentpolicy.${clusterName()}.agentcard.dev`;

function clusterPolicy(mode: string) {
  return {
    apiVersion: 'agentcard.dev/v1alpha1',
    kind: 'ClusterAgentPolicy',
    metadata: { name: clusterName() },
    spec: {
      mode,
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns.name } },
      rules: [{ name: 'https-only', message: MESSAGE, content: { allowedSchemes: ['https'] } }],
    },
  };
}

const apply = (obj: unknown) => kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify(obj));

const readCluster = () =>
  custom.getClusterCustomObject({
    ...GROUP,
    plural: 'clusteragentpolicies',
    name: clusterName(),
  }) as Promise<PolicyLive>;
const readNamespaced = (name: string) =>
  custom.getNamespacedCustomObject({
    ...GROUP,
    plural: 'agentpolicies',
    namespace: ns.name,
    name,
  }) as Promise<PolicyLive>;

const condition = (p: PolicyLive, type: string) => p.status?.conditions?.find((c) => c.type === type);
/** The policy's status for its current generation, once `ok` says it is what the test waits for. */
const current = (p: PolicyLive) => p.status?.observedGeneration === p.metadata.generation;

async function exists(kind: 'policy' | 'binding', name: string): Promise<boolean> {
  try {
    if (kind === 'policy') await admission.readValidatingAdmissionPolicy({ name });
    else await admission.readValidatingAdmissionPolicyBinding({ name });
    return true;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return false;
    throw err;
  }
}

let n = 0;
const createCard = (url: string) => {
  const name = `card-${n++}`;
  const card = agentCard(ns.name, name, {
    card: sampleCard('1.0.0', {
      supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
    }),
  });
  return kubectl(['create', '-f', '-'], JSON.stringify(card)).then((r) => {
    if (r.code === 0) (url.startsWith('http:') ? created.http : created.https).push(name);
    return { ...r, name };
  });
};
/**
 * The cards the API server admitted. Until the admission plugin has loaded a new policy (a few
 * seconds), an http card is admitted even in Enforce mode, so the tries of the first test may add
 * some: the counts follow what was admitted, not a fixed number.
 */
const created = { http: [] as string[], https: [] as string[] };

async function metrics(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${op.metricsPort()}/metrics`);
  return res.text();
}

describe('a ClusterAgentPolicy', () => {
  it('in Enforce mode: the operator generates its admission policy, and an http card is refused', async () => {
    expect((await apply(clusterPolicy('Enforce'))).code).toBe(0);
    const ready = await waitFor(
      'the policy to be Ready',
      async () => {
        const p = await readCluster();
        return current(p) && condition(p, 'Ready')?.status === 'True' ? p : undefined;
      },
      30_000,
    );
    expect(condition(ready, 'Accepted')).toMatchObject({ status: 'True', reason: 'Valid' });
    expect(condition(ready, 'Ready')?.reason).toBe('AdmissionPolicyGenerated');
    const vap = await admission.readValidatingAdmissionPolicy({ name: clusterVap() });
    expect(vap.metadata?.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'ClusterAgentPolicy', name: clusterName(), uid: ready.metadata.uid }),
    ]);
    const binding = await admission.readValidatingAdmissionPolicyBinding({ name: clusterVap() });
    expect(binding.spec?.validationActions).toEqual(['Deny']);

    // The API server's admission plugin loads a new policy within a few seconds.
    const refused = await waitFor(
      'the generated policy to refuse an http card',
      async () => {
        const r = await createCard('http://weather.example.com/a2a');
        return r.code !== 0 ? r : undefined;
      },
      30_000,
    );
    expect(refused.stderr).toContain(
      `spec.card.supportedInterfaces[0].url: ${MESSAGE} (ClusterAgentPolicy ${clusterName()}, rule https-only)`,
    );
    const https = await createCard('https://weather.example.com/a2a');
    expect(https.stderr).toBe('');
    expect(https.code).toBe(0);
  }, 60_000);

  it('in Audit mode: the http card is admitted and counted failing; the metric says which rule', async () => {
    expect((await apply(clusterPolicy('Audit'))).code).toBe(0);
    const admitted = await waitFor(
      'the Audit binding to admit an http card',
      async () => {
        const r = await createCard('http://weather.example.com/a2a');
        return r.code === 0 ? r : undefined;
      },
      30_000,
    );
    expect(admitted.stderr).toBe('');
    expect(
      (await admission.readValidatingAdmissionPolicyBinding({ name: clusterVap() })).spec?.validationActions,
    ).toEqual(['Audit']);
    const counted = await waitFor(
      'the policy to count the http card failing',
      async () => {
        const p = await readCluster();
        return current(p) && p.status?.failing === created.http.length ? p : undefined;
      },
      30_000,
    );
    // The https card of the first test, this http card, and any http card admitted while the
    // Enforce policy was still loading.
    expect(created.http).toContain(admitted.name);
    expect(created.https).toHaveLength(1);
    expect(counted.status).toMatchObject({
      matched: created.http.length + created.https.length,
      compliant: created.https.length,
      failing: created.http.length,
    });
    expect(await metrics()).toContain(
      `agentcard_policy_violations{kind="ClusterAgentPolicy",namespace="",policy="${clusterName()}",rule="https-only"} ${created.http.length}`,
    );
  }, 60_000);

  it('deleted: its admission policy and binding are deleted', async () => {
    const deleted = await kubectl(['delete', 'clusteragentpolicy', clusterName()]);
    expect(deleted.code).toBe(0);
    await waitFor(
      'the generated objects to go',
      async () => !(await exists('policy', clusterVap())) && !(await exists('binding', clusterVap())),
      30_000,
    );
    expect(await metrics()).not.toContain(`policy="${clusterName()}"`);
  }, 40_000);
});

describe('an AgentPolicy', () => {
  const name = 'signed';
  const vap = () => `agentpolicy.${ns.name}.${name}.agentcard.dev`;
  const policy = (identity: string) => ({
    apiVersion: 'agentcard.dev/v1alpha1',
    kind: 'AgentPolicy',
    metadata: { name, namespace: ns.name },
    spec: {
      mode: 'Audit',
      rules: [
        { name: 'own-namespace', message: 'Sign as your namespace', trust: { signerIdentities: [identity] } },
      ],
    },
  });

  it('invalid: Accepted=False names the field, an Event says it, nothing is generated', async () => {
    const applied = await apply(policy('spiffe://example.org/ns/{team}/*'));
    expect(applied.stderr).toBe('');
    const invalid = await waitFor(
      'the policy to be refused',
      async () => {
        const p = await readNamespaced(name);
        return current(p) && condition(p, 'Accepted')?.status === 'False' ? p : undefined;
      },
      30_000,
    );
    expect(condition(invalid, 'Accepted')).toMatchObject({ reason: 'InvalidPolicy' });
    expect(condition(invalid, 'Accepted')?.message).toContain(
      'spec.rules[0].trust.signerIdentities[0]: unknown variable {team}',
    );
    expect(condition(invalid, 'Ready')?.message).toContain('no admission policy is generated');
    expect(invalid.status?.matched).toBeUndefined();
    expect(await exists('policy', vap())).toBe(false);
    await waitFor(
      'an InvalidPolicy Event',
      async () => {
        const events = await kubectl(['get', 'events.events.k8s.io', '-n', ns.name, '-o', 'json']);
        const items = (
          JSON.parse(events.stdout) as { items: Array<{ reason?: string; regarding?: { name?: string } }> }
        ).items;
        return items.some((e) => e.reason === 'InvalidPolicy' && e.regarding?.name === name);
      },
      10_000,
    );
  }, 40_000);

  it('fixed: it generates its admission policy; invalid again: that one is kept; deleted: it goes', async () => {
    expect((await apply(policy('spiffe://example.org/ns/{namespace}/*'))).code).toBe(0);
    await waitFor('the admission policy of the fixed policy', () => exists('policy', vap()), 30_000);
    const generated = await admission.readValidatingAdmissionPolicy({ name: vap() });
    expect(generated.metadata?.ownerReferences).toBeUndefined();

    // A hand edit is put back; the API server's defaults are not taken for one (no update loop).
    const updates = () => op.logs.filter((l) => l.includes('generated admission object updated')).length;
    const before = updates();
    const edited = await kubectl([
      'patch',
      'validatingadmissionpolicybinding',
      vap(),
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { validationActions: ['Deny'] } }),
    ]);
    expect(edited.code).toBe(0);
    await waitFor(
      'the edited binding to be put back',
      async () =>
        (await admission.readValidatingAdmissionPolicyBinding({ name: vap() })).spec
          ?.validationActions?.[0] === 'Audit',
      30_000,
    );
    await new Promise((r) => setTimeout(r, 1_500));
    expect(updates() - before).toBe(1);

    expect((await apply(policy('spiffe://example.org/ns/{team}/*'))).code).toBe(0);
    const invalid = await waitFor(
      'the policy to be refused again',
      async () => {
        const p = await readNamespaced(name);
        return current(p) && condition(p, 'Accepted')?.status === 'False' ? p : undefined;
      },
      30_000,
    );
    expect(condition(invalid, 'Ready')?.message).toContain(
      `${vap()} generated from its last valid version stays`,
    );
    const kept = await admission.readValidatingAdmissionPolicy({ name: vap() });
    expect(kept.metadata?.uid).toBe(generated.metadata?.uid);
    // (Its resourceVersion may move: the API server writes the policy's status.typeChecking.)
    expect(kept.spec).toEqual(generated.spec);
    expect(kept.metadata?.generation).toBe(generated.metadata?.generation);

    expect((await kubectl(['delete', 'agentpolicy', '-n', ns.name, name])).code).toBe(0);
    await waitFor(
      'the generated objects of the deleted AgentPolicy to go',
      async () => !(await exists('policy', vap())) && !(await exists('binding', vap())),
      30_000,
    );
  }, 60_000);
});
