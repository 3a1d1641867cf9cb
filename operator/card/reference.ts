/**
 * The AgentCard API reference (docs/reference/api.md), generated from the same zod schemas as
 * the CRD (resource.ts and schema.ts, through crd.ts's structural OpenAPI schema), so the
 * reference, the CRD and the validator cannot disagree. Laid out like cert-manager's API
 * reference: one section per object, one table row per field with its type, whether it is
 * required, its default, its description and the validation the API server applies.
 */
import { fileURLToPath } from 'node:url';
import { buildCrd } from './crd.ts';
import { CATEGORIES, GROUP, KIND, PLURAL, SHORT_NAMES, VERSION } from '../api/names.ts';

export const REFERENCE_FILE = 'docs/reference/api.md';

const OBJECT_META = 'https://kubernetes.io/docs/reference/kubernetes-api/common-definitions/object-meta/';

type Node = {
  type?: string;
  description?: string;
  properties?: Record<string, Node>;
  items?: Node;
  additionalProperties?: Node;
  required?: string[];
  default?: unknown;
  enum?: unknown[];
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  'x-kubernetes-validations'?: Array<{ rule: string; message?: string }>;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-list-type'?: string;
  'x-kubernetes-list-map-keys'?: string[];
};

/** One section: an object type, reached at `path` (e.g. `spec.card.skills[]`). */
interface Section {
  path: string;
  node: Node;
}

/** The anchor GitHub derives from a heading's text (lower case, punctuation dropped). */
export function slug(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^a-z0-9 _-]/g, '')
    .replace(/ /g, '-');
}

const isObject = (n: Node) => n.type === 'object' && !!n.properties;

/**
 * Escapes text for a Markdown table cell: one line, `|` escaped, and `<` outside code spans as an
 * entity (descriptions such as "sha256:<hex>" would otherwise read as an HTML tag).
 */
const cell = (text: string) =>
  text
    .replace(/\s*\n\s*/g, ' ')
    .replace(/\|/g, '\\|')
    .split('`')
    .map((part, i) => (i % 2 === 0 ? part.replace(/</g, '&lt;') : part))
    .join('`');
const code = (value: unknown) => `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;

/** The object sections in document order: each object, then the objects below it. */
function collectSections(node: Node, path: string, out: Section[]): void {
  if (isObject(node)) {
    out.push({ path, node });
    for (const [name, child] of Object.entries(node.properties!))
      collectSections(child, `${path}.${name}`, out);
  } else if (node.items) {
    collectSections(node.items, `${path}[]`, out);
  } else if (node.additionalProperties) {
    collectSections(node.additionalProperties, `${path}{}`, out);
  }
}

/** The type column: scalars by name, objects as links to their section. */
function typeOf(node: Node, path: string): string {
  if (path === `${KIND}.metadata`) return `[ObjectMeta](${OBJECT_META})`;
  if (node['x-kubernetes-preserve-unknown-fields']) return 'object (free-form JSON)';
  if (isObject(node)) return `[object](#${slug(path)})`;
  if (node.type === 'array' && node.items) return `array of ${typeOf(node.items, `${path}[]`)}`;
  if (node.type === 'object' && node.additionalProperties) {
    return `map of string to ${typeOf(node.additionalProperties, `${path}{}`)}`;
  }
  const base = node.format ? `${node.type} (${node.format})` : (node.type ?? '?');
  return base;
}

/** The validation the API server applies to this field (CEL rules included). */
function validation(node: Node): string[] {
  const rules: string[] = [];
  if (node.enum) rules.push(`one of ${node.enum.map(code).join(', ')}`);
  if (node.pattern) rules.push(`matches ${code(node.pattern)}`);
  const range = (what: string, min?: number, max?: number) => {
    if (min !== undefined && max !== undefined) rules.push(`${what} ${min} to ${max}`);
    else if (min !== undefined) rules.push(`${what} at least ${min}`);
    else if (max !== undefined) rules.push(`${what} at most ${max}`);
  };
  range('value', node.minimum, node.maximum);
  range('length', node.minLength, node.maxLength);
  range('items', node.minItems, node.maxItems);
  range('entries', undefined, node.maxProperties);
  if (node['x-kubernetes-list-type'] === 'map') {
    rules.push(`a map-list keyed by ${(node['x-kubernetes-list-map-keys'] ?? []).map(code).join(', ')}`);
  }
  for (const v of node['x-kubernetes-validations'] ?? []) {
    rules.push(`CEL ${code(v.rule)}${v.message ? ` (${v.message})` : ''}`);
  }
  return rules;
}

function fieldRow(name: string, node: Node, parent: Node, path: string): string {
  const required = parent.required?.includes(name) ? 'yes' : 'no';
  const def = node.default !== undefined ? code(node.default) : '';
  const checks = validation(node);
  const text = node.description ?? (name === 'metadata' ? 'Name, namespace, labels and annotations.' : '');
  const description = [text, checks.length ? `Validation: ${checks.join('; ')}.` : '']
    .filter(Boolean)
    .join(' ');
  return `| ${code(name)} | ${cell(typeOf(node, path))} | ${required} | ${cell(def)} | ${cell(description)} |`;
}

function sectionText({ path, node }: Section): string {
  const lines = [`## \`${path}\``, ''];
  if (node.description) lines.push(cell(node.description), '');
  const own = validation(node);
  if (own.length) lines.push(`Validation: ${cell(own.join('; '))}.`, '');
  lines.push(
    '| Field | Type | Required | Default | Description |',
    '| ----- | ---- | -------- | ------- | ----------- |',
  );
  for (const [name, child] of Object.entries(node.properties!)) {
    lines.push(fieldRow(name, child, node, `${path}.${name}`));
  }
  return lines.join('\n');
}

/** The reference's Markdown text, before formatting (see formattedReference). */
export function referenceMarkdown(): string {
  const crd = buildCrd() as {
    spec: {
      versions: Array<{
        schema: { openAPIV3Schema: Node };
        additionalPrinterColumns: Array<{ name: string; jsonPath: string; priority?: number }>;
      }>;
    };
  };
  const version = crd.spec.versions[0]!;
  const root = version.schema.openAPIV3Schema;
  const sections: Section[] = [];
  collectSections(root, KIND, sections);

  const anchors = new Map<string, string>();
  for (const s of sections) {
    const a = slug(s.path);
    const clash = anchors.get(a);
    if (clash) throw new Error(`sections ${clash} and ${s.path} would share the anchor #${a}`);
    anchors.set(a, s.path);
  }

  const columns = version.additionalPrinterColumns
    .map((c) => `| ${c.name} | ${code(c.jsonPath)} | ${c.priority ? '`-o wide` only' : ''} |`)
    .join('\n');
  const index = sections.map((s) => `- [\`${s.path}\`](#${slug(s.path)})`).join('\n');

  const header = `<!-- Generated by \`npm run gen:docs\` from operator/card/schema.ts and operator/card/resource.ts. Do not edit. -->

# API reference: ${KIND} (${GROUP}/${VERSION})

| | |
| --- | --- |
| Group | \`${GROUP}\` |
| Version | \`${VERSION}\` |
| Kind | \`${KIND}\` (namespaced) |
| Plural | \`${PLURAL}\` |
| Short names | ${SHORT_NAMES.map(code).join(', ')} |
| Categories | ${CATEGORIES.map(code).join(', ')} (\`kubectl get ${CATEGORIES[0]}\`) |

This page is generated from the zod schemas that the operator, the CLI and the CRD all use, so
it lists exactly what the API server accepts. "Validation" is what the API server checks when
the object is written (OpenAPI and CEL rules of the CRD). The operator and \`agentcard validate\`
check more than the API server can express (cross-field rules, lint): those findings appear in
the \`Accepted\` condition, see [troubleshooting](../troubleshooting.md#invalidspec).
\`kubectl explain agentcard.spec.card\` prints the same descriptions from the cluster.

Columns of \`kubectl get agentcards\`:

| Column | From | |
| ------ | ---- | --- |
${columns}

## Contents

${index}
`;
  return `${header}\n${sections.map(sectionText).join('\n\n')}\n`;
}

/**
 * The text committed in docs/reference/api.md: referenceMarkdown() formatted by Prettier with
 * the repository's settings, so that `prettier --check .` and the staleness test agree.
 */
export async function formattedReference(): Promise<string> {
  const prettier = await import('prettier');
  const file = fileURLToPath(new URL(`../../${REFERENCE_FILE}`, import.meta.url));
  const options = (await prettier.resolveConfig(file)) ?? {};
  return prettier.format(referenceMarkdown(), { ...options, filepath: file });
}
