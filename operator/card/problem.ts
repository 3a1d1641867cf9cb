/**
 * Problems found in a card or spec, each with the path of the offending field, and their
 * conversion from zod issues. Paths read like `spec.card.skills[0].id` or
 * `securitySchemes["my scheme"].apiKeySecurityScheme`.
 */
import type { z } from 'zod';

export type Severity = 'error' | 'warning';
export type Problem = { path: string; message: string; severity: Severity };
export type PathSegment = string | number;

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

export function formatPath(segments: readonly PathSegment[]): string {
  let out = '';
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (IDENTIFIER.test(s)) out += out ? `.${s}` : s;
    else out += `[${JSON.stringify(s)}]`;
  }
  return out;
}

/** Extra words for unknown fields that usually come from an older card shape. */
const UNKNOWN_FIELD_HINTS: Record<string, string> = {
  type: 'a v0.3 "type"-tagged security scheme? v1.0 wraps each scheme, e.g. {apiKeySecurityScheme: {location, name}}',
  in: 'a v0.3 apiKey scheme? v1.0 uses apiKeySecurityScheme.location',
  transport: 'v1.0 uses protocolBinding',
  signatures: 'the operator adds signatures; remove them from spec.card',
};

function describeIssue(issue: z.core.$ZodIssue): string {
  const message = issue.message.replace(/^Invalid input: /, '');
  if (issue.code === 'invalid_type' && /received undefined$/.test(issue.message))
    return 'required field is missing';
  if (issue.code === 'invalid_type') return message.replace('received', 'got');
  if (issue.code === 'too_small' || issue.code === 'too_big') {
    const bound = Number(issue.code === 'too_small' ? issue.minimum : issue.maximum);
    const word = issue.code === 'too_small' ? 'at least' : 'at most';
    if (issue.origin === 'array') return `must have ${word} ${bound} item${bound === 1 ? '' : 's'}`;
    if (issue.origin === 'string') {
      return bound === 1 && word === 'at least'
        ? 'must not be empty'
        : `must be ${word} ${bound} characters long`;
    }
    return `must be ${issue.code === 'too_small' ? '>=' : '<='} ${bound}`;
  }
  return message;
}

/** Converts zod issues into problems; `prefix` is prepended to every path (e.g. ["spec"]). */
export function problemsFromZod(error: z.ZodError, prefix: readonly PathSegment[] = []): Problem[] {
  const problems: Problem[] = [];
  for (const issue of error.issues) {
    const base = [...prefix, ...(issue.path as PathSegment[])];
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const hint = UNKNOWN_FIELD_HINTS[key];
        problems.push({
          path: formatPath([...base, key]),
          message: hint ? `unknown field (${hint})` : 'unknown field',
          severity: 'error',
        });
      }
      continue;
    }
    problems.push({ path: formatPath(base) || '(root)', message: describeIssue(issue), severity: 'error' });
  }
  return problems;
}

export const hasErrors = (problems: readonly Problem[]): boolean =>
  problems.some((p) => p.severity === 'error');

/** `path: message` (with a `warning: ` prefix for warnings): how the CLI prints a problem. */
export const formatProblem = (p: Problem): string =>
  `${p.severity === 'warning' ? 'warning: ' : ''}${p.path}: ${p.message}`;
