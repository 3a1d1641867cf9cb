/**
 * The pure part of the issuer controller (controller.ts): which issuer a card names, the
 * identity and the cert-manager Certificate it gets, whether a live Certificate has drifted, and
 * what its status tells the card controller while no certificate is issued yet.
 *
 * In the style of cert-manager's ingress-shim: the AgentCard names an issuer, and the operator
 * creates and owns a `certificates.cert-manager.io/v1` Certificate (same name as its Secret,
 * `<card>-signing`), whose only subject alternative name is the agent's identity, rendered from
 * the administrator's template (card/identity.ts). The namespace user chooses the issuer, never
 * the identity.
 */
import {
  API_VERSION,
  CARD_LABEL,
  KIND,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  SIGNING_KEY_LABEL,
  signingCertificateName,
} from '../../api/names.ts';
import { describeError } from '../../errors.ts';
import { renderIdentity } from '../../card/identity.ts';
import type { IssuanceState } from '../../signing/issuance.ts';

export const CERT_MANAGER_GROUP = 'cert-manager.io';
export const CERTIFICATE_API_VERSION = `${CERT_MANAGER_GROUP}/v1`;
export const CERTIFICATES_PATH = `/apis/${CERTIFICATE_API_VERSION}`;

/**
 * Lifetime of a requested certificate and when cert-manager renews it. A day, renewed with a
 * third left: a leaked signing key is good for at most a day (SPIRE issues X.509-SVIDs for an
 * hour; a published card is re-signed on each renewal, so a day keeps writes at one per card per
 * 16 h), and the renewal comes long before the operator's expiry warning (lifetime / 6 before
 * notAfter, card/certificate.ts), which then fires only when renewal fails.
 */
export const CERTIFICATE_DURATION = '24h';
export const CERTIFICATE_RENEW_BEFORE = '8h';

export interface IssuerRef {
  name: string;
  kind: string;
  group: string;
}

/** How the administrator builds identities (--trust-domain, --identity-template). */
export interface IdentityPolicy {
  trustDomain: string;
  template: string;
}

/**
 * The issuerRef of a card's spec, read leniently (the spec may be invalid: a card the API server
 * let through with a key the controller refuses still gets no Certificate unless it names one).
 */
export function issuerRefOf(spec: unknown): IssuerRef | undefined {
  const keys = (spec as { signing?: { keys?: unknown } } | undefined)?.signing?.keys;
  if (!Array.isArray(keys)) return undefined;
  for (const key of keys) {
    const ref = (key as { issuerRef?: Partial<IssuerRef> } | null)?.issuerRef;
    if (ref && typeof ref.name === 'string' && ref.name !== '')
      return {
        name: ref.name,
        kind: typeof ref.kind === 'string' && ref.kind ? ref.kind : 'Issuer',
        group: typeof ref.group === 'string' && ref.group ? ref.group : CERT_MANAGER_GROUP,
      };
  }
  return undefined;
}

/**
 * The service account of a card's identity. Decision (docs/security.md, "The identity"): the one
 * of the workload the card describes when the operator knows it for sure, that is the Pod
 * template of the Deployment or StatefulSet that owns an adopted card; otherwise `default`. Never
 * a field of the AgentCard: whoever may write AgentCards in a namespace must not choose which
 * service account's identity the card is signed with.
 */
export function serviceAccountOf(
  workload: { spec?: { template?: { spec?: { serviceAccountName?: string } } } } | undefined,
): string {
  return workload?.spec?.template?.spec?.serviceAccountName || 'default';
}

export type IdentityOutcome = { ok: true; identity: string } | { ok: false; message: string };

export function cardIdentity(
  policy: IdentityPolicy,
  card: { namespace: string; name: string },
  serviceAccount: string,
): IdentityOutcome {
  try {
    return {
      ok: true,
      identity: renderIdentity(policy.template, {
        trustDomain: policy.trustDomain,
        namespace: card.namespace,
        serviceAccount,
        name: card.name,
      }),
    };
  } catch (err) {
    return { ok: false, message: describeError(err) };
  }
}

export interface CertificateObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string;
    namespace: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{
      apiVersion: string;
      kind: string;
      name: string;
      uid: string;
      controller?: boolean;
    }>;
    deletionTimestamp?: string;
  };
  spec?: Record<string, unknown>;
  status?: {
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
    notAfter?: string;
    revision?: number;
  };
}

/**
 * The Certificate the operator owns for one card: URI SAN only (no common name, as SPIFFE
 * X.509-SVIDs: SPIFFE X509-SVID section 2), the digital signature usage only (the key signs JWS,
 * nothing else), a new ECDSA P-256 key on each renewal, and the Secret labelled so that the
 * operator watches its data and re-signs the moment cert-manager renews it.
 */
export function desiredCertificate(opts: {
  card: { namespace: string; name: string; uid: string };
  identity: string;
  issuerRef: IssuerRef;
}): CertificateObject & { spec: Record<string, unknown> } {
  const name = signingCertificateName(opts.card.name);
  return {
    apiVersion: CERTIFICATE_API_VERSION,
    kind: 'Certificate',
    metadata: {
      name,
      namespace: opts.card.namespace,
      labels: certificateLabels(opts.card.name),
      ownerReferences: [
        {
          apiVersion: API_VERSION,
          kind: KIND,
          name: opts.card.name,
          uid: opts.card.uid,
          controller: true,
          blockOwnerDeletion: true,
        } as NonNullable<CertificateObject['metadata']['ownerReferences']>[number],
      ],
    },
    spec: {
      secretName: name,
      issuerRef: { ...opts.issuerRef },
      uris: [opts.identity],
      usages: ['digital signature'],
      duration: CERTIFICATE_DURATION,
      renewBefore: CERTIFICATE_RENEW_BEFORE,
      privateKey: { algorithm: 'ECDSA', size: 256, encoding: 'PKCS8', rotationPolicy: 'Always' },
      secretTemplate: { labels: { [SIGNING_KEY_LABEL]: 'true', ...certificateLabels(opts.card.name) } },
    },
  };
}

/** Labels of an owned Certificate (and its Secret): what the Certificate watch selects. */
export function certificateLabels(cardName: string): Record<string, string> {
  return {
    [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
    // A label value holds at most 63 characters; the ownerReference names the card anyway.
    ...(cardName.length <= 63 ? { [CARD_LABEL]: cardName } : {}),
  };
}

/** Whether a Certificate is controlled by the AgentCard of this uid. */
export function ownedBy(cert: CertificateObject, uid: string): boolean {
  return (cert.metadata.ownerReferences ?? []).some((r) => r.controller && r.uid === uid && r.kind === KIND);
}

/** Identity-bearing fields a Certificate may carry: any not in the desired spec is drift. */
const SUBJECT_FIELDS = [
  'commonName',
  'dnsNames',
  'ipAddresses',
  'emailAddresses',
  'otherNames',
  'subject',
  'literalSubject',
  'isCA',
  'keystores',
  'nameConstraints',
] as const;

/**
 * What differs between a live Certificate and the desired one (empty: up to date). Compares the
 * fields the operator sets, both ways for the ones that carry an identity (a SAN added by hand is
 * drift: the certificate must name the card's identity and nothing else); fields cert-manager or
 * its webhook default (e.g. privateKey.encoding when absent) are compared only when present.
 */
export function certificateDrift(
  live: CertificateObject,
  want: ReturnType<typeof desiredCertificate>,
): string[] {
  const drift: string[] = [];
  const spec = live.spec ?? {};
  const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
  for (const field of ['secretName', 'uris', 'usages', 'duration', 'renewBefore'] as const)
    if (!same(spec[field], want.spec[field])) drift.push(field);
  const issuer = (spec.issuerRef ?? {}) as Record<string, unknown>;
  const wantIssuer = want.spec.issuerRef as Record<string, unknown>;
  if (
    issuer.name !== wantIssuer.name ||
    (issuer.kind ?? 'Issuer') !== wantIssuer.kind ||
    (issuer.group ?? CERT_MANAGER_GROUP) !== wantIssuer.group
  )
    drift.push('issuerRef');
  const key = (spec.privateKey ?? {}) as Record<string, unknown>;
  const wantKey = want.spec.privateKey as Record<string, unknown>;
  for (const field of ['algorithm', 'size', 'rotationPolicy'] as const)
    if (key[field] !== wantKey[field]) drift.push(`privateKey.${field}`);
  if (key.encoding !== undefined && key.encoding !== wantKey.encoding) drift.push('privateKey.encoding');
  for (const field of SUBJECT_FIELDS) if (spec[field] !== undefined) drift.push(field);
  const labels = (spec.secretTemplate as { labels?: Record<string, string> } | undefined)?.labels ?? {};
  const wantLabels = (want.spec.secretTemplate as { labels: Record<string, string> }).labels;
  if (Object.entries(wantLabels).some(([k, v]) => labels[k] !== v)) drift.push('secretTemplate.labels');
  const liveLabels = live.metadata.labels ?? {};
  if (Object.entries(want.metadata.labels ?? {}).some(([k, v]) => liveLabels[k] !== v))
    drift.push('metadata.labels');
  return drift;
}

/** The state of an owned Certificate, from its Ready condition (cert-manager's own words). */
export function issuanceFromCertificate(cert: CertificateObject, identity: string): IssuanceState {
  const ready = cert.status?.conditions?.find((c) => c.type === 'Ready');
  const issuer = (cert.spec?.issuerRef ?? {}) as { name?: string; kind?: string };
  const where = `Certificate "${cert.metadata.name}" for ${identity} from ${issuer.kind ?? 'Issuer'} "${issuer.name ?? ''}"`;
  if (ready?.status === 'True')
    return { sign: true, reason: 'CertificatePending', message: `${where} is issued`, identity };
  const why = ready
    ? `${ready.reason ?? 'NotReady'}: ${(ready.message ?? '').slice(0, 300)}`
    : 'no status yet';
  return {
    sign: true,
    reason: 'CertificatePending',
    message: `${where} is not issued yet (${why}); check it with kubectl describe certificate ${cert.metadata.name}`,
    identity,
  };
}
