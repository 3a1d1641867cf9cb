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
export const code = (value: unknown) => `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;

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

/** One section: an object type, reached at `path` (e.g. `spec.card.skills[]`). */
export interface Section {
  path: string;
  node: Node;
}

/** A CRD version as the generators build it (only what the reference reads). */
export interface CrdForReference {
  spec: {
    names: { kind: string; plural: string; shortNames?: string[]; categories?: string[] };
    scope: 'Namespaced' | 'Cluster';
    versions: Array<{
      schema: { openAPIV3Schema: Node };
      additionalPrinterColumns: Array<{ name: string; jsonPath: string; priority?: number }>;
    }>;
  };
}

/**
 * The object types of one page, and where each is documented. A kind rendered after another on
 * the same page (ClusterAgentCatalog after AgentCatalog) links to the earlier kind's section of
 * an identical object instead of repeating it.
 */
export class ReferencePage {
  readonly sections: Section[] = [];
  /** An object's schema (as JSON) -> the path of the section that documents it. */
  private readonly documented = new Map<string, string>();
  /** Object schemas documented by an earlier kind: linked to, not repeated. */
  private shared = new Map<string, string>();

  /** Adds the sections of one kind's schema: its root object, then the objects below it. */
  addKind(kind: string, root: Node): Section[] {
    this.shared = new Map(this.documented);
    const added: Section[] = [];
    this.collect(root, kind, kind, added);
    for (const s of added) this.documented.set(JSON.stringify(s.node), s.path);
    const anchors = new Map(this.sections.map((s) => [slug(s.path), s.path]));
    for (const s of added) {
      const clash = anchors.get(slug(s.path));
      if (clash) throw new Error(`sections ${clash} and ${s.path} would share the anchor #${slug(s.path)}`);
      anchors.set(slug(s.path), s.path);
    }
    this.sections.push(...added);
    return added;
  }

  /** The section documenting the object at `path`: its own, or an earlier kind's identical one. */
  sectionOf(node: Node, path: string): string {
    return this.shared.get(JSON.stringify(node)) ?? path;
  }

  /** The object sections in document order: each object, then the objects below it. */
  private collect(node: Node, path: string, kind: string, out: Section[]): void {
    if (isObject(node)) {
      if (path !== kind && this.shared.has(JSON.stringify(node))) return;
      out.push({ path, node });
      for (const [name, child] of Object.entries(node.properties!))
        this.collect(child, `${path}.${name}`, kind, out);
    } else if (node.items) {
      this.collect(node.items, `${path}[]`, kind, out);
    } else if (node.additionalProperties) {
      this.collect(node.additionalProperties, `${path}{}`, kind, out);
    }
  }

  /** The type column: scalars by name, objects as links to their section. */
  typeOf(node: Node, path: string): string {
    if (/^[A-Za-z]+\.metadata$/.test(path)) return `[ObjectMeta](${OBJECT_META})`;
    if (node['x-kubernetes-preserve-unknown-fields']) return 'object (free-form JSON)';
    if (isObject(node)) return `[object](#${slug(this.sectionOf(node, path))})`;
    if (node.type === 'array' && node.items) return `array of ${this.typeOf(node.items, `${path}[]`)}`;
    if (node.type === 'object' && node.additionalProperties) {
      return `map of string to ${this.typeOf(node.additionalProperties, `${path}{}`)}`;
    }
    return node.format ? `${node.type} (${node.format})` : (node.type ?? '?');
  }

  private fieldRow(name: string, node: Node, parent: Node, path: string): string {
    const required = parent.required?.includes(name) ? 'yes' : 'no';
    const def = node.default !== undefined ? code(node.default) : '';
    const checks = validation(node);
    const text = node.description ?? (name === 'metadata' ? 'Name, namespace, labels and annotations.' : '');
    const description = [text, checks.length ? `Validation: ${checks.join('; ')}.` : '']
      .filter(Boolean)
      .join(' ');
    return `| ${code(name)} | ${cell(this.typeOf(node, path))} | ${required} | ${cell(def)} | ${cell(description)} |`;
  }

  sectionText({ path, node }: Section): string {
    const lines = [`## \`${path}\``, ''];
    if (node.description) lines.push(cell(node.description), '');
    const own = validation(node);
    if (own.length) lines.push(`Validation: ${cell(own.join('; '))}.`, '');
    lines.push(
      '| Field | Type | Required | Default | Description |',
      '| ----- | ---- | -------- | ------- | ----------- |',
    );
    for (const [name, child] of Object.entries(node.properties!)) {
      lines.push(this.fieldRow(name, child, node, `${path}.${name}`));
    }
    return lines.join('\n');
  }

  /** The contents list: one link per section. */
  index(sections: Section[] = this.sections): string {
    return sections.map((s) => `- [\`${s.path}\`](#${slug(s.path)})`).join('\n');
  }
}

/** The rows of the `kubectl get` columns table of a CRD version. */
export function printerColumns(crd: CrdForReference): string {
  return crd.spec.versions[0]!.additionalPrinterColumns.map(
    (c) => `| ${c.name} | ${code(c.jsonPath)} | ${c.priority ? '`-o wide` only' : ''} |`,
  ).join('\n');
}

export const rootSchema = (crd: CrdForReference): Node => crd.spec.versions[0]!.schema.openAPIV3Schema;

/** The reference's Markdown text, before formatting (see formattedReference). */
export function referenceMarkdown(): string {
  const crd = buildCrd() as unknown as CrdForReference;
  const page = new ReferencePage();
  page.addKind(KIND, rootSchema(crd));
  const columns = printerColumns(crd);
  const index = page.index();

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
  return `${header}\n${page.sections.map((x) => page.sectionText(x)).join('\n\n')}\n`;
}

/** `markdown` formatted by Prettier with the repository's settings for `file` (relative to the root). */
export async function formatReferenceFile(file: string, markdown: string): Promise<string> {
  const prettier = await import('prettier');
  const path = fileURLToPath(new URL(`../../${file}`, import.meta.url));
  const options = (await prettier.resolveConfig(path)) ?? {};
  return prettier.format(markdown, { ...options, filepath: path });
}

/**
 * The text committed in docs/reference/api.md: referenceMarkdown() formatted by Prettier with
 * the repository's settings, so that `prettier --check .` and the staleness test agree.
 */
export async function formattedReference(): Promise<string> {
  return formatReferenceFile(REFERENCE_FILE, referenceMarkdown());
}
