/**
 * The policies the AgentCard controller judges cards by (--policies): the AgentPolicies and
 * ClusterAgentPolicies of the shared cache, each checked whole once per version (an invalid
 * policy is not Accepted and judges nothing, as in the policy controller), and the namespaces'
 * labels for a ClusterAgentPolicy's namespaceSelector. When the policy CRDs are not installed,
 * their collections are empty: no policy applies.
 */
import type { KubernetesObject, V1Namespace } from '@kubernetes/client-node';
import { API_VERSION, CLUSTER_POLICY_KIND, POLICY_KIND, type PolicyKind } from '../../api/names.ts';
import { parsePolicy } from '../../policy/parse.ts';
import type { Policy } from '../../policy/resource.ts';
import type { Cache, SharedInformer } from '../../runtime/cache.ts';
import { AGENT_POLICIES, CLUSTER_AGENT_POLICIES, NAMESPACES } from '../cache/collections.ts';
import type { PolicyInput } from './policy-gate.ts';

type PolicyObject = KubernetesObject & { metadata: { name: string; namespace?: string } };

export class CardPolicies {
  readonly policies: SharedInformer<PolicyObject>;
  readonly clusterPolicies?: SharedInformer<PolicyObject>;
  readonly namespaces?: SharedInformer<V1Namespace>;
  /** Policy key → the policy parsed from one generation of its spec (undefined: invalid). */
  private readonly parsed = new Map<string, { generation?: number; policy?: Policy }>();

  /** `cluster`: ClusterAgentPolicies apply (the operator watches every namespace, or is told so). */
  constructor(cache: Cache, cluster: boolean) {
    this.policies = cache.informer<PolicyObject>(AGENT_POLICIES);
    if (cluster) {
      this.clusterPolicies = cache.informer<PolicyObject>(CLUSTER_AGENT_POLICIES);
      this.namespaces = cache.informer({
        ...NAMESPACES,
        with: this.clusterPolicies as SharedInformer<KubernetesObject>,
      });
    }
  }

  /** What a reconcile of a card in `namespace` judges it by. */
  input(namespace: string): PolicyInput {
    const policies = [
      ...this.policies.list(namespace).map((p) => this.valid(POLICY_KIND, p)),
      ...(this.clusterPolicies?.list() ?? []).map((p) => this.valid(CLUSTER_POLICY_KIND, p)),
    ].filter((p): p is Policy => p !== undefined);
    const labels = this.clusterPolicies?.list().length
      ? this.namespaces?.get(namespace)?.metadata?.labels
      : undefined;
    return { policies, ...(labels ? { namespaceLabels: labels } : {}) };
  }

  /** The policy if it is valid as a whole (the policy controller's Accepted=True). */
  private valid(kind: PolicyKind, obj: PolicyObject): Policy | undefined {
    const key = `${kind}/${obj.metadata.namespace ?? ''}/${obj.metadata.name}`;
    // The policy controller's status writes move resourceVersion, not generation.
    const generation = obj.metadata.generation;
    const known = this.parsed.get(key);
    if (known && generation !== undefined && known.generation === generation) return known.policy;
    const result = parsePolicy({ ...obj, apiVersion: API_VERSION, kind, status: undefined });
    const policy = result.ok ? result.policy : undefined;
    this.parsed.set(key, { generation, policy });
    return policy;
  }

  /** A policy went: its parsed copy goes too. */
  forget(kind: PolicyKind, obj: PolicyObject): void {
    this.parsed.delete(`${kind}/${obj.metadata.namespace ?? ''}/${obj.metadata.name}`);
  }
}
