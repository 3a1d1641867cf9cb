/**
 * The AgentCard CustomResourceDefinition, generated from the zod schemas (resource.ts and
 * schema.ts): z.toJSONSchema, then a conversion to the structural OpenAPI v3 subset that
 * apiextensions.k8s.io/v1 accepts (no $ref, no anyOf/oneOf, no additionalProperties: false,
 * no propertyNames; free-form JSON as x-kubernetes-preserve-unknown-fields). Anything the
 * conversion does not know is an error, so a schema change cannot silently produce a bad CRD.
 */
import { stringify } from 'yaml';
import { z } from 'zod';
import { AgentCardResourceSpecSchema, AgentCardStatusSchema } from './resource.ts';
import { policyTemplate } from './nesting-policy.ts';
import { CATEGORIES, GROUP, KIND, PLURAL, SHORT_NAMES, SINGULAR, VERSION } from '../api/names.ts';

export const CRD_FILE = `crds/${GROUP}_${PLURAL}.yaml`;

type Schema = Record<string, unknown>;

/** Keywords copied as they are. */
const COPIED = new Set([
  'type',
  'description',
  'format',
  'pattern',
  'enum',
  'default',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'maxProperties',
  'required',
]);
/** Keywords dropped on purpose: draft 2020-12 bookkeeping, and what structural schemas forbid. */
const DROPPED = new Set(['$schema', '$defs', 'propertyNames']);

/** Converts one JSON Schema node (from z.toJSONSchema) to a structural OpenAPI v3 schema. */
export function toStructural(node: Schema, path = '<root>'): Schema {
  if (node['x-kubernetes-preserve-unknown-fields'] === true) {
    // Free-form JSON (a protobuf Struct): keep only what describes it.
    const out: Schema = { type: 'object' };
    if (node.description) out.description = node.description;
    out['x-kubernetes-preserve-unknown-fields'] = true;
    return out;
  }
  if (node['x-kubernetes-int-or-string'] === true) {
    // A Service port, number or name: the one union a structural schema has (no type, no anyOf).
    const out: Schema = { 'x-kubernetes-int-or-string': true };
    if (node.description) out.description = node.description;
    return out;
  }
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    if (COPIED.has(key)) {
      out[key] = value;
    } else if (key.startsWith('x-kubernetes-')) {
      out[key] = value;
    } else if (key === 'const') {
      out.enum = [value];
    } else if (key === 'properties') {
      out.properties = Object.fromEntries(
        Object.entries(value as Record<string, Schema>).map(([name, child]) => [
          name,
          toStructural(child, `${path}.${name}`),
        ]),
      );
    } else if (key === 'items') {
      out.items = toStructural(value as Schema, `${path}[]`);
    } else if (key === 'additionalProperties') {
      if (value === false) continue; // pruning drops unknown fields; strictness is in the zod schema
      out.additionalProperties = toStructural(value as Schema, `${path}{}`);
    } else if (!DROPPED.has(key)) {
      throw new Error(`${path}: JSON Schema keyword "${key}" has no structural CRD equivalent`);
    }
  }
  // zod gives unbounded integers the safe-integer range: noise in a CRD.
  if (out.type === 'integer') {
    if (out.minimum === Number.MIN_SAFE_INTEGER) delete out.minimum;
    if (out.maximum === Number.MAX_SAFE_INTEGER) delete out.maximum;
  }
  // A format (date-time, uri) is checked by the API server; zod's regex for it is not RE2.
  if (out.format && out.pattern) delete out.pattern;
  if (!out.type) throw new Error(`${path}: no type (structural schemas need one on every node)`);
  return out;
}

/** The JSON Schema of a zod schema's input side (defaults are optional there), before conversion. */
export const jsonSchema = (schema: z.ZodType): Schema =>
  z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'throw',
    reused: 'inline',
    cycles: 'ref',
  }) as Schema;

const condition = (type: string, field: 'status' | 'message') =>
  `.status.conditions[?(@.type=="${type}")].${field}`;

/** The CRD object. */
export function buildCrd(): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${PLURAL}.${GROUP}` },
    spec: {
      group: GROUP,
      names: {
        kind: KIND,
        listKind: `${KIND}List`,
        plural: PLURAL,
        singular: SINGULAR,
        shortNames: SHORT_NAMES,
        categories: CATEGORIES,
      },
      scope: 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'Ready', type: 'string', jsonPath: condition('Ready', 'status') },
            { name: 'Signed', type: 'string', jsonPath: condition('Signed', 'status') },
            { name: 'Interfaces', type: 'string', jsonPath: '.status.reachableInterfaces' },
            { name: 'Version', type: 'string', jsonPath: '.status.card.version' },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
            { name: 'Message', type: 'string', jsonPath: condition('Ready', 'message'), priority: 1 },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description:
                "An A2A Agent Card: the operator validates, renders, signs and publishes it, serves it at the agent's /.well-known/agent-card.json and probes every interface it declares.",
              required: ['spec'],
              properties: {
                apiVersion: {
                  type: 'string',
                  description: 'APIVersion of this object (agentcard.dev/v1alpha1).',
                },
                kind: { type: 'string', description: 'Kind of this object (AgentCard).' },
                metadata: { type: 'object' },
                spec: specSchema(),
                status: toStructural(jsonSchema(AgentCardStatusSchema), 'status'),
              },
            },
          },
        },
      ],
    },
  };
}

/** The CRD file's text, as committed in crds/. */
export function crdYaml(): string {
  return (
    `# Generated by \`npm run gen:crd\` from operator/card/schema.ts and operator/card/resource.ts. Do not edit.\n` +
    stringify(buildCrd(), { lineWidth: 0 })
  );
}

/** The spec's structural schema, as in the CRD. */
export const specSchema = (): Schema => toStructural(jsonSchema(AgentCardResourceSpecSchema), 'spec');

/** The chart's ValidatingAdmissionPolicy template for the nesting limit (nesting-policy.ts). */
export const nestingPolicyYaml = (): string => policyTemplate(specSchema(), GROUP, VERSION, PLURAL);

/** What differs between the group's other kinds' CRDs (catalogs, policies): names, columns, schemas. */
export interface KindCrdOptions {
  kind: string;
  plural: string;
  singular: string;
  shortName: string;
  cluster: boolean;
  printerColumns: ReadonlyArray<Record<string, unknown>>;
  description: string;
  spec: z.ZodType;
  status: z.ZodType;
}

/** The CRD of one more kind of the group, with the AgentCard CRD's structural conversion. */
export function buildKindCrd(o: KindCrdOptions): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${o.plural}.${GROUP}` },
    spec: {
      group: GROUP,
      names: {
        kind: o.kind,
        listKind: `${o.kind}List`,
        plural: o.plural,
        singular: o.singular,
        shortNames: [o.shortName],
        categories: CATEGORIES,
      },
      scope: o.cluster ? 'Cluster' : 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: o.printerColumns,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: o.description,
              required: ['spec'],
              properties: {
                apiVersion: {
                  type: 'string',
                  description: `APIVersion of this object (${GROUP}/${VERSION}).`,
                },
                kind: { type: 'string', description: `Kind of this object (${o.kind}).` },
                metadata: { type: 'object' },
                spec: toStructural(jsonSchema(o.spec), 'spec'),
                status: toStructural(jsonSchema(o.status), 'status'),
              },
            },
          },
        },
      ],
    },
  };
}

/** A condition's field, for a printer column's jsonPath. */
export const conditionPath = (type: string, field: 'status' | 'message'): string =>
  `.status.conditions[?(@.type=="${type}")].${field}`;
