/**
 * The signing identity of an agent, for a certificate the operator requests from cert-manager
 * (in the style of cert-manager's ingress-shim): a URI SAN built from a template the
 * administrator sets, never from anything a namespace user writes freely. The default is a
 * SPIFFE ID (SPIFFE ID specification section 2: `spiffe://<trust domain>/<path>`), in the
 * Kubernetes form used by Istio and SPIRE: `spiffe://{trustDomain}/ns/{namespace}/sa/{serviceAccount}`.
 * The namespace always comes from the object, and the service account from the workload the card
 * describes (operator/controllers/controllers/issuer/plan.ts serviceAccountOf), never from a field of the AgentCard. The
 * Certificate itself is built by operator/controllers/issuer/plan.ts.
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
