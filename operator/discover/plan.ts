/**
 * The pure decisions of discovery: where to look for a URL the user gave, what a fetched JSON
 * document is, how URLs are compared, and when nesting loops. No I/O here.
 */
import {
  AI_CATALOG_MEDIA_TYPE,
  A2A_AGENT_CARD_MEDIA_TYPE,
  WELL_KNOWN_AGENT_CARD_PATH,
  WELL_KNOWN_CATALOG_PATH,
  mediaTypeOf,
} from '../catalog/document.ts';
import { UserError } from '../errors.ts';

/**
 * Parses a URL the user gave (or a catalog holds, relative to `base`): http or https only, no
 * credentials in it (they would end up in output), fragment dropped. Throws UserError.
 */
export function parseTargetUrl(text: string, base?: string): URL {
  let url: URL;
  try {
    url = new URL(text, base);
  } catch {
    throw new UserError(`'${shorten(text)}' is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UserError(`${url.protocol.replace(/:$/, '')} URLs are not fetched (only http and https)`);
  }
  if (url.username || url.password)
    throw new UserError('URLs with credentials (user:password@) are not fetched');
  url.hash = '';
  return url;
}

/**
 * The URLs to try for a start URL. An origin (no path beyond "/", no query) is looked up the
 * AI Catalog way first, then the A2A way (AI Catalog spec "Well-Known URI"; A2A spec section
 * 8.2); any other URL is fetched as it is and its content says what it is.
 */
export function startCandidates(url: URL): { url: string; expect: 'catalog' | 'card' | 'any' }[] {
  if ((url.pathname === '/' || url.pathname === '') && !url.search) {
    return [
      { url: new URL(WELL_KNOWN_CATALOG_PATH, url).href, expect: 'catalog' },
      { url: new URL(WELL_KNOWN_AGENT_CARD_PATH, url).href, expect: 'card' },
    ];
  }
  return [{ url: url.href, expect: 'any' }];
}

export type DocumentKind = 'catalog' | 'card' | 'unknown';

/**
 * What a fetched document is: by its media type when the server names one of the two, else by
 * shape (a catalog has specVersion and entries; a card has supportedInterfaces, or name with the
 * v0.3 url). The body decides over a generic type such as application/json.
 */
export function classifyDocument(value: unknown, contentType?: string): DocumentKind {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return 'unknown';
  const type = contentType ? mediaTypeOf(contentType) : '';
  if (type === AI_CATALOG_MEDIA_TYPE) return 'catalog';
  if (type === A2A_AGENT_CARD_MEDIA_TYPE) return 'card';
  const doc = value as Record<string, unknown>;
  if ('specVersion' in doc && Array.isArray(doc.entries)) return 'catalog';
  if ('supportedInterfaces' in doc || ('name' in doc && ('url' in doc || 'skills' in doc))) return 'card';
  return 'unknown';
}

/**
 * The loop a catalog URL would close, as "a -> b -> a", when it is already on the path that led
 * to it (AI Catalog spec "Nested Catalog Depth and Circular References"); undefined otherwise.
 */
export function nestingLoop(path: readonly string[], url: string): string | undefined {
  const at = path.indexOf(url);
  return at === -1 ? undefined : [...path.slice(at), url].join(' -> ');
}

/**
 * A URL as given, safe to print: user:password@ (refused anyway, see parseTargetUrl) replaced by
 * "***@", so that an error about a URL never shows the credentials written in it.
 */
export function redactUrl(text: string): string {
  return shorten(text.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#@]*@/i, '$1***@'));
}

/** A value from a hostile server, made safe to print: one line, no control characters, bounded. */
export function shorten(text: string, max = 200): string {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is removed
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return clean.length > max ? `${clean.slice(0, max)}...` : clean;
}
