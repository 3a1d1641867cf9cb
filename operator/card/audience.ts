/**
 * Audiences (spec.audiences): each audience's card is spec.card with the audience's interfaces
 * and security in place of the card's. What differs per audience is exactly what makes one card
 * wrong for another client: absolute interface URLs and security requirements (A2A 1.0 section
 * 8.2: a client connects to the URLs the card names, with the schemes it requires). Everything
 * else comes from spec.card, so the audiences cannot drift apart.
 *
 * Pure functions over the validated spec; the controller renders, signs and publishes one card
 * per audience (variants.ts lists them), the CLI renders or signs the one asked for.
 */
import type { AgentCard, AgentInterface } from './schema.ts';

/** The name the default audience (spec.card itself) goes by in status; no audience may take it. */
export const DEFAULT_AUDIENCE = 'default';

/** The binding whose URL has no path (gRPC services are addressed by host and port only). */
const GRPC = 'GRPC';

/**
 * The part of an audience this module reads (the parsed schema, or raw input in refinements).
 * Written from the card's own types, not resource.ts's Audience, which imports this module.
 */
interface AudienceOverrides {
  baseURL?: string;
  supportedInterfaces?: readonly AgentInterface[];
  securitySchemes?: AgentCard['securitySchemes'];
  securityRequirements?: AgentCard['securityRequirements'];
}

const ORIGIN = /^([a-z][a-z0-9+.-]*:\/\/[^/?#]*)(.*)$/i;

/**
 * `url` moved onto `baseURL`: the base's origin and path prefix, then the URL's own path, query
 * and fragment. "http://svc.ns:8080/a2a/v1" on "https://agents.example.com/support" gives
 * "https://agents.example.com/support/a2a/v1". A GRPC interface takes the origin only.
 */
export function rebaseUrl(url: string, baseURL: string, protocolBinding: string): string {
  const base = ORIGIN.exec(baseURL);
  const own = ORIGIN.exec(url);
  if (!base) return url;
  const rest = own ? own[2]! : '';
  if (protocolBinding.toUpperCase() === GRPC) return `${base[1]}${rest}`;
  if (rest === '') return baseURL;
  return `${baseURL.replace(/\/+$/, '')}${rest.startsWith('/') ? rest : `/${rest}`}`;
}

/** The interfaces of an audience's card (its own list, spec.card's re-based, or spec.card's). */
export function audienceInterfaces(
  cardInterfaces: readonly AgentInterface[],
  audience: AudienceOverrides,
): AgentInterface[] {
  if (audience.supportedInterfaces) return audience.supportedInterfaces.map((i) => ({ ...i }));
  const base = audience.baseURL;
  if (base === undefined) return cardInterfaces.map((i) => ({ ...i }));
  return cardInterfaces.map((i) => ({ ...i, url: rebaseUrl(i.url, base, i.protocolBinding) }));
}

/** The card of one audience: spec.card with the audience's overrides in place. */
export function audienceCard<
  C extends Pick<AgentCard, 'supportedInterfaces' | 'securitySchemes' | 'securityRequirements'>,
>(card: C, audience: AudienceOverrides): C {
  const out: C = { ...card, supportedInterfaces: audienceInterfaces(card.supportedInterfaces, audience) };
  if (audience.securitySchemes !== undefined) out.securitySchemes = audience.securitySchemes;
  if (audience.securityRequirements !== undefined) out.securityRequirements = audience.securityRequirements;
  return out;
}

/** Every interface URL any audience's card declares (spec.card's first). */
export function allInterfaceUrls(spec: {
  card: { supportedInterfaces: readonly AgentInterface[] };
  audiences?: readonly AudienceOverrides[];
}): string[] {
  const urls = spec.card.supportedInterfaces.map((i) => i.url);
  for (const a of spec.audiences ?? []) {
    urls.push(...audienceInterfaces(spec.card.supportedInterfaces, a).map((i) => i.url));
  }
  return urls;
}

/** A host of spec.audiences[].hosts as servers compare it: lowercase. */
export const normalizeHost = (host: string): string => host.toLowerCase();
