/**
 * The signing identity of an agent, for a certificate the operator requests from cert-manager
 * (in the style of cert-manager's ingress-shim): a URI SAN built from a template the
 * administrator sets, never from anything a namespace user writes freely. The default is a
 * SPIFFE ID (SPIFFE ID specification section 2: `spiffe://<trust domain>/<path>`), in the
 * Kubernetes form used by Istio and SPIRE: `spiffe://{trustDomain}/ns/{namespace}/sa/{serviceAccount}`.
 * The namespace always comes from the object; only the service account name is the user's, and
 * it names an account in that namespace only.
 */
import { UserError } from '../errors.ts';

export const DEFAULT_IDENTITY_TEMPLATE = 'spiffe://{trustDomain}/ns/{namespace}/sa/{serviceAccount}';
export const DEFAULT_TRUST_DOMAIN = 'cluster.local';

const VARIABLES = ['trustDomain', 'namespace', 'serviceAccount', 'name'] as const;
type Variable = (typeof VARIABLES)[number];

/** A trust domain: lower-case letters, digits, dots, dashes and underscores (SPIFFE ID section 2.1). */
const TRUST_DOMAIN = /^[a-z0-9._-]{1,255}$/;
/** A Kubernetes object name segment (DNS subdomain). */
const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/**
 * Checks an administrator's template once, at start-up: only known variables, the namespace in
 * it (so no two namespaces can claim one identity), and a URI.
 */
export function checkIdentityTemplate(template: string, trustDomain: string): void {
  if (!TRUST_DOMAIN.test(trustDomain))
    throw new UserError(`the trust domain "${trustDomain.slice(0, 64)}" is not a valid SPIFFE trust domain`);
  for (const m of template.matchAll(/\{([^}]*)\}/g)) {
    if (!(VARIABLES as readonly string[]).includes(m[1]!))
      throw new UserError(
        `the identity template has an unknown variable {${m[1]}} (known: ${VARIABLES.map((v) => `{${v}}`).join(', ')})`,
      );
  }
  if (!template.includes('{namespace}'))
    throw new UserError(
      'the identity template must contain {namespace}: an identity must never be claimable from two namespaces',
    );
  const sample = renderIdentity(template, {
    trustDomain,
    namespace: 'ns',
    serviceAccount: 'sa',
    name: 'card',
  });
  if (!URL.canParse(sample))
    throw new UserError(`the identity template does not give a URI (e.g. "${sample}")`);
}

/** The identity URI for one agent; every value is checked to be a plain name (no "/" or ".." injection). */
export function renderIdentity(template: string, values: Record<Variable, string>): string {
  for (const v of VARIABLES) {
    const value = values[v];
    const ok = v === 'trustDomain' ? TRUST_DOMAIN.test(value) : NAME.test(value) && !value.includes('..');
    if (!ok) throw new UserError(`${v} "${value.slice(0, 64)}" cannot be put in an identity`);
  }
  return template.replace(/\{(trustDomain|namespace|serviceAccount|name)\}/g, (_m, v: Variable) => values[v]);
}

/**
 * The cert-manager Certificate (cert-manager.io/v1) the operator would own for one card's signing
 * key: URI SAN only (no common name, as SPIFFE X.509-SVIDs), the digital signature usage, a new
 * ECDSA P-256 key on each renewal, and the Secret labelled so its renewal re-signs at once.
 */
export function desiredSigningCertificate(opts: {
  namespace: string;
  secretName: string;
  identity: string;
  issuerRef: { name: string; kind: string; group: string };
  owner: { apiVersion: string; kind: string; name: string; uid: string };
  secretLabels: Record<string, string>;
}): Record<string, unknown> {
  return {
    apiVersion: 'cert-manager.io/v1',
    kind: 'Certificate',
    metadata: {
      name: opts.secretName,
      namespace: opts.namespace,
      ownerReferences: [{ ...opts.owner, controller: true, blockOwnerDeletion: true }],
    },
    spec: {
      secretName: opts.secretName,
      issuerRef: opts.issuerRef,
      uris: [opts.identity],
      usages: ['digital signature'],
      privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
      secretTemplate: { labels: opts.secretLabels },
    },
  };
}
