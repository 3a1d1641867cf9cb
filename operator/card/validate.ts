/**
 * Validation of a card or of a whole AgentCard spec: the strict schema (unknown fields are
 * errors, with their path), credential detection (always errors) and lint (warnings, or errors
 * with `strict`). A card is returned only when there is no error.
 */
import { audienceCard } from './audience.ts';
import { findCredentials, REDACTED } from './credentials.ts';
import { nestingProblem } from './depth.ts';
import { lintCard } from './lint.ts';
import { formatPath, hasErrors, problemsFromZod, type PathSegment, type Problem } from './problem.ts';
import { renderV1 } from './render.ts';
import { z } from 'zod';
import { AgentCardResourceSpecSchema, AgentCardSpecSchema, type AgentCardSpec } from './resource.ts';
import { API_VERSION, KIND } from '../api/names.ts';
import { AgentCardInputSchema, LEGACY_FIELDS, type AgentCard, type AgentCardInput } from './schema.ts';

export type { Problem } from './problem.ts';
export type ValidateOptions = { strict?: boolean };

/** The v1.0 card of an input: the pre-1.0 fields removed (rendering ignores them anyway). */
export function toAgentCard(input: AgentCardInput): AgentCard {
  const card: Record<string, unknown> = { ...input };
  for (const field of Object.keys(LEGACY_FIELDS)) {
    const [head, tail] = field.split('.') as [string, string | undefined];
    if (tail === undefined) {
      delete card[head];
    } else if (card[head] && typeof card[head] === 'object') {
      const { [tail]: _dropped, ...rest } = card[head] as Record<string, unknown>;
      card[head] = rest;
    }
  }
  return card as AgentCard;
}

/** Applies --strict, and keeps object keys that look like credentials out of every path. */
function finish(problems: Problem[], secretKeys: string[], opts: ValidateOptions): Problem[] {
  const redact = (text: string) => secretKeys.reduce((t, key) => t.split(key).join(REDACTED), text);
  return problems.map((p) => ({
    path: secretKeys.length ? redact(p.path) : p.path,
    message: secretKeys.length ? redact(p.message) : p.message,
    severity: opts.strict ? 'error' : p.severity,
  }));
}

function checkCard(
  input: unknown,
  parsed: AgentCardInput | undefined,
  prefix: PathSegment[],
): { card?: AgentCard; problems: Problem[]; secretKeys: string[] } {
  const { problems, secretKeys } = findCredentials(input, prefix);
  if (!parsed) return { problems, secretKeys };
  const card = toAgentCard(parsed);
  problems.push(...lintCard(parsed, renderV1(card), prefix));
  return { card, problems, secretKeys };
}

/** Validates a bare card (a JSON object as served, `signatures` allowed). */
export function validateCard(
  input: unknown,
  opts: ValidateOptions = {},
): { card?: AgentCard; problems: Problem[] } {
  // First, and alone: everything after it recurses into the input.
  const tooDeep = nestingProblem(input);
  if (tooDeep) return { problems: [tooDeep] };
  const result = AgentCardInputSchema.safeParse(input);
  const problems = result.success ? [] : problemsFromZod(result.error);
  const checked = checkCard(input, result.data, []);
  problems.push(...checked.problems);
  const all = finish(problems, checked.secretKeys, opts);
  return hasErrors(all) ? { problems: all } : { card: checked.card, problems: all };
}

/** The fields an audience overrides: its lint findings are the ones under these paths. */
const OVERRIDDEN = ['supportedInterfaces', 'securitySchemes', 'securityRequirements'];

/**
 * The audiences' overrides checked like the card: credentials anywhere in an audience (always
 * errors), and lint of each audience's card, reported at the audience's own fields (a warning
 * about a field inherited from spec.card is already reported once, at spec.card). Interface
 * findings of a baseURL audience point at its baseURL, the field that produced the URL.
 */
function checkAudiences(
  rawAudiences: unknown,
  spec: AgentCardSpec | undefined,
  card: AgentCard | undefined,
): { problems: Problem[]; secretKeys: string[] } {
  const problems: Problem[] = [];
  const secretKeys: string[] = [];
  if (Array.isArray(rawAudiences)) {
    rawAudiences.forEach((raw, i) => {
      const found = findCredentials(raw, ['spec', 'audiences', i]);
      problems.push(...found.problems);
      secretKeys.push(...found.secretKeys);
    });
  }
  if (!spec || !card) return { problems, secretKeys };
  spec.audiences?.forEach((audience, i) => {
    const derived = audienceCard(card, audience);
    const at = formatPath(['spec', 'audiences', i]);
    const seen = new Set<string>();
    for (const p of lintCard(derived, renderV1(derived))) {
      const field = OVERRIDDEN.find(
        (f) => p.path === f || p.path.startsWith(`${f}.`) || p.path.startsWith(`${f}[`),
      );
      if (!field && p.path !== '(card)') continue;
      let path = p.path === '(card)' ? at : `${at}.${p.path}`;
      let message = p.message;
      if (field === 'supportedInterfaces' && audience.baseURL !== undefined) {
        path = `${at}.baseURL`;
        message = `gives ${p.path} ${message}`;
      }
      const key = `${path}\u0000${message}`;
      if (seen.has(key)) continue;
      seen.add(key);
      problems.push({ ...p, path, message });
    }
  });
  return { problems, secretKeys };
}

/** Validates the spec of an AgentCard resource; paths start with `spec.`. */
export function validateSpec(
  spec: unknown,
  opts: ValidateOptions = {},
): { spec?: AgentCardSpec; card?: AgentCard; problems: Problem[] } {
  const tooDeep = nestingProblem(spec, ['spec']);
  if (tooDeep) return { problems: [tooDeep] };
  const result = AgentCardSpecSchema.safeParse(spec);
  const problems = result.success ? [] : problemsFromZod(result.error, ['spec']);
  const rawCard = spec && typeof spec === 'object' ? (spec as Record<string, unknown>).card : undefined;
  const checked = checkCard(rawCard, result.data?.card, ['spec', 'card']);
  problems.push(...checked.problems);
  const rawAudiences =
    spec && typeof spec === 'object' ? (spec as Record<string, unknown>).audiences : undefined;
  const audiences = checkAudiences(rawAudiences, result.data, checked.card);
  problems.push(...audiences.problems);
  const all = finish(problems, [...checked.secretKeys, ...audiences.secretKeys], opts);
  return hasErrors(all) ? { problems: all } : { spec: result.data, card: checked.card, problems: all };
}

/** metadata.name: a DNS subdomain short enough for the "<name>-agent-card" ConfigMap. */
const EnvelopeSchema = z.strictObject({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(KIND),
  metadata: z.looseObject({
    name: z
      .string()
      .max(242)
      .regex(
        /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
        'must be a DNS subdomain name',
      ),
    namespace: z.string().optional(),
  }),
  spec: z.unknown(),
  status: z.unknown().optional(),
});

/** Validates a whole AgentCard manifest: its envelope (apiVersion, kind, metadata.name) and spec. */
export function validateResource(
  resource: unknown,
  opts: ValidateOptions = {},
): { spec?: AgentCardSpec; card?: AgentCard; problems: Problem[] } {
  const result = validateSpec(specOf(resource), opts);
  const problems = [...envelopeProblems(resource), ...result.problems];
  return hasErrors(problems) ? { problems } : { ...result, problems };
}

const specOf = (resource: unknown): unknown =>
  resource && typeof resource === 'object' ? (resource as Record<string, unknown>).spec : undefined;

function envelopeProblems(resource: unknown): Problem[] {
  const envelope = EnvelopeSchema.safeParse(resource);
  return envelope.success ? [] : problemsFromZod(envelope.error);
}

/** Whether a manifest takes its card from the agent (spec.source: docs/adopt.md). */
export function hasSource(resource: unknown): boolean {
  const spec = specOf(resource);
  return !!spec && typeof spec === 'object' && 'source' in spec;
}

/**
 * What can be checked of an AgentCard that takes its card from the agent (spec.source) without
 * the agent's card: the envelope, the spec as the API server's schema has it (spec.source,
 * spec.remove's JSON Pointers, spec.card as an overlay, signing, serving, probe, audiences) and
 * credentials anywhere in the overlay or the audiences. Lint needs the whole card, so it waits
 * for the merge: once the source card is known, the merged spec (operator/source/resolve.ts) is
 * validated by validateResource like a written one, as the controller does.
 */
export function validateSourceResource(
  resource: unknown,
  opts: ValidateOptions = {},
): { problems: Problem[] } {
  const spec = specOf(resource);
  const tooDeep = nestingProblem(spec, ['spec']);
  if (tooDeep) return { problems: [...envelopeProblems(resource), tooDeep] };
  const result = AgentCardResourceSpecSchema.safeParse(spec);
  const problems = [
    ...envelopeProblems(resource),
    ...(result.success ? [] : problemsFromZod(result.error, ['spec'])),
  ];
  const raw = (spec && typeof spec === 'object' ? spec : {}) as Record<string, unknown>;
  const card = findCredentials(raw.card, ['spec', 'card']);
  const audiences = checkAudiences(raw.audiences, undefined, undefined);
  problems.push(...card.problems, ...audiences.problems);
  return { problems: finish(problems, [...card.secretKeys, ...audiences.secretKeys], opts) };
}
