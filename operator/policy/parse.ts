/**
 * A policy object (as read from a file or the API) checked as a whole: either a Policy, or every
 * problem with the path of its field. Nothing of an invalid policy is used, so a policy never
 * half-applies.
 */
import { API_VERSION, CLUSTER_POLICY_KIND, POLICY_KIND } from '../api/names.ts';
import { problemsFromZod, type Problem } from '../card/problem.ts';
import { AgentPolicyResourceSchema, ClusterAgentPolicyResourceSchema, type Policy } from './resource.ts';

/** Whether an object is one of the policy kinds (by apiVersion and kind). */
export const isPolicyObject = (value: unknown): boolean =>
  !!value &&
  typeof value === 'object' &&
  (value as Record<string, unknown>).apiVersion === API_VERSION &&
  [POLICY_KIND, CLUSTER_POLICY_KIND].includes((value as Record<string, unknown>).kind as string);

export type ParsedPolicy = { ok: true; policy: Policy } | { ok: false; problems: Problem[] };

/**
 * Parses an AgentPolicy or ClusterAgentPolicy. An AgentPolicy without metadata.namespace gets
 * `defaultNamespace` (kubectl's default namespace rule), or is an error when none is given.
 */
export function parsePolicy(value: unknown, defaultNamespace?: string): ParsedPolicy {
  const kind = (value as Record<string, unknown> | null)?.kind;
  const schema = kind === CLUSTER_POLICY_KIND ? ClusterAgentPolicyResourceSchema : AgentPolicyResourceSchema;
  const result = schema.safeParse(value);
  if (!result.success) return { ok: false, problems: problemsFromZod(result.error) };
  const { metadata, spec } = result.data;
  if (result.data.kind === CLUSTER_POLICY_KIND) {
    if (metadata.namespace !== undefined)
      return {
        ok: false,
        problems: [
          {
            path: 'metadata.namespace',
            message: 'a ClusterAgentPolicy is cluster-scoped and has no namespace',
            severity: 'error',
          },
        ],
      };
    return { ok: true, policy: { kind: CLUSTER_POLICY_KIND, name: metadata.name, spec } };
  }
  const namespace = metadata.namespace ?? defaultNamespace;
  if (namespace === undefined)
    return {
      ok: false,
      problems: [
        { path: 'metadata.namespace', message: 'an AgentPolicy needs a namespace', severity: 'error' },
      ],
    };
  return { ok: true, policy: { kind: POLICY_KIND, name: metadata.name, namespace, spec } };
}
