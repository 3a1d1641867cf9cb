/**
 * Credential detection. An Agent Card is a public document (A2A spec: credentials are always
 * obtained out of band), so anything in it that looks like a secret is an error. Findings name
 * the kind of secret and its path, never the value.
 */
import { formatPath, type PathSegment, type Problem } from './problem.ts';

const PATTERNS: { kind: string; re: RegExp }[] = [
  { kind: 'a private key (PEM)', re: /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----/ },
  { kind: 'a JSON Web Token', re: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*/ },
  { kind: 'a bearer token', re: /\bBearer\s+(?=[A-Za-z0-9._~+/-]*[0-9])[A-Za-z0-9._~+/-]{20,}=*/i },
  { kind: 'an API secret key (sk-...)', re: /\bsk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_-]{20,}/ },
  { kind: 'a Stripe secret key', re: /\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}/ },
  { kind: 'a GitHub token', re: /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})/ },
  { kind: 'a GitLab token', re: /\bglpat-[A-Za-z0-9_-]{20,}/ },
  { kind: 'a Slack token', re: /\bxox[abposr]-[A-Za-z0-9-]{10,}/ },
  { kind: 'an AWS access key id', re: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/ },
  { kind: 'a Google API key', re: /\bAIza[0-9A-Za-z_-]{35}/ },
];

const SECRET_QUERY_PARAM =
  /^(?:api[_-]?key|access[_-]?token|auth[_-]?token|id[_-]?token|token|secret|client[_-]?secret|password|passwd|pwd|sig)$/i;

/** What kind of credential `text` seems to hold, or undefined. */
export function credentialKind(text: string): string | undefined {
  for (const { kind, re } of PATTERNS) if (re.test(text)) return kind;
  // URL.canParse, not URL.parse: the CLI supports Node.js 22.0, and URL.parse came in 22.1.
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text) && URL.canParse(text)) {
    const u = new URL(text);
    if (u.password) return 'a password in a URL';
    for (const [name, value] of u.searchParams) {
      if (SECRET_QUERY_PARAM.test(name) && value.length >= 8)
        return `a secret in the URL query parameter "${name}"`;
    }
  }
  return undefined;
}

export const REDACTED = '<redacted>';

/**
 * Finds credentials anywhere in a JSON value (keys included), skipping `signatures`. Object keys
 * that look like credentials are listed in `secretKeys` so that callers can redact them from
 * every path they report; the findings' own paths are already redacted.
 */
export function findCredentials(
  value: unknown,
  prefix: readonly PathSegment[] = [],
): { problems: Problem[]; secretKeys: string[] } {
  const problems: Problem[] = [];
  const secretKeys: string[] = [];
  const report = (path: readonly PathSegment[], kind: string) =>
    problems.push({
      path: formatPath(path) || '(root)',
      message: `looks like ${kind}; a card is public and must not carry credentials`,
      severity: 'error',
    });
  // One path array, pushed and popped as the walk goes down and up; a report copies it into a
  // string. The scan runs over every card of every reconcile.
  const path: PathSegment[] = [...prefix];
  const walk = (v: unknown, depth: number): void => {
    if (depth > 64) return;
    if (typeof v === 'string') {
      const kind = credentialKind(v);
      if (kind) report(path, kind);
    } else if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        path.push(i);
        walk(v[i], depth + 1);
        path.pop();
      }
    } else if (v !== null && typeof v === 'object') {
      const obj = v as Record<string, unknown>;
      // A private JWK (it has the private exponent or scalar "d").
      if (typeof obj.kty === 'string' && typeof obj.d === 'string') report(path, 'a private JWK');
      for (const key of Object.keys(obj)) {
        if (depth === 0 && key === 'signatures') continue;
        const kind = credentialKind(key);
        path.push(kind ? REDACTED : key);
        if (kind) {
          secretKeys.push(key);
          report(path, kind);
        }
        walk(obj[key], depth + 1);
        path.pop();
      }
    }
  };
  walk(value, 0);
  return { problems, secretKeys };
}
