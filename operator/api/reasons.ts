/**
 * Every condition reason the controllers write, by condition type: the one source of truth for
 * the code (the types below), the CRD descriptions and the API reference (operator/card/resource.ts
 * and operator/catalog/resource.ts list them from here).
 *
 * The CRDs do not put these in an `enum`, on purpose. The API server validates the whole object
 * on every status write, so an enum on `status.conditions[].reason` would:
 * - reject every status write of an operator whose CRD is older than its code (a reason added in
 *   the new version; the CRD is not upgraded, e.g. `crds.enabled=false` or `helm upgrade` of a
 *   chart installed with CRDs from `crds/`), and every status write of an older operator run
 *   against a newer CRD after a rollback if a reason was ever dropped;
 * - reject a condition of another type that another tool adds to the same list (conditions is a
 *   map list keyed by type; a GitOps health check or a user may add one), and with it the
 *   operator's own status writes, since the object as a whole no longer validates.
 * A status write that fails forever is worse than an unknown reason. metav1.Condition keeps
 * `reason` free-form (a CamelCase pattern only), and cert-manager's Certificate conditions do the
 * same; so do we: the pattern stays, the known values are listed in the description.
 */
/**
 * The probe's verdicts (operator/probe/): the same CamelCase words in status.interfaces[].reason,
 * the CLI output and the `reason` metric label.
 */
export const PROBE_REASONS = [
  'Reachable',
  'BindingMismatch',
  'VersionMismatch',
  'Unauthenticated',
  'DNSFailed',
  'ServicePortNotFound',
  'ConnectionFailed',
  'TLSError',
  'Timeout',
  'HTTPError',
  'Blocked',
  'Unsupported',
] as const;
export const ACCEPTED_REASONS = ['Valid', 'InvalidSpec', 'InvalidName'] as const;
/** An adopted AgentCard (spec.source) is not accepted while its source has given no card. */
export const CARD_ACCEPTED_REASONS = [...ACCEPTED_REASONS, 'SourceUnavailable'] as const;
export const SIGNED_REASONS = [
  'Signed',
  'SigningNotConfigured',
  'SigningKeyNotFound',
  'SigningKeyInvalid',
  'SigningCertificateInvalid',
  'SpecNotAccepted',
] as const;
/** An AgentCard's keys can name an issuerRef (operator/controllers/issuer/); a catalog's cannot. */
export const CARD_SIGNED_REASONS = [
  ...SIGNED_REASONS,
  'CertificatePending',
  'CertificateNotRequested',
] as const;
/** Published, for both kinds: the too-large reason names what does not fit. */
const PUBLISH_OUTCOME_REASONS = ['Published', 'NotPublished', 'PublishFailed', 'PublishRejected'] as const;
export const CARD_PUBLISHED_REASONS = [
  ...PUBLISH_OUTCOME_REASONS,
  'CardTooLarge',
  'BreakingChangeHeld',
  'PolicyViolation',
] as const;
/** TrustPolicyUnavailable: spec.trust cannot be used, so no card can be verified. */
export const CATALOG_PUBLISHED_REASONS = [
  ...PUBLISH_OUTCOME_REASONS,
  'CatalogTooLarge',
  'TrustPolicyUnavailable',
] as const;
/**
 * InterfacesReachable (AgentCard only): all probed interfaces reachable, none to probe, probes
 * off or not run yet, or the verdict of the first unreachable interface (operator/probe/types.ts).
 */
export const INTERFACES_REASONS = [
  'AllReachable',
  'NothingToProbe',
  'ProbesDisabled',
  'ProbesPending',
  ...PROBE_REASONS.filter((r) => r !== 'Reachable'),
] as const;
/** CertificatesValid (AgentCard only, when a signing key is a certificate). */
export const CERTIFICATES_VALID_REASONS = ['Valid', 'CertificateExpiring'] as const;
/**
 * SourceAvailable (adopted AgentCards only): adopted, not fetched yet, the spec not accepted,
 * fetching off, or why the fetch failed. The fetch failures are SOURCE_REASONS of
 * operator/source/fetch.ts, listed here because that module depends on the schema that depends
 * on this one (a unit test keeps the two lists equal).
 */
export const SOURCE_AVAILABLE_REASONS = [
  'Adopted',
  'Fetching',
  'SpecNotAccepted',
  'SourceFetchDisabled',
  'SourceBlocked',
  'SourceTimeout',
  'SourceRedirected',
  'SourceTooLarge',
  'SourceNotFound',
  'SourceHTTPError',
  'SourceDNSFailed',
  'SourceUnreachable',
  'SourceTLSError',
  'SourceNotJSON',
  'SourceCardInvalid',
  'SourceSignatureInvalid',
  'SourceServicePortNotFound',
] as const;
/** Ready's own reasons; otherwise Ready copies the reason of the condition that blocks it. */
/** Serving (centrally served AgentCards only): whether another card claims one of its hosts. */
export const SERVING_REASONS = ['HostsUnique', 'HostConflict'] as const;
/**
 * Delivered (AgentCards whose audiences set verifyServed): what a client receives from the public
 * hosts, the served-card check's verdicts (operator/served/compare.ts), the worst host's first;
 * or the check not run yet, off, or with no host it can ask.
 */
export const DELIVERED_REASONS = [
  'ServedAsSigned',
  'ServedAsPublished',
  'Rewritten',
  'SignatureBroken',
  'Unreachable',
  'CheckPending',
  'ChecksDisabled',
  'NothingToCheck',
] as const;
export const READY_REASONS = ['Ready', 'Reconciling'] as const;
/**
 * PolicyCompliant (with --policies, AgentCards an AgentPolicy or ClusterAgentPolicy selects):
 * every rule passes, one fails, or a rule lacks a fact (operator/policy/evaluate.ts).
 */
export const POLICY_COMPLIANT_REASONS = [
  'Compliant',
  'PolicyViolation',
  'PolicyEnforced',
  'RulesNotEvaluated',
] as const;

export type AcceptedReason = (typeof ACCEPTED_REASONS)[number];
export type CardAcceptedReason = (typeof CARD_ACCEPTED_REASONS)[number];
export type CertificatesValidReason = (typeof CERTIFICATES_VALID_REASONS)[number];
export type SourceAvailableReason = (typeof SOURCE_AVAILABLE_REASONS)[number];
export type SignedReason = (typeof SIGNED_REASONS)[number];
export type CardSignedReason = (typeof CARD_SIGNED_REASONS)[number];
export type ServingReason = (typeof SERVING_REASONS)[number];
export type DeliveredReason = (typeof DELIVERED_REASONS)[number];
export type CardPublishedReason = (typeof CARD_PUBLISHED_REASONS)[number];
export type PolicyCompliantReason = (typeof POLICY_COMPLIANT_REASONS)[number];
export type CatalogPublishedReason = (typeof CATALOG_PUBLISHED_REASONS)[number];
export type InterfacesReason =
  | 'AllReachable'
  | 'NothingToProbe'
  | 'ProbesDisabled'
  | 'ProbesPending'
  | Exclude<(typeof PROBE_REASONS)[number], 'Reachable'>;

/** The reasons of each AgentCard condition type. */
export interface CardReasons {
  Accepted: CardAcceptedReason;
  Signed: CardSignedReason;
  Published: CardPublishedReason;
  InterfacesReachable: InterfacesReason;
  CertificatesValid: CertificatesValidReason;
  SourceAvailable: SourceAvailableReason;
  Serving: ServingReason;
  Delivered: DeliveredReason;
  PolicyCompliant: PolicyCompliantReason;
  /** Ready waits for Accepted, Signed, Published and InterfacesReachable only (conditions.ts). */
  Ready:
    | (typeof READY_REASONS)[number]
    | CardAcceptedReason
    | CardSignedReason
    | CardPublishedReason
    | InterfacesReason;
}

/** The reasons of each AgentCatalog and ClusterAgentCatalog condition type. */
export interface CatalogReasons {
  Accepted: AcceptedReason;
  Signed: SignedReason;
  Published: CatalogPublishedReason;
  Ready: (typeof READY_REASONS)[number] | AcceptedReason | SignedReason | CatalogPublishedReason;
}

/** One line for a CRD description: "Accepted: Valid, InvalidSpec; Signed: ...". */
export function reasonsDescription(byType: Record<string, readonly string[]>): string {
  return Object.entries(byType)
    .map(([type, reasons]) => `${type}: ${reasons.join(', ')}`)
    .join('; ');
}

export const CARD_REASONS_BY_TYPE = {
  Accepted: CARD_ACCEPTED_REASONS,
  Signed: CARD_SIGNED_REASONS,
  Published: CARD_PUBLISHED_REASONS,
  InterfacesReachable: INTERFACES_REASONS,
  CertificatesValid: CERTIFICATES_VALID_REASONS,
  SourceAvailable: SOURCE_AVAILABLE_REASONS,
  Serving: SERVING_REASONS,
  Delivered: DELIVERED_REASONS,
  PolicyCompliant: POLICY_COMPLIANT_REASONS,
  Ready: READY_REASONS,
} as const;

export const CATALOG_REASONS_BY_TYPE = {
  Accepted: ACCEPTED_REASONS,
  Signed: SIGNED_REASONS,
  Published: CATALOG_PUBLISHED_REASONS,
  Ready: READY_REASONS,
} as const;

// ---- CatalogImport (operator/federation/) ------------------------------------------------------

/** Accepted: the spec is valid and its trust policy's documents can be read and parsed. */
export const IMPORT_ACCEPTED_REASONS = ['Valid', 'InvalidSpec', 'TrustPolicyUnavailable'] as const;
/**
 * Fetched: the remote catalog (and the nested catalogs below it) was read and its signature
 * verified as spec.catalogSignature asks; or not yet; or why not (operator/federation/fetch.ts).
 */
export const IMPORT_FETCHED_REASONS = [
  'Fetched',
  'Pending',
  'Blocked',
  'Timeout',
  'Redirected',
  'TooLarge',
  'NotFound',
  'HTTPError',
  'DNSFailed',
  'Unreachable',
  'TLSError',
  'NotJSON',
  'CatalogInvalid',
  'CatalogUnsigned',
  'CatalogSignatureInvalid',
] as const;
/**
 * Why an entry of a remote catalog is not imported (status.refused, the Events, the `reason` of
 * agentcard_import_refused): its card does not verify against spec.trust, or cannot be read, or
 * was kept past spec.maxStaleness while the origin was down.
 */
export const IMPORT_REFUSAL_REASONS = [
  'SignatureInvalid',
  'Unsigned',
  'SignerNotTrusted',
  'IdentityNotAllowed',
  'ManifestInvalid',
  'Invalid',
  'Unreachable',
  'TooLarge',
  'DepthExceeded',
  'Stale',
] as const;
export type ImportAcceptedReason = (typeof IMPORT_ACCEPTED_REASONS)[number];
export type ImportFetchedReason = (typeof IMPORT_FETCHED_REASONS)[number];
export type ImportRefusalReason = (typeof IMPORT_REFUSAL_REASONS)[number];

/** The reasons of each CatalogImport condition type. */
export interface ImportReasons {
  Accepted: ImportAcceptedReason;
  Fetched: ImportFetchedReason;
  Ready: (typeof READY_REASONS)[number] | ImportAcceptedReason | ImportFetchedReason;
}

export const IMPORT_REASONS_BY_TYPE = {
  Accepted: IMPORT_ACCEPTED_REASONS,
  Fetched: IMPORT_FETCHED_REASONS,
  Ready: READY_REASONS,
} as const;
