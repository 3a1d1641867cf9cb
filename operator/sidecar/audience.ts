/**
 * Audience selection by Host: which variant of a document a request gets.
 *
 * The published ConfigMap holds the default variant (`agent-card.json`, `agent.json`) and, for
 * other audiences, `host.<host>.<file>` (one exact host name) and `wildcard.<suffix>.<file>`
 * (`*.<suffix>`: exactly one more leading label). `jwks.json` and `cache-max-age-seconds` are
 * shared. A document is looked up per file: the exact host's, then the wildcard of the host's
 * parent suffix, then the default. The nginx mode (nginx.ts) follows the same order with
 * `try_files`, so both modes answer alike.
 */

/** Files that have per-audience variants (the cards; the keys are shared). */
export const VARIANT_FILES = ['agent-card.json', 'agent.json'] as const;

// RFC 1123 host name, lowercase: labels of letters, digits and inner hyphens, at most 63 each.
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const DNS_NAME = new RegExp(`^${LABEL}(?:\\.${LABEL})*$`);
const VARIANT_FILE = new RegExp(
  `^(host|wildcard)\\.(${LABEL}(?:\\.${LABEL})*)\\.(${VARIANT_FILES.map((f) => f.replace(/[.-]/g, '\\$&')).join('|')})$`,
);

/** Whether a ConfigMap key is a per-audience variant (`host.<h>.<file>` or `wildcard.<s>.<file>`). */
export function isVariantFile(name: string): boolean {
  const m = VARIANT_FILE.exec(name);
  return m !== null && m[2]!.length <= 253;
}

/**
 * The host a request names, as a lowercase DNS name without port and without one trailing dot;
 * undefined when it is not a valid DNS name (an IP literal, `..`, `/`, a NUL, a space, ...), in
 * which case the default variant is served and no file name is ever built from it.
 */
export function normalizeHost(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  let host = raw.trim();
  // A port is only stripped from a name, never from an IPv6 literal (not a DNS name anyway).
  const colon = host.lastIndexOf(':');
  if (colon >= 0) {
    if (!/^\d{1,5}$/.test(host.slice(colon + 1))) return undefined;
    host = host.slice(0, colon);
  }
  if (host.endsWith('.')) host = host.slice(0, -1);
  host = host.toLowerCase();
  if (host.length === 0 || host.length > 253 || !DNS_NAME.test(host)) return undefined;
  return host;
}

/**
 * The host to select by: `Host`, or the first `X-Forwarded-Host` value when the proxy in front
 * is trusted (RFC 7239 section 5.3's predecessor header; a client can send any value, so it is
 * only believed when the operator says the proxy sets it).
 */
export function requestHost(
  headers: { host?: string | undefined; 'x-forwarded-host'?: string | string[] | undefined },
  trustForwardedHost: boolean,
): string | undefined {
  if (trustForwardedHost) {
    const fwd = headers['x-forwarded-host'];
    const first = (Array.isArray(fwd) ? fwd[0] : fwd)?.split(',', 1)[0];
    if (first !== undefined && first.trim() !== '') return normalizeHost(first);
  }
  return normalizeHost(headers.host);
}

/** The file names to try for `file`, most specific first (the default file last). */
export function candidates(file: string, host: string | undefined): string[] {
  if (host === undefined || !(VARIANT_FILES as readonly string[]).includes(file)) return [file];
  const dot = host.indexOf('.');
  return dot < 0
    ? [`host.${host}.${file}`, file]
    : [`host.${host}.${file}`, `wildcard.${host.slice(dot + 1)}.${file}`, file];
}
