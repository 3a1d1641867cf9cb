/**
 * One AgentCard as a catalog entry (AI Catalog spec, "Catalog Entry"), without any I/O: the
 * controller hands over what the informer cache holds (CardView) and gets an entry, with the facts
 * the HTML page shows next to it, or the reason the card is left out.
 *
 * - `identifier`: `urn:air:{publisher}:{namespace}:{name}` (spec "Identifiers"), stable across
 *   versions, so one agent keeps one identifier however often its card changes.
 * - `type`: application/a2a-agent-card+json.
 * - `url`: where the card is served for the catalog's audience (cardLocation, below), or `data`:
 *   the published (signed) card itself.
 * - `tags`: the union of the skills' tags; `version`: the card's version.
 * - `displayName` and `description` are omitted: the card carries them (spec "Catalog Entry":
 *   they SHOULD be omitted when the artifact has its own).
 */
import { A2A_AGENT_CARD_MEDIA_TYPE, WELL_KNOWN_AGENT_CARD_PATH, type CatalogEntry } from './document.ts';
import { CARD_URL_ANNOTATION } from '../api/names.ts';
import { DEFAULT_AUDIENCE } from '../card/audience.ts';

/** What the catalog needs to know about one AgentCard, read from the cache. */
export interface CardView {
  namespace: string;
  name: string;
  labels: Readonly<Record<string, string>>;
  annotations: Readonly<Record<string, string>>;
  /** spec.card as stored (raw JSON). */
  card: unknown;
  /** spec.audiences as stored (raw JSON; absent before audiences exist). */
  audiences?: unknown;
  /** The Ready condition's status, and its message when it is not True. */
  ready: 'True' | 'False' | 'Unknown';
  readyMessage?: string;
  /** Whether the published card carries signatures (status.signatures non-empty). */
  signed: boolean;
  /** status.reachableInterfaces ("2/3"), and whether InterfacesReachable is True. */
  reachableInterfaces?: string;
  interfacesReachable?: 'True' | 'False' | 'Unknown';
  /** The published card text for the audience (only read for inline entries). */
  publishedCard?: string;
  /**
   * Why a policy in Enforce mode keeps the card out of every catalog (its PolicyCompliant
   * condition, reason PolicyEnforced, for the current generation); none: listed as usual.
   */
  policyWithheld?: string;
}

/** The facts the HTML page shows for one agent (escaped there, never here). */
export interface AgentFacts {
  name: string;
  description: string;
  version: string;
  skills: string[];
  tags: string[];
  signed: boolean;
  /**
   * Who signed the card, when the catalog's trust policy verified it: the identity of the
   * certificate chain (a SPIFFE ID), or `kid <kid>` of a trusted JWKS key.
   */
  signedBy?: string;
  /** True: every interface proved reachable at the last probe; false: one did not; undefined: not probed. */
  reachable?: boolean;
  reachableInterfaces?: string;
  /** Where the card is served (the page links to it), when known. */
  cardUrl?: string;
  namespace: string;
  /** Set for an entry imported from another cluster (imported.ts): where it comes from. */
  origin?: EntryOrigin;
}

/** Where an imported entry comes from (the `dev.agentcard.origin` extension member, imported.ts). */
export interface EntryOrigin {
  /** The name the CatalogImport gives its origin (a cluster name), when it gives one. */
  cluster?: string;
  /** URL of the AI Catalog the entry was found in (a nested one, when it was nested). */
  catalog: string;
  /** The identity that signed the card and was verified at import (a SPIFFE ID, or `kid <kid>`). */
  signer: string;
}

export interface BuiltEntry {
  entry: CatalogEntry;
  facts: AgentFacts;
}

export type EntryResult = { ok: true; built: BuiltEntry } | { ok: false; skip: string };

export interface EntryOptions {
  publisher: string;
  /** undefined: the default audience. */
  audience?: string;
  mode: 'url' | 'inline';
  requireReady: boolean;
}

/** The entry identifier of an AgentCard (AI Catalog spec, portable `urn:air` identifiers). */
export function cardIdentifier(publisher: string, namespace: string, name: string): string {
  return `urn:air:${publisher}:${namespace}:${name}`;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The origin of an interface URL; a gRPC `host:port` without a scheme (A2A after 1.0.1) is https. */
function originOf(url: string): string | undefined {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? url : `https://${url}`;
  try {
    const u = new URL(withScheme);
    if (u.protocol !== 'https:' && u.protocol !== 'http:') return `https://${u.host}`;
    return u.origin === 'null' ? undefined : u.origin;
  } catch {
    return undefined;
  }
}

/**
 * Where an AgentCard's card is served for an audience (the one lookup the audiences work plugs
 * into): for a named audience, `https://{first host}/.well-known/agent-card.json`; for the
 * default audience, the agentcard.dev/card-url annotation when set, else the origin of the first
 * interface plus the well-known path (A2A spec section 8.2). An error string says why there is none.
 */
export function cardLocation(
  card: CardView,
  audience: string | undefined,
): { url: string } | { error: string } {
  if (audience !== undefined && audience !== DEFAULT_AUDIENCE) {
    const list = Array.isArray(card.audiences) ? card.audiences : [];
    const match = list.find((a) => isObject(a) && a.name === audience) as Record<string, unknown> | undefined;
    if (!match) return { error: `no audience "${audience}" in spec.audiences` };
    // A wildcard host (`*.example.com`) names no one URL: the first exact host is used.
    const hosts = Array.isArray(match.hosts) ? match.hosts : [];
    const host = hosts.find((h): h is string => typeof h === 'string' && h !== '' && !h.startsWith('*'));
    if (!host) return { error: `audience "${audience}" has no host without a wildcard` };
    return { url: `https://${host.toLowerCase()}${WELL_KNOWN_AGENT_CARD_PATH}` };
  }
  const explicit = card.annotations[CARD_URL_ANNOTATION];
  if (explicit !== undefined) {
    return /^https?:\/\/\S+$/.test(explicit) && URL.canParse(explicit)
      ? { url: explicit }
      : { error: `annotation ${CARD_URL_ANNOTATION} is not an http(s) URL` };
  }
  const interfaces =
    isObject(card.card) && Array.isArray(card.card.supportedInterfaces) ? card.card.supportedInterfaces : [];
  const first = interfaces[0];
  const origin = isObject(first) ? originOf(str(first.url)) : undefined;
  if (!origin) return { error: 'its first interface has no URL to take the origin from' };
  return { url: `${origin}${WELL_KNOWN_AGENT_CARD_PATH}` };
}

/** The card's skills' tags, each once, in order of appearance. */
function skillTags(skills: unknown[]): string[] {
  const tags = new Set<string>();
  for (const skill of skills) {
    if (!isObject(skill) || !Array.isArray(skill.tags)) continue;
    for (const tag of skill.tags) if (typeof tag === 'string' && tag.trim()) tags.add(tag.trim());
  }
  return [...tags];
}

export function buildEntry(card: CardView, opts: EntryOptions): EntryResult {
  const where = `${card.namespace}/${card.name}`;
  if (card.policyWithheld !== undefined)
    return { ok: false, skip: `${where}: withheld by policy (${card.policyWithheld.slice(0, 120)})` };
  if (opts.requireReady && card.ready !== 'True') {
    return {
      ok: false,
      skip: `${where}: not Ready${card.readyMessage ? ` (${card.readyMessage.slice(0, 120)})` : ''}`,
    };
  }
  if (!isObject(card.card)) return { ok: false, skip: `${where}: spec.card is not an object` };
  const location = cardLocation(card, opts.audience);
  const skills = Array.isArray(card.card.skills) ? card.card.skills : [];
  const tags = skillTags(skills);
  const version = str(card.card.version);
  const entry: CatalogEntry = {
    identifier: cardIdentifier(opts.publisher, card.namespace, card.name),
    type: A2A_AGENT_CARD_MEDIA_TYPE,
  };
  if (opts.mode === 'inline') {
    if (!card.publishedCard) return { ok: false, skip: `${where}: no published card for the audience yet` };
    try {
      entry.data = JSON.parse(card.publishedCard) as CatalogEntry['data'];
    } catch {
      return { ok: false, skip: `${where}: the published card is not JSON` };
    }
  } else {
    if ('error' in location) return { ok: false, skip: `${where}: ${location.error}` };
    entry.url = location.url;
  }
  if (tags.length > 0) entry.tags = tags;
  if (version) entry.version = version;
  const reachable =
    card.interfacesReachable === 'True' ? true : card.interfacesReachable === 'False' ? false : undefined;
  return {
    ok: true,
    built: {
      entry,
      facts: {
        name: str(card.card.name) || card.name,
        description: str(card.card.description),
        version,
        skills: skills
          .filter(isObject)
          .map((s) => str(s.name) || str(s.id))
          .filter(Boolean),
        tags,
        signed: card.signed,
        ...(reachable !== undefined ? { reachable } : {}),
        ...(card.reachableInterfaces ? { reachableInterfaces: card.reachableInterfaces } : {}),
        ...('url' in location ? { cardUrl: location.url } : {}),
        namespace: card.namespace,
      },
    },
  };
}
