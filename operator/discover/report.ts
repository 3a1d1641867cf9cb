/** What discovery reports: one entry per card, per catalog and per failure. The JSON output is this. */
import type { Problem } from '../card/problem.ts';
import type { ProbeReason } from '../probe/types.ts';
import type { SignatureReport } from './check.ts';
import type { EntryOrigin } from '../catalog/entries.ts';

export interface InterfaceReport {
  url: string;
  protocolBinding: string;
  protocolVersion: string;
  tenant?: string;
  /** Present with --probe. */
  probe?: { reachable: boolean; reason: ProbeReason; message: string; latencyMs: number };
}

export interface SkillSummary {
  id: string;
  name: string;
  description?: string;
  tags: string[];
}

export interface CardReport {
  /** The card's URL, or `<catalog URL>#entries[i]` for a card inline in a catalog. */
  source: string;
  /** The catalogs that led to it, outermost first. */
  via: string[];
  /** The catalog entry that listed it. */
  entry?: {
    identifier: string;
    displayName?: string;
    description?: string;
    tags?: string[];
    /**
     * Where the listing catalog says it imported the entry from (its `dev.agentcard.imported`
     * member, docs/federation.md): a claim of that catalog, which its own signature covers. The
     * card's signature is checked here against this run's trust, whatever the claim says.
     */
    origin?: EntryOrigin;
  };
  name?: string;
  version?: string;
  description?: string;
  skills: SkillSummary[];
  interfaces: InterfaceReport[];
  /** Validation problems (errors and warnings) from the card engine. */
  problems: Problem[];
  signature: SignatureReport;
  /** The Trust Manifest of the catalog entry that listed it, when the entry carries one. */
  trustManifest?: ManifestReport;
  /**
   * Valid, verified, its entry's trust manifest (if any) verified, and (with --probe) every
   * interface it could check reachable.
   */
  ok: boolean;
  cache?: 'fresh' | 'revalidated';
}

/**
 * An entry's Trust Manifest (AI Catalog spec "Verifying Artifact Integrity"): `verified` when a
 * trusted signature proves its identity (the signing certificate's, or a trusted JWKS URL) and
 * its subject matches the entry and the card; `invalid` when it contradicts them; `untrusted`
 * when no trusted key verifies it.
 */
export interface ManifestReport {
  status: 'verified' | 'untrusted' | 'invalid';
  /** The identity the manifest names (proven when verified). */
  identity: string;
  message: string;
}

export interface CatalogReport {
  url: string;
  via: string[];
  host?: string;
  /** Entries by kind: A2A cards, nested catalogs, other artifact types (not followed). */
  entries: { cards: number; catalogs: number; other: number };
  /** Present when the catalog carries a `signature`. */
  signature?: SignatureReport;
  cache?: 'fresh' | 'revalidated';
}

/** Why a fetch failed (fetch.ts): stable codes, in the JSON output and the table. */
export const FETCH_ERROR_CODES = [
  'blocked',
  'redirect',
  'not-found',
  'http',
  'too-large',
  'too-deep',
  'not-json',
  'timeout',
  'deadline',
  'budget',
  'dns',
  'connect',
  'tls',
] as const;
export type FetchErrorCode = (typeof FETCH_ERROR_CODES)[number];

/** Every code a discover run reports: a failed fetch, or what the crawl made of the document. */
export const DISCOVER_ERROR_CODES = [
  ...FETCH_ERROR_CODES,
  'loop',
  'depth',
  'limit',
  'invalid-catalog',
  'catalog-invalid',
  'catalog-untrusted',
  'catalog-unsigned',
  'unknown-document',
  'bad-url',
  'jwks',
  'trust-bundle',
  'usage',
  'error',
] as const;
export type DiscoverErrorCode = (typeof DISCOVER_ERROR_CODES)[number];

export interface ErrorReport {
  url: string;
  via: string[];
  /** Stable code (DISCOVER_ERROR_CODES). */
  code: DiscoverErrorCode;
  message: string;
}

export interface DiscoverReport {
  cards: CardReport[];
  catalogs: CatalogReport[];
  errors: ErrorReport[];
  /** Cards left out by --skill, --tag or --text. */
  filteredOut: number;
  /** Everything listed verified (exit code 0). */
  ok: boolean;
  stats: { requests: number; bytes: number; durationMs: number };
}
