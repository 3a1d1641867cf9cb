/**
 * Lint: checks beyond the schema. All are warnings (errors with --strict); credentials are
 * checked separately (credentials.ts) and are always errors.
 */
import { formatPath, type PathSegment, type Problem } from './problem.ts';
import { LEGACY_FIELDS, type AgentCardInput } from './schema.ts';
import { serializeCard } from './serialize.ts';

/** Some registries reject card files over 10 KB. */
export const MAX_CARD_BYTES = 10 * 1024;
export const MIN_DESCRIPTION_CHARS = 20;

/** Words that say nothing about what an agent does; a name made only of them is generic. */
const GENERIC_WORDS = new Set(
  (
    'a an the my our your ai llm gpt agent agents assistant bot chatbot chat helper copilot service server ' +
    'app application test testing demo example sample new default untitled unnamed generic a2a'
  ).split(' '),
);

export function isGenericName(name: string): boolean {
  const words = name
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
  return words.every((w) => GENERIC_WORDS.has(w) || /^v?\d+$/.test(w));
}

const isEmpty = (v: unknown): boolean =>
  v === '' ||
  v === null ||
  (Array.isArray(v) && v.length === 0) ||
  (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0);

/**
 * Paths of every empty value ("", null, [], {}) in the rendered card. `path` is pushed and popped
 * as the walk goes; only the path of an empty value is copied.
 */
function emptyValues(value: unknown, path: PathSegment[], out: PathSegment[][]): void {
  if (isEmpty(value)) {
    out.push([...path]);
  } else if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      path.push(i);
      emptyValues(value[i], path, out);
      path.pop();
    }
  } else if (typeof value === 'object' && value !== null) {
    for (const key of Object.keys(value)) {
      path.push(key);
      emptyValues((value as Record<string, unknown>)[key], path, out);
      path.pop();
    }
  }
}

function isTls(url: string): boolean {
  return url.toLowerCase().startsWith('https://');
}

/**
 * Lint a parsed card. `input` is what the user wrote (pre-1.0 fields included), `rendered` its
 * v1.0 rendering; `prefix` is prepended to every path.
 */
export function lintCard(
  input: AgentCardInput,
  rendered: Record<string, unknown>,
  prefix: readonly PathSegment[] = [],
): Problem[] {
  const problems: Problem[] = [];
  const warn = (path: PathSegment[], message: string) =>
    problems.push({ path: formatPath([...prefix, ...path]) || '(card)', message, severity: 'warning' });

  // Pre-1.0 fields (accepted on input, dropped from the rendered card).
  for (const [field, replacement] of Object.entries(LEGACY_FIELDS)) {
    const path = field.split('.');
    let v: unknown = input;
    for (const p of path) v = v && typeof v === 'object' ? (v as Record<string, unknown>)[p] : undefined;
    if (v !== undefined) warn(path, `pre-1.0 field, ignored in the v1.0 card: use ${replacement}`);
  }

  input.supportedInterfaces.forEach((iface, i) => {
    if (!isTls(iface.url))
      warn(['supportedInterfaces', i, 'url'], 'not an https URL (required in production)');
  });

  const seen = new Map<string, number>();
  input.supportedInterfaces.forEach((iface, i) => {
    const key = JSON.stringify([iface.url, iface.protocolBinding, iface.protocolVersion, iface.tenant ?? '']);
    const first = seen.get(key);
    if (first !== undefined) warn(['supportedInterfaces', i], `duplicate of supportedInterfaces[${first}]`);
    else seen.set(key, i);
  });

  if (isGenericName(input.name)) {
    warn(['name'], `"${input.name}" is a generic name; routers and users cannot tell this agent apart by it`);
  }
  const descriptionLength = [...input.description.trim()].length;
  if (descriptionLength > 0 && descriptionLength < MIN_DESCRIPTION_CHARS) {
    warn(
      ['description'],
      `shorter than ${MIN_DESCRIPTION_CHARS} characters; say what the agent does and when to call it`,
    );
  }

  // Authorization-server URLs must use TLS (OAuth 2.0; the spec: "TLS is required").
  for (const [name, scheme] of Object.entries(input.securitySchemes ?? {})) {
    const oauth = scheme.oauth2SecurityScheme;
    if (oauth?.oauth2MetadataUrl !== undefined && !isTls(oauth.oauth2MetadataUrl)) {
      warn(
        ['securitySchemes', name, 'oauth2SecurityScheme', 'oauth2MetadataUrl'],
        'not an https URL; TLS is required',
      );
    }
    for (const [flowName, flow] of Object.entries(oauth?.flows ?? {})) {
      for (const [field, value] of Object.entries(flow ?? {})) {
        if (field.endsWith('Url') && typeof value === 'string' && !isTls(value)) {
          warn(
            ['securitySchemes', name, 'oauth2SecurityScheme', 'flows', flowName, field],
            'not an https URL; TLS is required',
          );
        }
      }
    }
    const oidc = scheme.openIdConnectSecurityScheme;
    if (oidc && !isTls(oidc.openIdConnectUrl)) {
      warn(
        ['securitySchemes', name, 'openIdConnectSecurityScheme', 'openIdConnectUrl'],
        'not an https URL; TLS is required',
      );
    }
  }

  // Empty values: the canonicalizers of @a2a-js/sdk and a2a-python strip every empty value,
  // required ones included, so they compute another payload and reject the signature.
  const empties: PathSegment[][] = [];
  emptyValues(rendered, [], empties);
  for (const path of empties) {
    warn(
      path,
      "empty value; verifiers that drop empty values before canonicalizing (@a2a-js/sdk, a2a-python) will reject this card's signature",
    );
  }

  const bytes = Buffer.byteLength(serializeCard(rendered));
  if (bytes > MAX_CARD_BYTES) {
    warn([], `the card is ${bytes} bytes before signatures; some registries reject card files over 10 KB`);
  }
  return problems;
}
