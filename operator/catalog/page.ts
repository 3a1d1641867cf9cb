/**
 * The catalog's page for people: one static HTML document that lists every agent of a catalog
 * (name, description, skills, tags, version, signed or not, reachable at the last probe, and a
 * link to its card; for an agent imported from another cluster, that cluster and the identity
 * that signed its card) and the nested catalogs. Static HTML and one inline style sheet only
 * (page-style.ts): it works under `default-src 'none'`. Every string from a user (AgentCard
 * fields, spec.host, include[]) goes through escapeHtml, and links only ever carry http(s) URLs
 * or relative paths this module writes itself.
 *
 * Nothing time-dependent is written: the page changes exactly when the catalog does, so a
 * steady catalog causes no write.
 */
import type { AgentFacts } from './entries.ts';
import { PAGE_META_CSP, PAGE_STYLE } from './page-style.ts';

export interface NestedLink {
  displayName: string;
  /** The JSON catalog (absolute, or relative to the page). */
  url: string;
  /** A page of it, when there is one (partitions have one). */
  pageUrl?: string;
  description?: string;
}

export interface PageInput {
  title: string;
  /** Where the JSON of this catalog is, relative to the page. */
  catalogUrl: string;
  agents: readonly AgentFacts[];
  nested: readonly NestedLink[];
  signed: boolean;
  /** e.g. "partition 2 of 8 of ..." */
  subtitle?: string;
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for element content and double-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** An href: http(s) absolute URLs and relative paths pass (escaped); anything else (javascript:, data:) does not. */
export function safeHref(url: string | undefined): string | undefined {
  if (!url) return undefined;
  if (/^https?:\/\//i.test(url)) return URL.canParse(url) ? escapeHtml(url) : undefined;
  if (/^[a-z][a-z0-9+.-]*:/i.test(url) || url.startsWith('//')) return undefined;
  return escapeHtml(url);
}

const yesNo = (value: boolean | undefined, yes: string, no: string, unknown: string) =>
  value === true
    ? `<span class="badge yes">${yes}</span>`
    : value === false
      ? `<span class="badge no">${no}</span>`
      : `<span class="badge unknown">${unknown}</span>`;

/** One agent's item of the list (rendered once per entry; build.ts keeps it while the entry stays). */
export function agentItem(a: AgentFacts): string {
  const href = safeHref(a.cardUrl);
  const reach =
    a.reachable === undefined
      ? yesNo(undefined, '', '', 'not probed')
      : yesNo(
          a.reachable,
          `reachable${a.reachableInterfaces ? ` (${escapeHtml(a.reachableInterfaces)})` : ''}`,
          `unreachable${a.reachableInterfaces ? ` (${escapeHtml(a.reachableInterfaces)} reachable)` : ''}`,
          '',
        );
  return [
    '<li class="agent">',
    `<h2>${escapeHtml(a.name)}${a.version ? `<span class="version">v${escapeHtml(a.version)}</span>` : ''}<span class="ns">${escapeHtml(a.namespace)}</span></h2>`,
    a.origin ? originLine(a.origin) : '',
    a.description ? `<p class="desc">${escapeHtml(a.description)}</p>` : '',
    a.skills.length ? `<p class="meta"><b>Skills:</b> ${a.skills.map(escapeHtml).join(', ')}</p>` : '',
    a.tags.length
      ? `<p class="meta">${a.tags.map((t) => `<span class="tag">${escapeHtml(t)}</span>`).join('')}</p>`
      : '',
    `<p class="meta">${a.signedBy ? `<span class="badge yes">signed by ${escapeHtml(a.signedBy)}</span>` : yesNo(a.signed, 'signed', 'unsigned', '')}${reach}${href ? `<a href="${href}" rel="nofollow noopener">agent card</a>` : ''}</p>`,
    '</li>',
  ].join('');
}

/** Where an imported agent comes from: its cluster, the catalog it was listed in, and who signed it. */
function originLine(origin: NonNullable<AgentFacts['origin']>): string {
  const catalog = safeHref(origin.catalog);
  return `<p class="meta origin"><b>From cluster:</b> ${escapeHtml(origin.cluster ?? '(unnamed)')} · <b>signer:</b> ${escapeHtml(origin.signer)}${catalog ? ` · <a href="${catalog}" rel="nofollow noopener">origin catalog</a>` : ''}</p>`;
}

function nestedItem(n: NestedLink): string {
  const href = safeHref(n.pageUrl ?? n.url);
  const json = n.pageUrl ? safeHref(n.url) : undefined;
  return [
    '<li class="agent">',
    `<h2>${href ? `<a href="${href}">${escapeHtml(n.displayName)}</a>` : escapeHtml(n.displayName)}</h2>`,
    n.description ? `<p class="desc">${escapeHtml(n.description)}</p>` : '',
    json ? `<p class="meta"><a href="${json}">catalog JSON</a></p>` : '',
    '</li>',
  ].join('');
}

/** A page's frame: everything but the agents' items, which come rendered (agentItem). */
export interface PageFrame extends Omit<PageInput, 'agents'> {
  agentCount: number;
}

export function renderPage(input: PageInput): string {
  return renderPageItems({ ...input, agentCount: input.agents.length }, input.agents.map(agentItem));
}

/** The page from its agents' rendered items (the same bytes as renderPage over their facts). */
export function renderPageItems(frame: PageFrame, items: readonly string[]): string {
  return framed(frame, items.join(''));
}

/** Bytes of the page without its agents' items: the page is this plus the items' bytes. */
export function pageFrameBytes(frame: PageFrame): number {
  return Buffer.byteLength(framed(frame, ''), 'utf8');
}

function framed(input: PageFrame, agentItems: string): string {
  const count = `${input.agentCount} agent${input.agentCount === 1 ? '' : 's'}`;
  const nested = input.nested.length
    ? `, ${input.nested.length} nested catalog${input.nested.length === 1 ? '' : 's'}`
    : '';
  const catalogHref = safeHref(input.catalogUrl) ?? '';
  return [
    '<!DOCTYPE html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${escapeHtml(PAGE_META_CSP)}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="referrer" content="no-referrer">',
    `<title>${escapeHtml(input.title)}</title>`,
    `<style>${PAGE_STYLE}</style>`,
    '</head><body>',
    `<header><h1>${escapeHtml(input.title)}</h1><p>${input.subtitle ? `${escapeHtml(input.subtitle)} · ` : ''}${count}${nested} · ${input.signed ? 'signed' : 'unsigned'} catalog · <a href="${catalogHref}">ai-catalog.json</a></p></header>`,
    '<main>',
    input.agentCount ? `<ul class="agents" id="agents">${agentItems}</ul>` : '<p>No agents are listed.</p>',
    input.nested.length
      ? `<h2>Nested catalogs</h2><ul class="nested" id="nested">${input.nested.map(nestedItem).join('')}</ul>`
      : '',
    '</main>',
    '<footer>Published by agentcard-operator. Reachability is the result of the last probe of every interface the card declares.</footer>',
    '</body></html>',
    '',
  ].join('\n');
}
