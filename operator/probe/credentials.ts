/**
 * spec.probe.credentials[] -> the headers for one interface (pure). A credential is tied to one
 * interface URL and only ever sent to that interface's origin: the probe follows no redirects,
 * so the origin of the URL it is attached to is the only place it can go.
 */
import { UserError } from '../errors.ts';

/** A credential entry with its secret value already read from the Secret. */
export interface ResolvedCredential {
  url: string;
  type: 'bearer' | 'apiKey';
  /** For apiKey; default X-API-Key. */
  headerName?: string;
  /** The token or key (never logged, never in an error message). */
  value: string;
}

/** A comparable form of an interface URL: scheme, lower-case host, explicit port, path without trailing '/'. */
export function normalizeInterfaceUrl(url: string): string {
  const bare = /^[^/:]+:\d+$|^\[[0-9a-fA-F:.]+\]:\d+$/.test(url);
  try {
    const u = new URL(bare ? `bare://${url}` : url);
    const port = u.port || (u.protocol === 'https:' ? '443' : u.protocol === 'http:' ? '80' : '');
    const path = bare ? '' : u.pathname.replace(/\/+$/, '');
    return `${u.protocol}//${u.hostname.toLowerCase()}:${port}${path}${u.search}`;
  } catch {
    return url;
  }
}

function origin(url: string): string {
  const n = normalizeInterfaceUrl(url);
  const m = /^[a-z]+:\/\/[^/?]+/.exec(n);
  return m ? m[0] : n;
}

/**
 * The headers to send with the probe of `interfaceUrl`: those of the credentials whose url is that
 * interface (same normalized URL, hence same origin). Throws UserError on an unusable value,
 * naming the credential's header, never echoing the value.
 */
export function credentialHeaders(
  interfaceUrl: string,
  credentials: readonly ResolvedCredential[],
): Record<string, string> | undefined {
  const target = normalizeInterfaceUrl(interfaceUrl);
  const headers: Record<string, string> = {};
  for (const c of credentials) {
    if (normalizeInterfaceUrl(c.url) !== target || origin(c.url) !== origin(interfaceUrl)) continue;
    // Secrets often end in a newline (echo > file); anything else that breaks a header is an error.
    const value = c.value.trim();
    const name = c.type === 'bearer' ? 'Authorization' : (c.headerName ?? 'X-API-Key');
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      throw new UserError(`probe credential for ${interfaceUrl}: '${name}' is not a valid header name`);
    }
    if (value === '' || /[\r\n\0]/.test(value)) {
      throw new UserError(
        `probe credential for ${interfaceUrl} (${name}): the secret value is empty or has a line break`,
      );
    }
    headers[name] = c.type === 'bearer' ? `Bearer ${value}` : value;
  }
  return Object.keys(headers).length ? headers : undefined;
}
