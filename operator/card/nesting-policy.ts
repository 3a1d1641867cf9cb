/**
 * The nesting limit of depth.ts as a ValidatingAdmissionPolicy, so that the API server itself
 * refuses an over-deep AgentCard at apply time (kubectl shows the message) instead of storing it
 * for the controller to report as InvalidSpec.
 *
 * Why a policy and not the CRD: the CRD's own CEL rules (x-kubernetes-validations) see a field
 * marked x-kubernetes-preserve-unknown-fields as an object without fields (`self.all(...)` does
 * not compile: "cannot be range of a comprehension"; `dyn(self)` has no keys at run time), and
 * OpenAPI has no depth keyword. A ValidatingAdmissionPolicy's `object` is the plain JSON of the
 * request, free-form fields included (Kubernetes docs, "Validating Admission Policy").
 *
 * CEL has no recursion, so the walk is unrolled: one nested `all` per level allowed, from the
 * free-form field down to the limit. Its size grows linearly with the limit and it stops at the
 * limit however deep the input goes. The structured part of the spec is bounded by the CRD
 * schema (pruning drops unknown fields), so only free-form fields need the walk; buildPolicy
 * checks that the schema itself stays within the limit.
 */
import { stringify } from 'yaml';
import { MAX_NESTING_DEPTH } from './depth.ts';

type Schema = Record<string, unknown>;

/** One step from the spec root to a free-form field: a property, or the items of an array. */
export type Step = { field: string } | { items: true };

export interface FreeFormField {
  steps: Step[];
  /** Levels of objects and arrays above the field's own value (the spec object is level 0). */
  depth: number;
}

/** A CEL identifier that needs no escaping (Kubernetes escapes others as __dash__ and so on). */
const CEL_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const CEL_RESERVED = new Set([
  'true',
  'false',
  'null',
  'in',
  'as',
  'break',
  'const',
  'continue',
  'else',
  'for',
  'function',
  'if',
  'import',
  'let',
  'loop',
  'package',
  'namespace',
  'return',
  'var',
  'void',
  'while',
]);

/**
 * The free-form fields (x-kubernetes-preserve-unknown-fields) of a structural schema, and the
 * deepest level its structured objects and arrays reach. Maps (additionalProperties) on the way
 * to a free-form field are not supported: none exists, and the error says so if one appears.
 */
export function freeFormFields(spec: Schema): { fields: FreeFormField[]; structuredDepth: number } {
  const fields: FreeFormField[] = [];
  let structuredDepth = 0;
  const visit = (node: Schema, steps: Step[], depth: number, path: string) => {
    if (node['x-kubernetes-preserve-unknown-fields'] === true) {
      fields.push({ steps, depth });
      return;
    }
    if (node.type !== 'object' && node.type !== 'array') return;
    structuredDepth = Math.max(structuredDepth, depth);
    for (const [name, child] of Object.entries((node.properties ?? {}) as Record<string, Schema>)) {
      if (!CEL_IDENTIFIER.test(name) || CEL_RESERVED.has(name))
        throw new Error(`${path}.${name}: not a plain CEL identifier; the nesting policy cannot name it`);
      visit(child, [...steps, { field: name }], depth + 1, `${path}.${name}`);
    }
    if (node.items) visit(node.items as Schema, [...steps, { items: true }], depth + 1, `${path}[]`);
    if (node.additionalProperties && typeof node.additionalProperties === 'object') {
      const values = node.additionalProperties as Schema;
      if (JSON.stringify(values).includes('x-kubernetes-preserve-unknown-fields'))
        throw new Error(`${path}{}: free-form values inside a map are not supported by the nesting policy`);
      visit(values, steps, depth + 1, `${path}{}`);
    }
  };
  visit(spec, [], 0, 'spec');
  return { fields, structuredDepth };
}

const isContainer = (v: string) => `(type(${v}) == map || type(${v}) == list)`;

/**
 * CEL that is true when `v` (at relative level 0) holds no object or array at relative level
 * `levels` or deeper. Maps are walked through their values, lists through their items.
 */
export function withinLevels(v: string, levels: number, level = 0): string {
  if (levels === 0) return `!${isContainer(v)}`;
  const k = `k${level}`;
  const c = `c${level}`;
  const children = `(type(${v}) == map ? ${v}.map(${k}, ${v}[${k}]) : ${v})`;
  return `(!${isContainer(v)} || ${children}.all(${c}, ${withinLevels(c, levels - 1, level + 1)}))`;
}

/** `object.spec.a.b` with has() guards: true when a field on the way is absent. */
function guarded(base: string, fields: string[], then: (expr: string) => string): string {
  if (fields.length === 0) return then(base);
  const [first, ...rest] = fields;
  const next = `${base}.${first}`;
  return `(!has(${next}) || ${guarded(next, rest, then)})`;
}

export interface PolicyRule {
  variable: { name: string; expression: string };
  /** No `reason`: the API server's default, Invalid (422), is the right one. */
  validation: { expression: string; messageExpression: string };
}

const fieldsOf = (steps: Step[]) => steps.map((s) => ('field' in s ? s.field : undefined));

/**
 * One variable and one validation per free-form field. A field inside a list is checked per
 * item, and the message names the first item that is too deep (`extensions[1].params`), as the
 * engine's InvalidSpec does; the engine's message then adds the full path inside the field.
 */
export function nestingRules(spec: Schema, maxDepth = MAX_NESTING_DEPTH): PolicyRule[] {
  const { fields, structuredDepth } = freeFormFields(spec);
  if (structuredDepth >= maxDepth)
    throw new Error(`the CRD schema itself nests ${structuredDepth} levels, not below the limit ${maxDepth}`);
  return fields.map(({ steps, depth }) => {
    const levels = maxDepth - depth;
    const names = fieldsOf(steps);
    const lists = steps.filter((s) => 'items' in s).length;
    if (lists > 1)
      throw new Error('free-form fields inside nested lists are not supported by the nesting policy');
    const name = names.filter((n) => n !== undefined).join('_');
    const at = lists === 0 ? steps.length : steps.findIndex((s) => 'items' in s);
    const before = names.slice(0, at) as string[];
    const after = names.slice(at + 1) as string[];
    const path = `spec.${before.join('.')}`;
    const check = (value: string) => withinLevels(value, levels);
    const tail = after.length ? `.${after.join('.')}` : '';
    const limit = `nested more than ${maxDepth} levels deep (objects and arrays, counted from spec; ${levels} inside this field); flatten it`;
    if (lists === 0) {
      return {
        variable: { name, expression: guarded('object.spec', before, check) },
        validation: {
          expression: `variables.${name}`,
          messageExpression: `'${path}: ${limit}'`,
        },
      };
    }
    // A list of per-item results: its first false is the item to name.
    const list = `object.spec.${before.join('.')}`;
    const perItem = `${list}.map(item, ${guarded('item', after, check)})`;
    const guard = before.slice(0, -1).map((_, i) => `has(object.spec.${before.slice(0, i + 1).join('.')})`);
    guard.push(`has(${list})`);
    return {
      variable: { name, expression: `${guard.join(' && ')} ? ${perItem} : []` },
      validation: {
        expression: `!(false in variables.${name})`,
        messageExpression: `'${path}[' + string(variables.${name}.indexOf(false)) + ']${tail}: ${limit}'`,
      },
    };
  });
}

export const POLICY_TEMPLATE_FILE = 'helm/agentcard-operator/templates/nesting-policy.yaml';

/**
 * The chart template (committed; `npm run gen:crd` writes it): the policy and its binding, on
 * CREATE and UPDATE of AgentCards (not their status subresource, which the operator writes).
 */
export function policyTemplate(spec: Schema, group: string, version: string, plural: string): string {
  const rules = nestingRules(spec);
  const body = stringify(
    { variables: rules.map((r) => r.variable), validations: rules.map((r) => r.validation) },
    { lineWidth: 0 },
  );
  if (body.includes('{{'))
    throw new Error('a CEL expression contains "{{", which Helm would read as a template');
  const indented = body
    .trimEnd()
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');
  return `# Generated by \`npm run gen:crd\` from operator/card/nesting-policy.ts. Do not edit.
{{- if .Values.nestingPolicy.enabled }}
{{- $name := printf "%s-nesting" (include "agentcard.fullname" .) | trunc 63 | trimSuffix "-" }}
# The engine's nesting limit (${MAX_NESTING_DEPTH} levels of objects and arrays from spec), enforced
# by the API server at apply time: CEL rules inside the CRD cannot look into free-form fields, a
# ValidatingAdmissionPolicy can (docs/RELIABILITY.md). failurePolicy Ignore by default: when an
# evaluation fails (its cost limit, on a huge free-form field) the AgentCard is stored and the
# controller, which enforces the same limit, reports InvalidSpec; nothing blocks a GitOps apply.
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: {{ $name }}
  labels:
    {{- include "agentcard.labels" . | nindent 4 }}
spec:
  failurePolicy: {{ .Values.nestingPolicy.failurePolicy }}
  matchConstraints:
    resourceRules:
      - apiGroups: [${JSON.stringify(group)}]
        apiVersions: [${JSON.stringify(version)}]
        operations: ["CREATE", "UPDATE"]
        resources: [${JSON.stringify(plural)}]
  # An UPDATE that leaves spec as it was (labels, annotations) is not checked: an AgentCard stored
  # before the policy existed can still be labelled or annotated (GitOps tools do) and deleted;
  # the controller reports its spec.
  matchConditions:
    - name: spec-changed
      expression: "request.operation != 'UPDATE' || object.spec != oldObject.spec"
${indented}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: {{ $name }}
  labels:
    {{- include "agentcard.labels" . | nindent 4 }}
spec:
  policyName: {{ $name }}
  validationActions: [Deny]
  {{- if or .Values.nestingPolicy.namespaceSelector .Values.watchNamespaces }}
  matchResources:
    namespaceSelector:
      {{- with .Values.nestingPolicy.namespaceSelector }}
      {{- toYaml . | nindent 6 }}
      {{- else }}
      # Namespace-scoped mode: only the namespaces whose AgentCards this release manages.
      matchExpressions:
        {{- include "agentcard.watchedNamespacesExpression" . | nindent 8 }}
      {{- end }}
  {{- end }}
{{- end }}
`;
}
